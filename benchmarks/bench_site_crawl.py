"""A documentation website indexed by URL, then re-synced: pages, speed, navigation leaked, what changed.

    python -m benchmarks.bench_site_crawl --site DIR [--start PATH] [--max-pages N] [--store DIR]

DIR (a saved copy of a documentation site, left untouched) is copied to a temporary folder and served
with ``python -m http.server`` on 127.0.0.1 (loopback allowed, as an operator would with
``HAYGRAPH_ALLOW_PRIVATE_HOSTS=1``), and ``KnowledgeBase.index_site`` crawls it from ``/<start>``
with no delay between requests. Printed:

1. **first run**: pages indexed, pages skipped and failed with why (grouped), chunks, seconds, pages/s
   (indexed pages over the whole run: crawl, conversion, embedding, save);
2. **navigation in chunks**: `bench_html_cleaning`'s measure on the stored chunks: for each indexed page
   that marks a main element, the furniture pieces (navigation, sidebars, footers: text not also in
   the main element) whose words appear in the page's chunks, and the content pieces that do;
3. **no-op re-sync**: the same URL again with nothing changed: pages answered 304 or with an equal
   hash, pages re-indexed (must be 0), and the time as a share of the first run's;
4. **edit / delete / add**: one page edited (a paragraph and a link to a new page added), one page
   deleted, the new page added; the re-sync's changed, new and removed pages must be exactly those.

The figures in ``docs/formats.md`` name the site copy and how to rebuild it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.bench_html_cleaning import _FURNITURE_PIECES, _PIECES, FURNITURE, MAIN, pieces, words


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _serve(root: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/", timeout=1).close()
            return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("http.server did not start")


def _reason(line: str) -> str:
    """The reason of a ``url: reason`` line, without URLs and numbers (for grouping)."""
    reason = line.split(": ", 1)[1] if ": " in line else line
    return " ".join(w for w in reason.split() if "://" not in w)[:80]


def _navigation(kb: Any, root: Path, base: str) -> dict[str, float]:
    """Furniture and content pieces of each indexed page found in its stored chunks (see the docstring)."""
    from lxml import html as lxml_html

    texts: dict[str, list[str]] = {}
    for doc in kb.store.documents:
        texts.setdefault(str(doc.meta.get("source_id")), []).append(doc.content or "")
    leaked = chrome_total = kept = content_total = pages = 0
    for source_id, chunks in texts.items():
        path = root / urlsplit(source_id).path.lstrip("/")
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file() or path.suffix != ".html":
            continue
        tree = lxml_html.fromstring(path.read_text(encoding="utf-8", errors="replace"))
        regions = tree.xpath(MAIN)
        if not regions:
            continue
        pages += 1
        main_text = " ".join(words(r.text_content()) for r in regions)
        chrome = {t for t in pieces(tree.xpath(FURNITURE), _FURNITURE_PIECES) if t not in main_text}
        content = pieces(regions, _PIECES)
        found = words(" ".join(chunks))
        leaked += sum(t in found for t in chrome)
        chrome_total += len(chrome)
        kept += sum(t in found for t in content)
        content_total += len(content)
    return {
        "pages": pages,
        "furniture_leaked": leaked / max(chrome_total, 1),
        "furniture_pieces": chrome_total,
        "content_kept": kept / max(content_total, 1),
        "content_pieces": content_total,
    }


def _print_site(label: str, report: Any) -> None:
    print(
        f"{label}: {len(report.new)} new, {len(report.changed)} changed, {len(report.unchanged)} unchanged "
        f"({report.not_modified} answered 304), {len(report.removed)} removed, "
        f"{len(report.skipped)} skipped, "
        f"{len(report.failed)} failed; {report.requests} requests; crawl {report.crawl_seconds:.1f} s, "
        f"all {report.seconds:.1f} s"
    )
    for what, lines in (("skipped", report.skipped), ("failed", report.failed)):
        for reason, count in Counter(_reason(line) for line in lines).most_common():
            print(f"  {what} {count}: {reason}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", required=True, help="folder holding a saved copy of a documentation site")
    parser.add_argument(
        "--start", default="index.html", help="start path under the site (default index.html)"
    )
    parser.add_argument("--max-pages", type=int, default=500)
    parser.add_argument("--store", help="store directory (default: a temporary one)")
    parser.add_argument(
        "--backend",
        default="onnx-int8",
        help="embedder backend (default onnx-int8, the English MiniLM: ~40x multilingual-e5-small's "
        "indexing speed here; e5-multilingual for a Chinese or mixed site)",
    )
    args = parser.parse_args(argv)

    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase
    from haygraph.retrieval.web_sources import CrawlSettings

    os.environ["HAYGRAPH_ALLOW_PRIVATE_HOSTS"] = "1"
    settings = CrawlSettings(delay=0, max_pages=args.max_pages)
    with tempfile.TemporaryDirectory(prefix="haygraph-site-") as tmp:
        root = Path(tmp) / "site"
        shutil.copytree(args.site, root, symlinks=True)
        store = Path(args.store) if args.store else Path(tmp) / "store"
        server, base = _serve(root)
        try:
            url = f"{base}/{args.start.lstrip('/')}"
            print(
                f"site {args.site} served at {base}; crawl from {url}, at most {args.max_pages} pages; "
                f"embedder backend {args.backend}, no embedding cache"
            )
            # the embedding cache off: the first run embeds every chunk, as a first run on a new site does
            config = RetrievalConfig().with_overrides(embedder={"backend": args.backend, "use_cache": False})
            kb = KnowledgeBase(config, store_dir=store)
            first = kb.index_site(url, settings=settings)
            _print_site("first run", first)
            chunks = first.index.chunks if first.index else 0
            print(
                f"  {len(first.new)} pages indexed -> {chunks} chunks in {first.seconds:.1f} s: "
                f"{len(first.new) / first.seconds:.2f} pages/s (crawl alone {first.crawl_seconds:.1f} s: "
                f"{first.requests / max(first.crawl_seconds, 1e-9):.0f} requests/s)"
            )
            nav = _navigation(kb, root, base)
            print(
                f"navigation in chunks ({nav['pages']} pages with a main element): furniture leaked "
                f"{nav['furniture_leaked']:.3f} of {nav['furniture_pieces']} pieces, content kept "
                f"{nav['content_kept']:.3f} of {nav['content_pieces']} pieces"
            )

            noop = kb.index_site(url, settings=settings)
            _print_site("no-op re-sync", noop)
            refetched = len(noop.new) + len(noop.changed)
            print(
                f"  re-indexed {refetched} pages; {noop.not_modified} answered 304, "
                f"{len(noop.unchanged) - noop.not_modified} equal hash; time {noop.seconds:.2f} s = "
                f"{noop.seconds / first.seconds:.1%} of the first run's"
            )

            pages = sorted(
                (u for u in first.new if u.endswith(".html") and u != url and not u.endswith("/index.html")),
                key=len,
            )
            edited_url, deleted_url = pages[0], pages[1]
            edited = root / urlsplit(edited_url).path.lstrip("/")
            deleted = root / urlsplit(deleted_url).path.lstrip("/")
            added = edited.parent / "haygraph-added-page.html"
            added.write_text(
                "<html><head><title>Added</title></head><body><div role='main'><h1>An added page</h1>"
                "<p>The benchmark added this page: the archive room is B12.</p></div></body></html>",
                encoding="utf-8",
            )
            html = edited.read_text(encoding="utf-8")
            marker = "</body>"
            edited.write_text(
                html.replace(
                    marker,
                    "<div role='main'><p>An edit: the meeting moved to Thursday. "
                    "<a href='haygraph-added-page.html'>added page</a></p></div>" + marker,
                    1,
                ),
                encoding="utf-8",
            )
            later = time.time() + 5  # http.server compares Last-Modified to the second
            os.utime(edited, (later, later))
            os.utime(added, (later, later))
            deleted.unlink()
            third = kb.index_site(url, settings=settings)
            _print_site("edit/delete/add re-sync", third)
            added_url = edited_url.rsplit("/", 1)[0] + "/haygraph-added-page.html"
            expected = ([edited_url], [added_url], [deleted_url])
            got = (third.changed, third.new, sorted(third.removed))
            print(f"  edited {edited_url}, deleted {deleted_url}, added {added_url}")
            print(
                f"  changed {third.changed}, new {third.new}, removed {third.removed}: "
                f"{'exactly those three' if got == expected else 'NOT exactly those three'}"
            )
            return 0 if got == expected and refetched == 0 else 1
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
