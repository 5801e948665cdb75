"""`StructuredSplitter`: split documents by Markdown structure first, then by sentence, into sized chunks.

Written instead of Haystack's `DocumentSplitter`/`RecursiveDocumentSplitter`/`MarkdownHeaderSplitter`
because we need all of these at once: heading paths in metadata, tables/lists/code kept whole, sentence
boundaries for English *and* Chinese without NLTK data (see `haygraph.retrieval.sentences`), and chunk
sizes held
between ``min_chars`` and ``max_chars`` characters.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

from haystack import Document, component
from haystack.core.serialization import default_from_dict, default_to_dict

from haygraph.retrieval.sentences import detect_language, sentence_spans

__all__ = ["StructuredSplitter"]

logger = logging.getLogger(__name__)

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+•]|[0-9]{1,3}[.)])\s+")
_TABLE_RULE_RE = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_BLOCK_SEP = "\n\n"
_TRAIL_SHARE = 4  # the repeated heading lines take at most max_chars // 4 of a chunk


@dataclass(frozen=True)
class _Piece:
    """The smallest unit placed in a chunk: a heading line, a sentence, a whole block, a row or an item."""

    text: str
    sep: str  # separator written before this piece when it follows another piece in the same chunk
    path: tuple[str, ...]
    section: int
    heading: bool = False
    trail: tuple[str, ...] = ()  # heading lines of `path` as in the source, repeated atop every chunk


def _hard_cut(text: str, limit: int) -> list[tuple[str, str]]:
    """Cut text longer than `limit` into ``(separator, part)`` pairs, preferring line breaks/whitespace."""
    parts: list[tuple[str, str]] = []
    sep = ""
    while len(text) > limit:
        window = text[: limit + 1]
        cut = window.rfind("\n")
        if cut < limit // 2:
            cut = max(window.rfind(" "), window.rfind("\t"))
        if cut >= limit // 2:
            part, rest = text[:cut], text[cut:]
        else:
            soft = max(window[:limit].rfind(c) for c in "，、,：:")
            cut = soft + 1 if soft + 1 >= limit // 2 else limit
            part, rest = text[:cut], text[cut:]
        parts.append((sep, part.rstrip()))
        stripped = rest.lstrip()
        sep, text = rest[: len(rest) - len(stripped)], stripped
    parts.append((sep, text))
    return [(s, p) for s, p in parts if p]


def _sentences(text: str, sep: str, path: tuple[str, ...], section: int, limit: int) -> list[_Piece]:
    """Split a text block into sentence pieces, keeping the original whitespace between sentences."""
    pieces: list[_Piece] = []
    prev_end = None
    for start, end in sentence_spans(text):
        sentence_sep = sep if prev_end is None else text[prev_end:start]
        for i, (cut_sep, part) in enumerate(_hard_cut(text[start:end], limit)):
            pieces.append(_Piece(part, sentence_sep if i == 0 else cut_sep, path, section))
        prev_end = end
    return pieces


def _line_runs(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Group the lines of a blank-line-delimited block into table, list and text runs."""
    runs: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.lstrip().startswith("|"):
            kind = "table"
        elif _LIST_ITEM_RE.match(line) or (runs and runs[-1][0] == "list"):
            kind = "list"  # a line after a list item continues it (Markdown "lazy" continuation)
        else:
            kind = "text"
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(line)
        else:
            runs.append((kind, [line]))
    return runs


def _list_items(lines: list[str]) -> list[str]:
    """Group list lines into items (an item line plus its continuation lines)."""
    items: list[list[str]] = []
    for line in lines:
        if _LIST_ITEM_RE.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return ["\n".join(item) for item in items]


def _table_parts(lines: list[str], limit: int) -> list[str] | None:
    """Split a table with a header row between rows into parts of at most `limit` characters.

    Every part starts with the header row and its ``|---|`` rule, then as many whole rows as fit. A
    table too wide for its header and one row to fit is first cut into column groups, each keeping
    the first (key) column (`_column_groups`), so every part is still a table whose rows read
    "key → column: value". Returns None when the table has no header rule, or when even the key
    column and one other column of some row do not fit.
    """
    if len(lines) < 3 or not _TABLE_RULE_RE.match(lines[1]):
        return None
    if all(len(lines[0]) + len(lines[1]) + len(row) + 2 <= limit for row in lines[2:]):
        return _row_parts(lines, limit)
    groups = _column_groups(lines, limit)
    if groups is None:
        return None
    return [part for group in groups for part in _row_parts(group, limit)]


def _row_parts(lines: list[str], limit: int) -> list[str]:
    """Parts of a table (header, rule, rows) with as many whole rows as fit `limit`, each with the header."""
    header = "\n".join(lines[:2])
    parts: list[list[str]] = []
    size = limit + 1
    for row in lines[2:]:
        if size + 1 + len(row) > limit:
            parts.append([header])
            size = len(header)
        parts[-1].append(row)
        size += 1 + len(row)
    return ["\n".join(part) for part in parts]


def _table_cells(line: str) -> list[str]:
    """The cells of a table line (split at unescaped ``|``), stripped."""
    return [cell.strip() for cell in _CELL_SPLIT.split(line.strip().strip("|"))]


def _column_groups(lines: list[str], limit: int) -> list[list[str]] | None:
    """A wide table as narrower tables (header, rule, rows): the key column and the next columns that fit."""
    rows = [_table_cells(line) for line in [lines[0], *lines[2:]]]
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]

    def render(columns: list[int]) -> list[str]:
        out = ["| " + " | ".join(row[c] for c in columns) + " |" for row in rows]
        out.insert(1, "|" + "---|" * len(columns))
        return out

    def fits(columns: list[int]) -> bool:
        table = render(columns)
        return all(len(table[0]) + len(table[1]) + len(row) + 2 <= limit for row in table[2:])

    groups: list[list[int]] = []
    for column in range(1, width):
        if groups and fits([0, *groups[-1], column]):
            groups[-1].append(column)
        elif fits([0, column]):
            groups.append([column])
        else:
            return None
    return [render([0, *group]) for group in groups] if groups else None


def _block_pieces(
    kind: str, lines: list[str], path: tuple[str, ...], section: int, limit: int
) -> list[_Piece]:
    """Turn one block into pieces: whole when it fits `limit`, else rows, items, lines or sentences.

    A table too long for `limit` becomes parts that each repeat its header row (see `_table_parts`).
    """
    text = "\n".join(lines).strip("\n")
    if kind == "text":
        return _sentences(text, _BLOCK_SEP, path, section, limit)
    if len(text) <= limit:
        return [_Piece(text, _BLOCK_SEP, path, section)]
    parts = _table_parts(lines, limit) if kind == "table" else None
    if parts is not None:
        return [_Piece(part, _BLOCK_SEP, path, section) for part in parts]
    units = _list_items(lines) if kind == "list" else lines  # table rows / code lines / list items
    pieces: list[_Piece] = []
    for unit in units:
        sep = _BLOCK_SEP if not pieces else "\n"
        if kind == "list" and len(unit) > limit:
            pieces.extend(_sentences(unit, sep, path, section, limit))
            continue
        for i, (cut_sep, part) in enumerate(_hard_cut(unit, limit)):
            pieces.append(_Piece(part, sep if i == 0 else cut_sep or " ", path, section))
    return pieces


def _trail(lines: list[str], budget: int) -> tuple[str, ...]:
    """Return the heading lines to repeat atop a chunk: the nearest ones whose prefix fits `budget`."""
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + len(_BLOCK_SEP)
        if size > budget:
            break
        kept.append(line)
    return tuple(reversed(kept))


def _prefix_len(trail: tuple[str, ...]) -> int:
    """Length of the prefix that `trail` adds before a chunk's text."""
    return sum(len(line) + len(_BLOCK_SEP) for line in trail)


def _parse(text: str, limit: int) -> list[list[_Piece]]:
    """Parse Markdown-like text into blocks of pieces (heading lines lead the block they introduce).

    Body pieces carry the section's heading trail and are sized to fit `limit` with that trail.
    """
    blocks: list[list[_Piece]] = []
    section = 0
    stack: list[tuple[int, str, str]] = []
    pending: list[_Piece] = []  # heading lines waiting for the block they introduce
    raw: list[str] = []
    fence: str | None = None

    def path() -> tuple[str, ...]:
        return tuple(title for _, title, _ in stack)

    def trail() -> tuple[str, ...]:
        return _trail([line for _, _, line in stack], limit // _TRAIL_SHARE)

    def flush(kind: str = "text") -> None:
        nonlocal pending
        if not any(line.strip() for line in raw):
            raw.clear()
            return
        runs = [("code", list(raw))] if kind == "code" else _line_runs(raw)
        heads = trail()
        for run_kind, lines in runs:
            body = _block_pieces(run_kind, lines, path(), section, limit - _prefix_len(heads))
            body = [dataclasses.replace(piece, trail=heads) for piece in body]
            if body:
                blocks.append(pending + body)
                pending = []
        raw.clear()

    for line in text.splitlines():
        if fence is not None:
            raw.append(line)
            if line.strip().startswith(fence):
                fence = None
                flush("code")
            continue
        fence_match = _FENCE_RE.match(line)
        heading = _HEADING_RE.match(line)
        if fence_match:
            flush()
            fence = fence_match.group(1)
            raw.append(line)
        elif heading and heading.group(2).strip():
            flush()
            level, title = len(heading.group(1)), heading.group(2).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title, line.strip()))
            section += 1
            pending.append(_Piece(line.strip(), _BLOCK_SEP, path(), section, heading=True, trail=trail()))
        elif not line.strip():
            flush()
        else:
            raw.append(line)
    flush("code" if fence is not None else "text")
    if pending:
        blocks.append(pending)
    return blocks


def _body(pieces: list[_Piece]) -> list[_Piece]:
    """Return the non-heading pieces of a chunk, or all pieces when it holds only headings."""
    return [p for p in pieces if not p.heading] or pieces


def _missing_trail(pieces: list[_Piece]) -> tuple[str, ...]:
    """Return the heading lines of the chunk's trail that the chunk does not already hold."""
    present = {p.text for p in pieces if p.heading}
    return tuple(line for line in _body(pieces)[-1].trail if line not in present)


def _render(pieces: list[_Piece]) -> str:
    """Join the pieces of one chunk with their separators, after the heading lines it lacks."""
    if not pieces:
        return ""
    prefix = "".join(line + _BLOCK_SEP for line in _missing_trail(pieces))
    return prefix + pieces[0].text + "".join(p.sep + p.text for p in pieces[1:])


def _heading_path(pieces: list[_Piece]) -> list[str]:
    """Return the longest heading path shared by every body piece of a chunk."""
    paths = [p.path for p in _body(pieces)]
    common = list(paths[0])
    for other in paths[1:]:
        n = 0
        while n < min(len(common), len(other)) and common[n] == other[n]:
            n += 1
        del common[n:]
    return common


@component
class StructuredSplitter:
    """Split documents into chunks of ``min_chars``..``max_chars`` characters along their structure.

    1. Structure: Markdown headings (``#``..``######``) start sections and give each chunk its
       ``heading_path``; blank lines separate blocks; a table, a list or a fenced code block is one
       block, kept whole when it fits ``max_chars``; else a list is split by items, code by lines, and a
       table between rows, every part repeating the header row and its ``|---|`` rule; a table too
       wide for its header and one row to fit is first cut into column groups, each keeping the
       first (key) column (a row is cut only when even its key and one other cell, with the header,
       exceed ``max_chars``). Heading lines stay in the content
       as they are in the source and always travel with the text they introduce.
    2. Sections: every heading starts a section and every section starts a new chunk, however short:
       chunks are merged only within a section (a heading with no text of its own, e.g. a chapter
       title right before its first sub-heading, travels with the text that follows it). Merging
       short sibling sections lost their headings and, measured on a car-care guide, turned "When
       should I replace brake pads?" from answered into refused.
    3. Heading path in the text: a chunk starts with the heading lines of its path that it does not
       already hold (its ancestors' headings, and its own on a continuation chunk), one per
       paragraph, as in the source, so BM25, the embedder and a reader all see which section a
       chunk comes from. The nearest headings are kept when the whole path would take more than a
       quarter of ``max_chars``; the prefix counts toward ``max_chars``.
    4. Sizes: within a section the cut points are chosen by dynamic
       programming over block, sentence, row and item boundaries: no chunk above ``max_chars``, as few
       chunks below ``min_chars`` as possible, then as few chunks as possible, then cuts on block
       boundaries rather than between sentences of one paragraph. A sentence is cut only when it alone
       exceeds ``max_chars`` (hard cut at ``max_chars``, preferring a line break or whitespace, then a
       comma). A leftover chunk below ``min_chars`` is merged into the previous chunk of the same
       section when the result fits.

    No chunk ever exceeds ``max_chars``. A chunk may stay below ``min_chars`` when it is a source's last
    or only chunk, when its section is short, or when an indivisible
    neighbour (a whole table, a long sentence) leaves no room to fill it.

    Every chunk is a new `Document` whose meta is the parent's meta plus ``source_id`` (the parent's
    ``meta["source_id"]``, else its ``id``), ``chunk_index`` (0-based within the source),
    ``heading_path`` (list of heading titles) and ``language`` (``"zh"``, ``"en"`` or ``"mixed"``).
    """

    def __init__(self, min_chars: int = 300, max_chars: int = 800) -> None:
        if not isinstance(max_chars, int) or max_chars <= 0:
            raise ValueError(f"max_chars must be a positive integer, but got {max_chars!r}")
        if not isinstance(min_chars, int) or not 0 < min_chars <= max_chars:
            raise ValueError(
                f"min_chars must satisfy 0 < min_chars <= max_chars ({max_chars}), got {min_chars!r}"
            )
        self.min_chars = min_chars
        self.max_chars = max_chars

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, min_chars=self.min_chars, max_chars=self.max_chars)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StructuredSplitter:
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Split each document into chunks; documents without text produce no chunks (with a warning).

        :param documents: The documents to split; they are not modified.
        :returns: ``{"documents": chunks}`` in source order.
        """
        chunks: list[Document] = []
        for doc in documents:
            if not doc.content or not doc.content.strip():
                logger.warning("Document %s has no text content; it produces no chunks.", doc.id)
                continue
            source_id = doc.meta.get("source_id", doc.id)
            # an archive member's folders (an export's page hierarchy) come before its own headings
            prefix = [str(p) for p in doc.meta.get("heading_prefix") or [] if str(p)]
            for index, pieces in enumerate(self._split_text(doc.content)):
                content = _render(pieces)
                meta = copy.deepcopy(doc.meta)
                meta.update(
                    source_id=source_id,
                    chunk_index=index,
                    heading_path=[*prefix, *_heading_path(pieces)],
                    language=detect_language(content),
                )
                chunks.append(Document(content=content, meta=meta))
        return {"documents": chunks}

    def _split_text(self, text: str) -> list[list[_Piece]]:
        """Group the blocks of one text by section, segment each group, then merge small leftovers."""
        blocks = _parse(text, self.max_chars)
        groups: list[list[_Piece]] = []
        for block in blocks:
            if groups and _body(block)[0].section == _body(groups[-1])[-1].section:
                groups[-1].extend(block)
                continue
            groups.append(list(block))
        chunks = [chunk for group in groups for chunk in self._segment(group)]
        return self._merge_small(chunks)

    def _segment(self, pieces: list[_Piece]) -> list[list[_Piece]]:
        """Cut a run of pieces into chunks by dynamic programming over piece boundaries.

        Cost of a segmentation: every chunk costs 10, every chunk below ``min_chars`` 1000 plus its
        shortfall, every cut inside a block (between sentences, rows or items) 4; chunks above
        ``max_chars`` and cuts right after a heading line are not allowed. So chunks reach
        ``min_chars`` whenever some cut allows it, there are as few chunks as possible, and cuts fall
        on block boundaries when that costs no extra chunk.
        """
        n = len(pieces)
        offsets = [0]
        for piece in pieces:
            offsets.append(offsets[-1] + len(piece.sep) + len(piece.text))
        trail = _prefix_len(_body(pieces)[-1].trail)  # a chunk that does not start the section repeats it
        first_trail = len(_render(pieces)) - offsets[n] + len(pieces[0].sep)
        best: list[float] = [0.0] + [float("inf")] * n
        back = [0] * (n + 1)
        for end in range(1, n + 1):
            for start in range(end - 1, -1, -1):
                size = offsets[end] - offsets[start] - len(pieces[start].sep)
                if size > self.max_chars and end - start > 1:
                    break  # only grows with earlier starts
                size += first_trail if start == 0 else trail
                if size > self.max_chars and end - start > 1:
                    continue  # a later start repeats the whole trail; the section's start may fit
                if start > 0 and (pieces[start - 1].heading or best[start] == float("inf")):
                    continue
                cost = best[start] + 10
                if size < self.min_chars:
                    cost += 1000 + self.min_chars - size
                if start > 0 and pieces[start].sep != _BLOCK_SEP:
                    cost += 4
                if cost < best[end]:
                    best[end], back[end] = cost, start
        chunks: list[list[_Piece]] = []
        end = n
        while end > 0:
            chunks.append(pieces[back[end] : end])
            end = back[end]
        return chunks[::-1]

    def _merge_small(self, chunks: list[list[_Piece]]) -> list[list[_Piece]]:
        """Merge a chunk below ``min_chars`` into the previous chunk of its section when the result fits."""
        out: list[list[_Piece]] = []
        for chunk in chunks:
            if out and len(_render(chunk)) < self.min_chars:
                prev = out[-1]
                same_section = _body(prev)[-1].section == _body(chunk)[0].section
                if same_section and len(_render([*prev, *chunk])) <= self.max_chars:
                    out[-1] = [*prev, *chunk]
                    continue
            out.append(chunk)
        return out
