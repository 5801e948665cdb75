"""PDF -> one text per page: paragraphs, ruled tables as Markdown tables, no running headers or footers.

- **Text** comes from pypdfium2 (PDFium, C++: ~3 ms a page here), line by line with each line's
  position and font size, so paragraphs are told apart by the space above them (a gap of more than
  1.5 times the page's usual line spacing starts a new paragraph: a blank line, as the splitter
  expects) and headings by their size (`heading_levels`: short lines set larger than the body text
  become ``#`` headings, the largest size level 1), so chunks get heading paths as in Markdown.
- **Ruled tables** — cells drawn with lines — are found by pdfplumber's table finder, on the pages
  that draw at least `MIN_TABLE_PATHS` path objects (pdfplumber reads a page in pure Python, ~100 ms
  here, so a page without lines is never given to it). Such a page is read by pdfplumber: its text
  outside the tables line by line, each table as a Markdown table (`markdown_table`) at its place,
  a merged cell's text repeated into the cells it covers.
- **Running headers, footers and page numbers** go: a line among the first or last
  `EDGE_LINES` lines of a page whose text, digits masked ("Page 3 of 9" and "Page 4 of 9" are one
  text), stands at the edge of at least `min(2, pages)` pages and 40% of them (`running_lines`).
- **Hyphenation** at line ends is joined: ``appli-`` + ``cation`` is ``application`` when the
  next line starts with a lower-case letter (and a soft hyphen always); a hyphen before an upper-case
  letter or a digit stays (``COVID-`` / ``19``).

Pages stay pages: the caller joins them with `join_pages`, so chunks cite their page and every offset
points into the cleaned text.
"""

from __future__ import annotations

import itertools
import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haygraph.retrieval.errors import UnsupportedFileError
from haygraph.retrieval.formats.tables import markdown_table

__all__ = [
    "EDGE_LINES",
    "HEADING_MAX_CHARS",
    "HEADING_RATIO",
    "MIN_TABLE_PATHS",
    "heading_levels",
    "join_hyphenated",
    "pdf_pages",
    "running_lines",
]

EDGE_LINES = 2
"""Lines at the top and at the bottom of a page that may be a running header, footer or page number."""
MIN_TABLE_PATHS = 4
HEADING_RATIO = 1.15
"""A line set at least this many times the body's font size (and short) is a heading."""
HEADING_MAX_CHARS = 120
"""Longest line that can be a heading."""
"""Path objects (lines, rectangles) a page must draw before it is searched for ruled tables."""
_PARAGRAPH_GAP = 1.5
_DIGITS = re.compile(r"\d+")
_HYPHEN = re.compile(r"(?<=[^\W\d_])-\n(?=[a-zß-ÿ])")
_SOFT_HYPHEN = re.compile("\u00ad\n?")


@dataclass(frozen=True)
class _Item:
    """A line of text, or a whole table, with its vertical place on the page (from the top)."""

    top: float
    bottom: float
    text: str
    table: bool = False
    size: float = 0.0
    """The font size of the line's first character (0 for a table)."""


def pdf_pages(path: Path) -> list[str]:
    """The cleaned text of each page of a PDF (see the module docstring).

    :raises UnsupportedFileError: pypdfium2 or pdfplumber is not installed (the message names the fix).
    """
    try:
        import pdfplumber  # noqa: F401 - checked here so the error names both packages
        import pypdfium2
        import pypdfium2.raw as pdfium_c
    except ImportError as exc:
        raise UnsupportedFileError(
            f"{path}: reading PDF files needs pypdfium2 and pdfplumber; "
            "install them with `pip install pypdfium2 pdfplumber`"
        ) from exc

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        pages: list[list[_Item]] = []
        ruled: list[int] = []
        for number in range(len(pdf)):
            page = pdf[number]
            paths = sum(1 for _ in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_PATH], max_depth=2))
            if paths >= MIN_TABLE_PATHS:
                ruled.append(number)
            pages.append(_pdfium_lines(page))
    finally:
        pdf.close()
    if ruled:
        for number, items in _plumber_pages(path, ruled).items():
            if any(item.table for item in items):
                pages[number] = items
    repeated = running_lines([[item.text for item in items if not item.table] for items in pages])
    kept = [_without_running(items, repeated) for items in pages]
    levels = heading_levels([(item.text, item.size) for items in kept for item in items if not item.table])
    return [join_hyphenated(_compose(items, levels)) for items in kept]


def heading_levels(lines: list[tuple[str, float]]) -> dict[float, int]:
    """``{font size: heading level}`` for the sizes of a document's headings.

    The body size is the size most characters are set in; a size at least `HEADING_RATIO` times it,
    found on some short line (at most `HEADING_MAX_CHARS` characters), is a heading size: the
    largest is level 1, the next level 2, and so on (at most 6 levels).
    """
    weight: Counter[float] = Counter()
    for text, size in lines:
        weight[size] += len(text)
    if not weight:
        return {}
    body = weight.most_common(1)[0][0]
    sizes = sorted(
        {size for text, size in lines if size >= body * HEADING_RATIO and len(text) <= HEADING_MAX_CHARS},
        reverse=True,
    )
    return {size: level for level, size in enumerate(sizes[:6], start=1)}


def _without_running(items: list[_Item], repeated: set[str]) -> list[_Item]:
    """The page's items less its edge lines (first and last `EDGE_LINES` text lines) found in `repeated`."""
    lines = [i for i, item in enumerate(items) if not item.table]
    edges = set(lines[:EDGE_LINES] + lines[-EDGE_LINES:])
    return [item for i, item in enumerate(items) if i not in edges or _mask(item.text) not in repeated]


def _pdfium_lines(page: Any) -> list[_Item]:
    """A page's text lines with their tops, bottoms and font sizes (from PDFium's text page)."""
    import pypdfium2.raw as pdfium_c

    textpage = page.get_textpage()
    height = page.get_height()
    text = textpage.get_text_range()
    items: list[_Item] = []
    position = 0
    for line in re.split(r"(\r\n|\n|\r)", text):
        if line in {"\r\n", "\n", "\r"}:
            position += len(line)
            continue
        stripped = line.strip()
        if stripped:
            first = position + len(line) - len(line.lstrip())
            _, bottom, _, top = textpage.get_charbox(first)
            size = pdfium_c.FPDFText_GetFontSize(textpage.raw, first)
            items.append(_Item(height - top, height - bottom, stripped, size=round(size, 1)))
        position += len(line)
    textpage.close()
    return items


def _plumber_pages(path: Path, numbers: list[int]) -> dict[int, list[_Item]]:
    """Pages read by pdfplumber: text lines outside the ruled tables, and each table as one item."""
    import pdfplumber

    out: dict[int, list[_Item]] = {}
    with pdfplumber.open(str(path)) as pdf:
        for number in numbers:
            page = pdf.pages[number]
            tables = [t for t in page.find_tables() if len(t.rows) >= 2 and len(t.columns) >= 2]
            if not tables:
                continue
            boxes = [t.bbox for t in tables]

            def outside(obj: dict[str, Any], boxes: list[Any] = boxes) -> bool:
                if obj.get("object_type") != "char":
                    return True
                cx, cy = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
                return not any(x0 <= cx <= x1 and top <= cy <= bottom for x0, top, x1, bottom in boxes)

            lines = page.filter(outside).extract_text_lines(strip=True)
            items = [
                _Item(line["top"], line["bottom"], line["text"], size=round(line["chars"][0]["size"], 1))
                for line in lines
                if line["text"] and line["chars"]
            ]
            for table in tables:
                rendered = markdown_table(_filled(table.extract()))
                if rendered:
                    items.append(_Item(table.bbox[1], table.bbox[3], rendered, table=True))
            out[number] = sorted(items, key=lambda item: item.top)
    return out


def _filled(rows: list[list[str | None]]) -> list[list[str]]:
    """Pdfplumber's cells with a merged cell's text repeated (it gives None where a merge covers a cell)."""
    out: list[list[str]] = []
    for r, row in enumerate(rows):
        cells: list[str] = []
        for c, cell in enumerate(row):
            if cell is not None:
                cells.append(cell)
            elif c > 0:
                cells.append(cells[c - 1])  # covered by a cell merged across columns
            elif r > 0 and out[r - 1]:
                cells.append(out[r - 1][0])  # covered by a cell merged down the first column
            else:
                cells.append("")
        out.append(cells)
    return out


def _mask(text: str) -> str:
    return _DIGITS.sub("#", " ".join(text.lower().split()))


def running_lines(pages: list[list[str]], edge: int = EDGE_LINES) -> set[str]:
    """The masked texts (digits as ``#``) of lines standing at a page edge on enough pages to be furniture.

    A line counts when it is among the first or last `edge` lines of a page; it is furniture when its
    masked text does so on at least 2 pages and on 40% of the pages (so a header left off the first
    page, or on every other page, still counts). A one-page document has none.
    """
    if len(pages) < 2:
        return set()
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({_mask(line) for line in lines[:edge] + lines[-edge:] if line.strip()})
    needed = max(2, math.ceil(0.4 * len(pages)))
    return {text for text, count in seen.items() if count >= needed}


def _compose(items: list[_Item], levels: dict[float, int]) -> str:
    """A page's text: lines joined by line breaks, blank lines between paragraphs, tables and headings.

    A paragraph starts after a gap of more than `_PARAGRAPH_GAP` line spacings; a heading is a short line
    in a heading size (`levels`), written as a ``#`` heading of its level.
    """
    lines = [item for item in items if not item.table]
    gaps = [b.top - a.top for a, b in itertools.pairwise(lines) if b.top > a.top]
    spacing = statistics.median(gaps) if gaps else 0.0
    parts: list[str] = []
    previous: _Item | None = None
    previous_heading = False
    for item in items:
        level = 0 if item.table or len(item.text) > HEADING_MAX_CHARS else levels.get(item.size, 0)
        if previous is not None:
            new_block = (
                item.table
                or previous.table
                or level
                or previous_heading
                or (spacing > 0 and item.top - previous.top > _PARAGRAPH_GAP * spacing)
            )
            parts.append("\n\n" if new_block else "\n")
        parts.append(f"{'#' * level} {item.text}" if level else item.text)
        previous, previous_heading = item, bool(level)
    return "".join(parts)


def join_hyphenated(text: str) -> str:
    """Join words hyphenated at a line end ("appli-" + "cation" -> "application"; soft hyphens always)."""
    return _HYPHEN.sub("", _SOFT_HYPHEN.sub("", text))
