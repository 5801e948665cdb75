"""Spreadsheets (``.xlsx``) and ``.csv`` files -> Markdown tables with their header row.

Written on openpyxl and the `csv` module instead of Haystack's `XLSXToDocument` / `CSVToDocument`:
those write a sheet with spreadsheet coordinates (an ``A, B, C`` header and row numbers), take the
first row as it comes (a title line above the table becomes the header), leave a merged cell's other
positions empty, and give a CSV file back as raw CSV text. Here:

- each sheet is a page whose heading is the sheet's name (``# Rooms``);
- the header row is found even below a title row or blank rows (`header_index`); rows above it stay
  as text lines under the heading;
- merged cells repeat their value in every cell they cover;
- empty rows and columns go (a sheet's margins, spacer columns, trailing blank rows);
- values are written as a reader sees them: whole numbers without ``.0``, dates without a midnight
  time, percentages as ``15%``, formulas as their last computed value.

A sheet too long or too wide for one chunk is split by the splitter between rows, each part with the
header (`haygraph.retrieval.splitter`). Values are always read in openpyxl's streaming mode (only
the cells a file stores); merged cells need its full mode, which holds every cell as an object (about
50 times the file's size in memory), so workbooks above `MERGED_CELLS_MAX_BYTES` are read without.
"""

from __future__ import annotations

import csv
import datetime
import io
from pathlib import Path
from typing import Any

from haygraph.retrieval.formats.tables import clean_rows, markdown_table, split_title_rows

__all__ = ["MERGED_CELLS_MAX_BYTES", "csv_to_markdown", "sheet_markdown", "xlsx_pages"]

MERGED_CELLS_MAX_BYTES = 10 * 1024 * 1024
"""Largest ``.xlsx`` read in full (merged cells repeated); a bigger one is streamed."""


def cell_value(value: Any, number_format: str = "General") -> str:
    """A cell value as a reader sees it (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, datetime.datetime):
        return value.date().isoformat() if value.time() == datetime.time(0) else value.isoformat(" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, float):
        if "%" in number_format:
            return f"{round(value * 100, 10):g}%"
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, int) and "%" in number_format:
        return f"{value * 100}%"
    return str(value)


def sheet_markdown(name: str, rows: list[list[str]]) -> str:
    """One sheet as a page: ``# name``, the lines above its header row, then its Markdown table."""
    cleaned = clean_rows(rows)
    lines, table_rows = split_title_rows(cleaned)
    blocks = [f"# {name.strip()}"] if name.strip() else []
    blocks.extend(line for line in lines if line)
    table = markdown_table(table_rows)
    if table:
        blocks.append(table)
    return "\n\n".join(blocks)


def xlsx_pages(path: Path) -> list[str]:
    """One page per worksheet (chart sheets have no cells and are left out).

    Values are read in openpyxl's streaming mode with the sheet's declared size ignored
    (``reset_dimensions``): only the rows and cells the file stores are visited, so a sheet that
    declares the whole grid (``A1:XFD1048576``) around a few filled rows costs those rows, not 10^10
    empty cells. Merged cells come from a full load of workbooks up to `MERGED_CELLS_MAX_BYTES`; where
    openpyxl cannot load one in full (it fails on some pivot-table parts), the values are kept without.
    """
    import openpyxl

    merged = _merged_ranges(path) if path.stat().st_size <= MERGED_CELLS_MAX_BYTES else {}
    book = openpyxl.load_workbook(str(path), data_only=True, read_only=True)
    try:
        pages = []
        for sheet in book.worksheets:
            sheet.reset_dimensions()
            rows = _stored_rows(sheet)
            _repeat_merged(rows, merged.get(sheet.title, []))
            pages.append(sheet_markdown(sheet.title, rows))
        return pages
    finally:
        book.close()


def _stored_rows(sheet: Any) -> list[list[str]]:
    """The sheet's rows as text, each without trailing empty cells, up to the last row holding a value."""
    rows: list[list[str]] = []
    last = 0
    for row in sheet.iter_rows():
        values = [
            cell_value(cell.value, getattr(cell, "number_format", "General") or "General") for cell in row
        ]
        while values and not values[-1]:
            values.pop()
        rows.append(values)
        if values:
            last = len(rows)
    del rows[last:]
    return rows


def _merged_ranges(path: Path) -> dict[str, list[Any]]:
    """Each worksheet's merged cell ranges (a full load); {} where openpyxl cannot load the file in full."""
    import openpyxl

    try:
        book = openpyxl.load_workbook(str(path), data_only=True)
    except Exception:  # openpyxl's own failure on a part it models in full only (pivot tables)
        return {}
    try:
        return {sheet.title: list(sheet.merged_cells.ranges) for sheet in book.worksheets}
    finally:
        book.close()


def _repeat_merged(rows: list[list[str]], ranges: list[Any]) -> None:
    """Write each merged range's value into every cell it covers (within the rows read)."""
    for merged in ranges:
        top, left = merged.min_row - 1, merged.min_col - 1
        if top >= len(rows) or left >= len(rows[top]):
            continue
        value = rows[top][left]
        for r in range(top, min(merged.max_row, len(rows))):
            row = rows[r]
            row.extend([""] * (merged.max_col - len(row)))
            for c in range(left, merged.max_col):
                row[c] = value


def csv_to_markdown(data: bytes, encoding: str = "utf-8") -> str:
    """A CSV file (its bytes) as a Markdown table; the delimiter (``,`` ``;`` tab ``|``) is sniffed.

    Raises:
        UnicodeDecodeError: the bytes are not text in `encoding`.

    """
    text = data.decode(encoding).lstrip("\ufeff")
    try:
        dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    rows = list(csv.reader(io.StringIO(text), dialect))
    return sheet_markdown("", rows)
