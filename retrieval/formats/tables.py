r"""Tables from any format as one Markdown form: ``| h1 | h2 |``, a ``|---|---|`` rule, one line per row.

Every converter (docx, xlsx, pptx, csv, HTML, ruled PDF tables) hands its rows of cell texts to
`markdown_table`, so a table reaches the splitter and the answer units exactly as a table written in
Markdown does: the splitter keeps it whole or splits it between rows with the header repeated, and an
answer quotes a row as "key → column: value".

Cleaning (`clean_rows`): cell text on one line (line breaks become spaces, ``|`` escaped as ``\|``),
rows and columns with no text dropped (a spreadsheet's empty margins, spacer columns, trailing blank
rows), short rows padded. `header_index` finds the header row of a sheet that starts with a title
line or blank rows: the first row as wide as the table's body.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["cell_text", "clean_rows", "header_index", "markdown_table", "split_title_rows"]

_SPACE = re.compile(r"\s+")
_PIPE = re.compile(r"(?<!\\)\|")


def cell_text(value: object) -> str:
    r"""A cell's text on one line: None is empty, whitespace runs become one space, ``|`` is escaped.

    Escaping leaves an escaped ``\|`` as it is, so cleaning a row twice changes nothing.
    """
    if value is None:
        return ""
    text = _SPACE.sub(" ", str(value)).strip()
    return _PIPE.sub("\\\\|", text)


def clean_rows(rows: Sequence[Sequence[object]]) -> list[list[str]]:
    """Cell texts (`cell_text`) without empty rows or empty columns, every row as wide as the widest."""
    cells = [[cell_text(value) for value in row] for row in rows]
    cells = [row for row in cells if any(row)]
    if not cells:
        return []
    width = max(len(row) for row in cells)
    cells = [row + [""] * (width - len(row)) for row in cells]
    used = [i for i in range(width) if any(row[i] for row in cells)]
    return [[row[i] for i in used] for row in cells]


def header_index(rows: Sequence[Sequence[str]]) -> int:
    """The index of the header row: the first row about as full as most rows below it.

    "Most rows" is the median filled count of the rows after the first one; the header may fill one
    cell fewer (an empty top-left corner). Passed over: a title row ("Meeting rooms 2026") or a note
    above the table, which fill fewer cells, and a title merged across the table's width, which
    repeats one text in every cell. A table whose rows are all alike starts at 0.
    """
    if len(rows) < 2:
        return 0
    filled = [sum(1 for cell in row if cell) for row in rows]
    body = sorted(filled[1:])
    typical = body[len(body) // 2]
    for i, row in enumerate(rows[:-1]):
        spanning_title = len({cell for cell in row if cell}) == 1 and filled[i] > 1
        if filled[i] >= max(2, typical - 1) and not spanning_title:
            return i
    return 0


def split_title_rows(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Split off the rows above the header (`header_index`) as text lines; return (lines, table rows).

    A title row's filled cells are joined with spaces (a cell merged across columns once); the table
    keeps the header and the rows below, its columns that are empty there dropped again.
    """
    start = header_index(rows)
    lines = [" ".join(_distinct(row)) for row in rows[:start]]
    return lines, clean_rows(rows[start:])


def _distinct(row: Sequence[str]) -> list[str]:
    """The filled cells of a row, each run of one repeated text (a merged cell) once."""
    out: list[str] = []
    for cell in row:
        if cell and (not out or out[-1] != cell):
            out.append(cell)
    return out


def markdown_table(rows: Sequence[Sequence[object]]) -> str:
    """Rows of cells as a Markdown table whose first row is the header; "" when no cell holds text.

    Rows are cleaned first (`clean_rows`). A one-row table is a header with no data: it is written
    as a table all the same (the rule line follows it), so a caller can still see its cells.
    """
    cells = clean_rows(rows)
    if not cells:
        return ""
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(cells[0]))
    return "\n".join(lines)
