"""`ChunkLocator`: where each chunk sits in its source text (character offsets) and on which page.

A citation that names a position can be highlighted: each chunk gets ``char_start`` / ``char_end``
(offsets into the source document's converted text, ``text[char_start:char_end]``) and, for sources
with pages (PDF pages, slides, sheets: ``meta["page_starts"]`` from the converter), ``page`` (1-based,
the page where the chunk starts). The source's ``page_starts`` list is not copied into the chunks. A
chunk that runs over a page break (short pages are merged) also gets ``page_breaks``: ``[[offset,
page], ...]``, where each later page begins in the chunk's own text, so `Evidence.page_at`
(`haygraph.control.evidence`) names the page of any part of it (a cited quote, a reader's span)
rather than the chunk's first page.

It runs after the splitter and looks chunks up in their source rather than asking the splitter to
count, so it works with any splitter (or none: a whole document is one chunk at 0..len). Chunks of one
source are searched in order from the previous chunk's start; a chunk whose text was rewritten by the
splitter (joined list items, a repeated heading) is located by its first and last lines; one that
cannot be found gets no offsets rather than wrong ones.
"""

from __future__ import annotations

import bisect
import logging
import re
from dataclasses import replace
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

logger = logging.getLogger(__name__)

_PROBE = 40
"""Characters of a chunk's first and last line used to locate a rewritten chunk."""


def locate(text: str, chunk: str, start_at: int = 0) -> tuple[int, int] | None:
    """Offsets ``(start, end)`` of `chunk` in `text`, searching from `start_at` first; None if not found.

    An exact match wins; then the chunk without its leading heading lines (the splitter may repeat a
    section's heading path above a chunk). Otherwise the chunk's first line (up to 40 characters) fixes
    the start and its last line the end, when both are found in order.
    """
    body = chunk.strip()
    if not body:
        return None
    for origin in (start_at, 0):
        at = text.find(body, origin)
        if at >= 0:
            return at, at + len(body)
    # A chunk may start with heading lines of its path that the splitter repeated for context; they are
    # not contiguous with the body in the source, so locate the body that follows them, then take back
    # the trailing headings that do stand right before it in the source.
    rest = [line for line in body.splitlines() if line.strip()]
    dropped: list[str] = []
    while len(rest) > 1 and rest[0].lstrip().startswith("#"):
        dropped.append(rest.pop(0).strip())
        found = _find_lines(text, rest, start_at)
        if found is not None:
            at, end = found
            for heading in reversed(dropped):
                before = text[:at].rstrip()
                if not before.endswith(heading):
                    break
                at = len(before) - len(heading)
            return at, end
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    head, tail = lines[0][:_PROBE], lines[-1][-_PROBE:]
    for origin in (start_at, 0):
        first = text.find(head, origin)
        if first < 0:
            continue
        last = text.find(tail, first + len(head) if len(lines) > 1 else first)
        if last >= 0:
            return first, last + len(tail)
    return None


def _find_lines(text: str, lines: list[str], start_at: int) -> tuple[int, int] | None:
    """Offsets of `lines` in `text` where they stand in order separated only by whitespace, or None."""
    pattern = r"\s*".join(re.escape(line.strip()) for line in lines)
    for origin in (start_at, 0):
        match = re.compile(pattern).search(text, origin)
        if match:
            return match.start(), match.end()
    return None


def page_of(offset: int, page_starts: list[int]) -> int:
    """1-based page holding character `offset`, given each page's start offset (sorted)."""
    return max(1, bisect.bisect_right(page_starts, offset))


def _page_breaks(chunk: str, source: str, span: tuple[int, int], starts: list[int]) -> list[list[int]]:
    """``[[offset in chunk, page], ...]`` for the pages that begin inside `span` of the source text.

    When the chunk holds the source's span verbatim the offset follows from it; otherwise (the splitter
    rewrote the chunk) the new page's first line is looked for in the chunk, and a page whose first line
    is not found is left out.
    """
    inside = [(at, page_of(at, starts)) for at in starts if span[0] < at < span[1]]
    if not inside:
        return []
    body = chunk.find(source[span[0] : span[1]])
    out: list[list[int]] = []
    cursor = 0
    for at, page in inside:
        if body >= 0:
            out.append([body + at - span[0], page])
            continue
        probe = source[at : at + _PROBE].strip().split("\n")[0]
        found = chunk.find(probe, cursor) if probe else -1
        if found >= 0:
            out.append([found, page])
            cursor = found
    return out


@component
class ChunkLocator:
    """Adds ``char_start``, ``char_end`` and (with page starts) ``page``, ``page_breaks`` to chunks' meta."""

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkLocator:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], sources: list[Document]) -> dict[str, list[Document]]:
        """Return copies of the chunks `documents` located in `sources` (the documents before splitting).

        A chunk's source is the one with the same ``meta["source_id"]`` and ``meta["tenant"]``.
        """
        texts: dict[tuple[Any, Any], Document] = {}
        for src in sources:
            texts.setdefault((src.meta.get("tenant"), src.meta.get("source_id", src.id)), src)
        cursor: dict[tuple[Any, Any], int] = {}
        out: list[Document] = []
        missed = 0
        for chunk in documents:
            key = (chunk.meta.get("tenant"), chunk.meta.get("source_id"))
            meta = {k: v for k, v in chunk.meta.items() if k not in {"page_starts", "page_breaks"}}
            source = texts.get(key)
            span = locate(source.content or "", chunk.content or "", cursor.get(key, 0)) if source else None
            if span is None:
                missed += source is not None
            else:
                cursor[key] = span[0]
                meta.update(char_start=span[0], char_end=span[1])
                starts = source.meta.get("page_starts") if source else None
                if isinstance(starts, list) and starts:
                    meta["page"] = page_of(span[0], starts)
                    breaks = _page_breaks(
                        chunk.content or "", (source.content if source else "") or "", span, starts
                    )
                    if breaks:
                        meta["page_breaks"] = breaks
            out.append(replace(chunk, meta=meta))
        if missed:
            logger.info("%d chunks could not be located in their source text (no offsets)", missed)
        return {"documents": out}
