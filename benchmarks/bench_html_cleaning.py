"""How well HTML conversion keeps a page's content and drops its furniture, on saved pages of a real site.

    python -m benchmarks.bench_html_cleaning --pages DIR [--main XPATH] [--furniture XPATH] [--limit N]

For every ``*.html`` under DIR that has a main-content element (`--main`), the page's text pieces
(paragraphs, list items, headings, table cells, code blocks) are split into *content* (inside the main
element) and *furniture* (inside `--furniture`: navigation, sidebars, footers, dialogs — pieces whose
text also occurs in the main element are not counted). Three conversions are compared:

- ``trafilatura``: Haystack's `HTMLToDocument` alone (trafilatura, Markdown output, recall-favouring);
- ``structure``: `html_to_markdown(main_content=False)`: the structural converter with page furniture
  marked in the markup (``<nav>``, ARIA landmarks, header/footer/aside outside ``<main>``) left out;
- ``combined``: `html_to_markdown()`, the default: the structure, with trafilatura deciding about the
  blocks outside the main element.

Printed per conversion: the share of furniture pieces whose words appear in the output (lower is
better), the share of content pieces that appear (higher is better), the share of the main element's
headings written as ``#`` headings, and the mean time per page. Words are compared lower-cased,
punctuation and Markdown marks ignored. The pages are data: keep them outside the repository (the
figures in ``docs/formats.md`` name the site, commit and how to rebuild the folder).
"""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAIN = '//main | //*[@role="main"]'
FURNITURE = (
    '//nav | //footer | //aside | //*[@role="navigation" or @role="complementary" or @role="dialog" or '
    '@role="search" or @role="contentinfo" or @role="banner"] | //div[@class="footer"]'
)
_PIECES = ("p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "pre")
_FURNITURE_PIECES = (*_PIECES, "a", "button", "span", "label")


def words(text: str) -> str:
    """Lower-cased words joined by single spaces, padded (so ``" a b "`` in ``words(x)`` is a word match)."""
    return " " + " ".join(re.findall(r"[^\W_]+", text.lower())) + " "


def pieces(nodes: list[Any], tags: tuple[str, ...]) -> set[str]:
    """The distinct texts (as `words`, at least 3 characters) of elements with `tags` under `nodes`."""
    found = set()
    for node in nodes:
        for element in node.iter(*tags):
            text = words(element.text_content())
            if len(text.strip()) >= 3:
                found.add(text)
    return found


def conversions() -> dict[str, Callable[[str], str]]:
    """The three conversions compared (see the module docstring)."""
    from haystack.components.converters import HTMLToDocument
    from haystack.dataclasses import ByteStream

    from haygraph.retrieval.formats.html import html_to_markdown

    alone = HTMLToDocument(
        extraction_kwargs={
            "output_format": "markdown",
            "include_tables": True,
            "include_formatting": True,
            "favor_recall": True,
            "include_comments": False,
        },
        encoding="utf-8",
    )

    def trafilatura(html: str) -> str:
        documents = alone.run(sources=[ByteStream(html.encode("utf-8"))])["documents"]
        return documents[0].content or "" if documents else ""

    return {
        "trafilatura": trafilatura,
        "structure": lambda html: html_to_markdown(html, main_content=False),
        "combined": html_to_markdown,
    }


def measure(pages: list[Path], main: str, furniture: str) -> dict[str, dict[str, float]]:
    """Furniture leaked, content kept, headings kept and ms per page, for each conversion."""
    from lxml import html as lxml_html

    totals = {name: [0, 0, 0, 0, 0, 0, 0.0] for name in conversions()}
    convert = conversions()
    counted = 0
    for path in pages:
        raw = path.read_text(encoding="utf-8", errors="replace")
        tree = lxml_html.fromstring(raw)
        regions = tree.xpath(main)
        if not regions:
            continue
        counted += 1
        main_text = " ".join(words(r.text_content()) for r in regions)
        content = pieces(regions, _PIECES)
        headings = pieces(regions, _PIECES[2:8])
        chrome = {t for t in pieces(tree.xpath(furniture), _FURNITURE_PIECES) if t not in main_text}
        for name, function in convert.items():
            start = time.perf_counter()
            output = function(raw)
            totals[name][6] += time.perf_counter() - start
            found = words(output)
            heading_lines = words("\n".join(line for line in output.splitlines() if line.startswith("#")))
            totals[name][0] += sum(t in found for t in chrome)
            totals[name][1] += len(chrome)
            totals[name][2] += sum(t in found for t in content)
            totals[name][3] += len(content)
            totals[name][4] += sum(t in heading_lines for t in headings)
            totals[name][5] += len(headings)
    return {
        name: {
            "pages": counted,
            "furniture_leaked": t[0] / max(t[1], 1),
            "furniture_pieces": t[1],
            "content_kept": t[2] / max(t[3], 1),
            "content_pieces": t[3],
            "headings_kept": t[4] / max(t[5], 1),
            "ms_per_page": 1000 * t[6] / max(counted, 1),
        }
        for name, t in totals.items()
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures for the pages under ``--pages``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=Path, required=True, help="folder of saved .html pages")
    parser.add_argument(
        "--main", default=MAIN, help="XPath of the main content (default: <main> / role=main)"
    )
    parser.add_argument("--furniture", default=FURNITURE, help="XPath of navigation, sidebars, footers, ...")
    parser.add_argument("--limit", type=int, help="measure the first N pages only")
    args = parser.parse_args(argv)
    pages = sorted(
        p for p in args.pages.rglob("*.html") if p.name not in {"404.html", "search.html", "genindex.html"}
    )
    results = measure(pages[: args.limit] if args.limit else pages, args.main, args.furniture)
    print(f"{args.pages}: {next(iter(results.values()))['pages']} pages with a main element")
    print("| conversion | furniture leaked | content kept | headings as headings | ms / page |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        print(
            f"| {name} | {r['furniture_leaked']:.3f} (of {r['furniture_pieces']}) | {r['content_kept']:.3f} "
            f"(of {r['content_pieces']}) | {r['headings_kept']:.3f} | {r['ms_per_page']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
