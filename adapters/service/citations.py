"""Where a cited quote lies in its evidence chunk, as character offsets, for the page to highlight.

An answer quotes a unit of a chunk and follows it with `[chunk-id]`. The quote is the chunk's text
made readable (`haygraph.control` drops Markdown markers, link targets and table pipes), so it is
found in three steps: verbatim; then in the chunk with those markers and runs of whitespace left out
on both sides (the offsets mapped back to the chunk); then, failing both (a table row quoted as
"header → cell; …"), the stretch of the chunk from the first to the last block it shares with the
quote (`difflib`'s matching blocks of at least `MIN_BLOCK_CHARS`), when those blocks hold at least
half of the quote.
"""

from __future__ import annotations

import difflib
import re

from haygraph.control.planning.readable import HIDDEN_CONTROLS

MIN_BLOCK_CHARS = 4
_MARKERS = frozenset("*_`#>|")
_LIST_MARKER = re.compile(r"^\s*(?:[-+*•]|\d{1,3}[.)])\s+")


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
    blocks = [
        b
        for b in difflib.SequenceMatcher(None, text, quote, autojunk=False).get_matching_blocks()
        if b.size >= MIN_BLOCK_CHARS
    ]
    if not blocks or sum(b.size for b in blocks) * 2 < len(quote):
        return None
    return blocks[0].a, blocks[-1].a + blocks[-1].size
