"""Where a cited quote lies in its evidence chunk, as character offsets, for the page to highlight.

An answer quotes a unit of a chunk and follows it with `[chunk-id]`. The quote is the chunk's text
made readable (`haygraph.control` drops Markdown markers, link targets and table pipes), so it is
found in three steps: verbatim; then in the chunk with those markers and runs of whitespace left out
on both sides (the offsets mapped back to the chunk); then, for a table row quoted with its header
("Holiday National Day Golden Week → First day off: 2026-10-01, …"), the row whose every cell the
quote holds (the rows and their header line for a short table quoted whole); failing all, the stretch
of the chunk from the first to the last block it shares with the quote (`difflib`'s matching blocks of
at least `MIN_BLOCK_CHARS`), when those blocks hold at least half of the quote.
"""

from __future__ import annotations

import difflib
import re

from haygraph.control.planning.readable import HIDDEN_CONTROLS, readable_inline

MIN_BLOCK_CHARS = 4
_MARKERS = frozenset("*_`#>|")
_LIST_MARKER = re.compile(r"^\s*(?:[-+*•]|\d{1,3}[.)])\s+")
_TABLE_LINE = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.MULTILINE)
_SEPARATOR_CELL = re.compile(r"\s*:?-{2,}:?\s*")


def _normalized(text: str) -> tuple[str, list[int]]:
    """`text` without Markdown markers and with each whitespace run as one space; each kept char's offset."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch in _MARKERS or HIDDEN_CONTROLS.match(ch):  # answers leave the controls out
            continue
        if ch.isspace():
            if not chars or chars[-1] == " ":
                continue
            ch = " "
        chars.append(ch)
        where.append(i)
    return "".join(chars), where


def locate_quote(text: str, quote: str) -> tuple[int, int] | None:
    """The `(start, end)` offsets of `quote` in the chunk `text`, or None when it is not there."""
    quote = _LIST_MARKER.sub("", quote.strip()).strip()
    if not quote or not text:
        return None
    at = text.find(quote)
    if at >= 0:
        return at, at + len(quote)
    flat_text, where = _normalized(text)
    flat_quote = _normalized(quote)[0].strip()
    at = flat_text.find(flat_quote) if flat_quote else -1
    if at >= 0:
        return where[at], where[at + len(flat_quote) - 1] + 1
    row = _table_row_span(text, flat_quote)
    if row is not None:
        return row
    blocks = [
        b
        for b in difflib.SequenceMatcher(None, text, quote, autojunk=False).get_matching_blocks()
        if b.size >= MIN_BLOCK_CHARS
    ]
    if not blocks or sum(b.size for b in blocks) * 2 < len(quote):
        return None
    return blocks[0].a, blocks[-1].a + blocks[-1].size


def _table_row_span(text: str, flat_quote: str) -> tuple[int, int] | None:
    """Where the table row(s) quoted as `flat_quote` (`_normalized`) lie in `text`, or None.

    An answer quotes a table row after its header ("Header cell → Header: cell, …",
    `haygraph.control.planning.answer_units.table_row_text`), so the row is the one whose every cell the
    quote holds; the header line holds only header cells and counts only when several rows do (a short
    table quoted whole: "Service → Leave: Under 3 years → 12 days; …"). The span runs from the first
    matching line's first cell to the last one's last cell.
    """
    if "→" not in flat_quote:
        return None
    lines = list(_TABLE_LINE.finditer(text))
    rows: list[tuple[int, int, bool]] = []
    for pos, line in enumerate(lines):
        cells = line.group(1).split("|")
        if all(_SEPARATOR_CELL.fullmatch(c) for c in cells):
            continue
        flat = [_normalized(readable_inline(c))[0].strip() for c in cells]
        if not any(flat) or not all(c in flat_quote for c in flat if c):
            continue
        nxt = lines[pos + 1] if pos + 1 < len(lines) else None
        header = nxt is not None and all(_SEPARATOR_CELL.fullmatch(c) for c in nxt.group(1).split("|"))
        inner = line.group(1)
        start = line.start(1) + len(inner) - len(inner.lstrip())
        rows.append((start, line.end(1) - (len(inner) - len(inner.rstrip())), header))
    data = [r for r in rows if not r[2]]
    kept = rows if len(data) > 1 else data
    return (kept[0][0], kept[-1][1]) if kept else None
