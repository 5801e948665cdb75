"""HTML -> Markdown-like text: headings, paragraphs, lists, tables and code blocks, and only the content.

Two steps (`html_to_markdown`):

1. **Structure** (`_HTMLToMarkdown`, a stdlib `html.parser` converter): ``#`` headings, paragraph
   blocks, ``-`` / ``1.`` list items, tables as Markdown tables (`markdown_table`; ``colspan`` and
   ``rowspan`` cells repeat their text), ``<pre>`` as fenced code. What is never content gives no
   words: ``<script>``, ``<style>``, ``<template>``, ``<noscript>``, ``<iframe>``, ``<svg>``,
   ``<object>``, the ``<head>``, comments, form controls, ``<dialog>`` and a heading's permalink
   anchor (``<a class="headerlink">¶</a>``, Sphinx and MkDocs); and the page furniture that
   HTML marks as such — ``<nav>``, ARIA landmarks ``role="navigation|banner|contentinfo|search|..."``,
   and a ``<header>``, ``<footer>`` or ``<aside>`` that is not inside ``<main>``/``<article>``.
2. **Main content** (`main_content_filter`): trafilatura, through Haystack's `HTMLToDocument`, reads
   the same page and keeps its main text — dropping what the markup does not mark (a ``<div
   class="footer">``, cookie banners, "related pages" boxes, a nav bar in plain ``<div>``s). Each
   block of step 1 (each list item, each table row) is kept when trafilatura kept its words; a
   heading is kept when some text of its section is. trafilatura alone is not used as the
   converter: on the handbook's own office guide it drops every heading (and, without
   ``favor_recall``, every list), which loses the heading paths chunks are cited by; measured on 96
   saved pages of a documentation site (``benchmarks/bench_html_cleaning.py``, figures in
   ``docs/formats.md``), the combination keeps the content of both and the boilerplate of neither.
   When trafilatura finds no main text (a short fragment, a page that is all table), or on a page that
   marks no main content keeps less than `MIN_MAIN_SHARE` of its words (a listing of links), every
   block of step 1 is kept.
"""

from __future__ import annotations

import logging
import re
from html.parser import HTMLParser
from typing import Any

from haygraph.retrieval.formats.tables import markdown_table

__all__ = ["html_blocks", "html_to_markdown", "main_content_filter"]

logger = logging.getLogger(__name__)

_SKIP_TAGS = frozenset(
    {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "dialog"}
    | {"nav", "button", "select", "textarea", "math"}
)
"""Elements whose whole subtree gives no words."""
_VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_FURNITURE_ROLES = frozenset(
    {"navigation", "banner", "contentinfo", "search", "dialog", "alertdialog", "menu", "menubar"}
    | {"toolbar", "tooltip"}
)
"""ARIA landmark and widget roles of page furniture: the element and its subtree give no words."""
_CONTENT_TAGS = frozenset({"main", "article"})
_SCOPED_FURNITURE = frozenset({"header", "footer", "aside"})
"""Page furniture unless inside `_CONTENT_TAGS` (then an article's own header, footer or aside)."""
_BLOCK_TAGS = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "aside", "blockquote", "dl"}
    | {"dt", "dd", "figure", "figcaption", "form", "address", "hr", "body", "html", "center", "details"}
    | {"summary"}
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_BREAK = "\ue000"  # private-use character standing for <br> while whitespace is collapsed


class _HTMLToMarkdown(HTMLParser):
    """Collect the text of an HTML page as Markdown-like blocks (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[str] = []
        self.in_main: list[bool] = []  # per block: inside <main>, <article> or role="main"
        self._buf: list[str] = []
        self._skip_tag: str | None = None  # the element being skipped, with its own nesting depth
        self._skip_depth = 0
        self._open: dict[str, int] = {}  # open elements per tag name
        self._content: list[tuple[str, int]] = []  # open <main>/<article>/role=main: (tag, its depth)
        self._heading = 0
        self._lists: list[list[Any]] = []  # [tag, next number]
        self._list_lines: list[str] = []
        self._rows: list[list[str]] | None = None
        self._spans: dict[int, tuple[int, str]] = {}  # column -> (rows still covered, text) from rowspan
        self._cell: list[str] | None = None
        self._cell_span = (1, 1)
        self._nested_tables = 0
        self._pre: list[str] | None = None

    def _emit(self, block: str) -> None:
        self.blocks.append(block)
        self.in_main.append(bool(self._content))

    def _text(self) -> str:
        text = re.sub(r"\s+", " ", "".join(self._buf)).replace(f" {_BREAK} ", _BREAK)
        self._buf.clear()
        return text.replace(_BREAK, "\n").strip()

    def _flush_paragraph(self) -> None:
        text = self._text()
        if text and self._lists:
            self._flush_item(text)
        elif text:
            self._emit(text)

    def _flush_item(self, text: str | None = None) -> None:
        text = self._text() if text is None else text
        if text and self._lists:
            kind = self._lists[-1]
            marker = f"{kind[1]}." if kind[0] == "ol" else "-"
            kind[1] += 1
            indent = "  " * (len(self._lists) - 1)
            self._list_lines.append(f"{indent}{marker} {text.replace(chr(10), ' ')}")

    def _furniture(self, tag: str, attrs: dict[str, str | None]) -> bool:
        if tag in _SKIP_TAGS:
            return True
        if tag == "a" and "headerlink" in (attrs.get("class") or "").split():
            return True  # Sphinx's and MkDocs' permalink anchor after a heading: its text is "¶" or "#"
        role = (attrs.get("role") or "").strip().lower()
        if role in _FURNITURE_ROLES:
            return True
        scoped = tag in _SCOPED_FURNITURE or role == "complementary"
        return scoped and not self._content

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Open a tag: skip furniture, or start a new block, list, table row or cell as needed."""
        if self._skip_tag is not None:
            self._skip_depth += tag == self._skip_tag
            return
        named = dict(attrs)
        if tag not in _VOID_TAGS:
            if self._furniture(tag, named):
                self._skip_tag, self._skip_depth = tag, 1
                return
            self._open[tag] = self._open.get(tag, 0) + 1
            if tag in _CONTENT_TAGS or (named.get("role") or "").strip().lower() == "main":
                self._content.append((tag, self._open[tag]))
        if self._pre is not None:
            return
        if self._rows is not None:
            self._table_start(tag, named)
        elif tag in _HEADINGS:
            self._flush_paragraph()
            self._heading = int(tag[1])
        elif tag == "br":
            self._buf.append(_BREAK)
        elif tag in {"ul", "ol"}:
            self._flush_item() if self._lists else self._flush_paragraph()
            self._lists.append([tag, 1])
        elif tag == "li":
            self._flush_item()
        elif tag == "table":
            self._flush_item() if self._lists else self._flush_paragraph()
            self._rows, self._spans = [], {}
        elif tag == "pre":
            self._flush_paragraph()
            self._pre = []
        elif tag in _BLOCK_TAGS:
            self._flush_item() if self._lists else self._flush_paragraph()

    def _table_start(self, tag: str, attrs: dict[str, str | None]) -> None:
        """A tag inside a table: rows and cells; a nested table's text goes into the outer cell."""
        if tag == "table":
            self._nested_tables += 1
        elif self._nested_tables:
            if self._cell is not None and tag in {"td", "th", "br", "p", "li", "tr"}:
                self._cell.append(" ")
        elif tag == "tr":
            self._close_cell()
            self._rows.append([])  # type: ignore[union-attr]
            self._fill_spans()
        elif tag in {"td", "th"}:
            self._close_cell()
            if not self._rows:
                self._rows.append([])  # type: ignore[union-attr]
            self._cell = []
            self._cell_span = (_span(attrs.get("rowspan")), _span(attrs.get("colspan")))
        elif self._cell is not None and tag in {"br", "p", "li", "div"}:
            self._cell.append(" ")

    def _fill_spans(self) -> None:
        """Put the cells that rowspans from rows above carry into the new row's leading columns."""
        row = self._rows[-1]  # type: ignore[index]
        while len(row) in self._spans:
            left, text = self._spans[len(row)]
            if left > 1:
                self._spans[len(row)] = (left - 1, text)
            else:
                del self._spans[len(row)]
            row.append(text)

    def _close_cell(self) -> None:
        if self._cell is None or not self._rows:
            return
        text = re.sub(r"\s+", " ", "".join(self._cell).replace(_BREAK, " ")).strip()
        rows, cols = self._cell_span
        row = self._rows[-1]
        for _ in range(cols):
            if rows > 1:
                self._spans[len(row)] = (rows - 1, text)
            row.append(text)
            self._fill_spans()
        self._cell = None

    def handle_endtag(self, tag: str) -> None:
        """Close a tag: emit the heading, paragraph, list, row, table or code block it ended."""
        if self._skip_tag is not None:
            self._skip_depth -= tag == self._skip_tag
            if self._skip_depth <= 0:
                self._skip_tag = None
            return
        self._close(tag)
        if self._open.get(tag):
            if self._content and self._content[-1] == (tag, self._open[tag]):
                self._content.pop()
            self._open[tag] -= 1

    def _close(self, tag: str) -> None:
        if self._pre is not None:
            if tag == "pre":
                code = "".join(self._pre).strip("\n")
                self._pre = None
                if code.strip():
                    self._emit(f"```\n{code}\n```")
        elif self._rows is not None:
            self._table_end(tag)
        elif tag in _HEADINGS and self._heading:
            text = self._text().replace("\n", " ")
            if text:
                self._emit(f"{'#' * self._heading} {text}")
            self._heading = 0
        elif tag == "li":
            self._flush_item()
        elif tag in {"ul", "ol"} and self._lists:
            self._flush_item()
            self._lists.pop()
            if not self._lists and self._list_lines:
                self._emit("\n".join(self._list_lines))
                self._list_lines = []
        elif tag in _BLOCK_TAGS:
            self._flush_item() if self._lists else self._flush_paragraph()

    def _table_end(self, tag: str) -> None:
        if tag == "table" and self._nested_tables:
            self._nested_tables -= 1
        elif self._nested_tables:
            return
        elif tag in {"td", "th"}:
            self._close_cell()
        elif tag == "table":
            self._close_cell()
            rows, self._rows = self._rows or [], None
            table = markdown_table(rows)
            if table:
                self._emit(table)

    def handle_data(self, data: str) -> None:
        """Collect text into the current cell, code block or paragraph."""
        if self._skip_tag is not None:
            return
        if self._pre is not None:
            self._pre.append(data)
        elif self._cell is not None:
            self._cell.append(data)
        elif self._rows is None:
            self._buf.append(data)

    def close(self) -> None:
        """Finish parsing and flush what is still open."""
        super().close()
        if self._rows is not None:
            self._table_end("table")
        self._flush_paragraph()
        if self._list_lines:
            self._emit("\n".join(self._list_lines))


def _span(value: str | None) -> int:
    """A ``rowspan``/``colspan`` value: a number from 1 to 100 (a bad or huge one counts as 1 or 100)."""
    try:
        return min(max(int(str(value).strip()), 1), 100)
    except ValueError:
        return 1


def html_blocks(html: str) -> tuple[list[str], list[bool]]:
    """The Markdown-like blocks of a page (step 1 of the module docstring), furniture left out.

    :returns: The blocks, and for each whether it stands inside ``<main>``, ``<article>`` or an
        element with ``role="main"``.
    """
    parser = _HTMLToMarkdown()
    parser.feed(html)
    parser.close()
    return parser.blocks, parser.in_main


_CJK = re.compile(r"([\u3400-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af])")
_WORDS = re.compile(r"[^\W_]+")


def _words(text: str) -> str:
    """`text` as its words, lower-cased and space-separated (each CJK character a word), padded."""
    return " " + " ".join(_WORDS.findall(_CJK.sub(r" \1 ", text).lower())) + " "


def _kept(unit: str, reference: str) -> bool:
    """Whether the words of one unit (a paragraph, list item or table row) occur in `reference`."""
    words = _words(unit)
    return words.strip() == "" or words in reference


def main_content_filter(blocks: list[str], main_text: str, in_main: list[bool] | None = None) -> list[str]:
    """Keep the blocks (items, rows) whose words are in `main_text`, and the headings of kept sections.

    `main_text` is trafilatura's main text of the same page. A list keeps the items found there, a
    table the rows found there (with its header when any row is kept), a paragraph is kept or dropped
    whole; code blocks, and every block marked in `in_main` (inside ``<main>``, ``<article>`` or
    ``role="main"``: the page says itself what its content is), are always kept. Another heading is
    kept when a block before the next heading of the same or a higher level is kept.
    """
    reference = _words(main_text)
    marked = in_main if in_main is not None else [False] * len(blocks)
    kept: list[str | None] = []
    for block, inside in zip(blocks, marked, strict=True):
        if block.startswith("#") or inside or block.startswith("```"):
            kept.append(block)  # code is content wherever it stands (trafilatura drops some of it)
        elif block.startswith("|"):
            lines = block.split("\n")
            rows = [line for line in lines[2:] if _kept(line, reference)]
            kept.append("\n".join([*lines[:2], *rows]) if rows else None)
        elif block.startswith(("- ", "1. ")):
            items = [line for line in block.split("\n") if _kept(line.lstrip(" -0123456789."), reference)]
            kept.append("\n".join(items) if items else None)
        else:
            kept.append(block if _kept(block, reference) else None)
    out: list[str] = []
    for i, found in enumerate(kept):
        if found is None:
            continue
        if found.startswith("#") and not marked[i]:
            level = len(found) - len(found.lstrip("#"))
            if not _section_has_text(kept[i + 1 :], level):
                continue
        out.append(found)
    return out


def _section_has_text(following: list[str | None], level: int) -> bool:
    for block in following:
        if block is not None and block.startswith("#"):
            if len(block) - len(block.lstrip("#")) <= level:
                return False
            continue
        if block is not None:
            return True
    return False


class _NoMainText(logging.Filter):
    """Drop `HTMLToDocument`'s warning that a page has no main text: here every block is then kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "No text could be extracted" not in record.getMessage()


_QUIET = _NoMainText()


def _main_text(html: str) -> str | None:
    """Trafilatura's main text of the page, through Haystack's `HTMLToDocument` (None: none found)."""
    from haystack.components.converters import HTMLToDocument
    from haystack.dataclasses import ByteStream

    logging.getLogger("haystack.components.converters.html").addFilter(_QUIET)  # once: filters are a set
    converter = HTMLToDocument(
        extraction_kwargs={"favor_recall": True, "include_tables": True, "include_comments": False},
        encoding="utf-8",
    )
    documents = converter.run(sources=[ByteStream(html.encode("utf-8"))])["documents"]
    return documents[0].content if documents and documents[0].content else None


def html_to_markdown(html: str, *, main_content: bool = True) -> str:
    """Convert HTML to Markdown-like text: ``#`` headings, paragraph blocks, ``-`` items, ``| a |`` rows.

    :param html: The page.
    :param main_content: Keep only what trafilatura finds to be the page's main content
        (`main_content_filter`); False keeps every block that is not page furniture.
    """
    blocks, in_main = html_blocks(html)
    if main_content and blocks and not all(in_main):
        main = _main_text(html)
        if main is not None:
            filtered = main_content_filter(blocks, main, in_main)
            little = not any(in_main) and _word_count(filtered) < MIN_MAIN_SHARE * _word_count(blocks)
            if not filtered or little:
                logger.debug("trafilatura's main text matched little or nothing; keeping every block")
            else:
                blocks = filtered
    return "\n\n".join(blocks)


MIN_MAIN_SHARE = 0.2
"""On a page that marks no main content, the share of its words trafilatura must keep for its choice to
stand; below it (an index or gallery of links, which trafilatura reads as boilerplate: the Kaitai
format gallery kept 11% — its 27 section headings lost), every block of step 1 is kept, as when it keeps
none. Of the 14 pages without ``<main>`` at hand (the Cozy and PDAL sites, other saved pages, the
handbook's office guide), only that gallery falls below it; the next kept 67%."""


def _word_count(blocks: list[str]) -> int:
    return len(_words("\n".join(blocks)).split())
