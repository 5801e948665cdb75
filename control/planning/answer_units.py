"""Answer units: the pieces of a chunk an offline answer quotes, each one that can carry an answer.

A unit is what a reader would quote to answer a question, not a line: a whole list item with its
continuation lines (and with its lead-in — the item it is nested under, or the last sentence of the
paragraph just before the list, when that ends in a colon: "After the check, refunds go back: bank
card: 3–7 working days"), a parameter with its description and its default ("Default: 30" lines,
``- Default: …`` sub-items), a ``**name**`` label or definition term with what follows it,
a table (or table row) with its header, an FAQ question with its answer, otherwise a sentence — with
a following "(about 3 months)" / "默认…" piece kept on it. Units are read as text (`readable`: no
HTML, link targets, include markers or fence lines) and bounded by `MAX_UNIT_CHARS`.

A user study on product documentation found 6 of 9 wrong answers on the right page quoting the first
line of an item and leaving out the next line that held the value; these rules keep the two together.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass, field
from typing import Literal

from haygraph.control.language import CJK_RANGES, SENTENCE_END
from haygraph.control.planning.readable import readable_inline, readable_lines

MAX_UNIT_CHARS = 320
"""Longest unit kept whole: a longer list item (or lead-in plus item) is quoted sentence by sentence."""

MAX_TABLE_ROWS = 6
"""A table with at most this many data rows is quoted whole (one unit); a longer one row by row."""

_MIN_UNIT_CHARS = 6
_CJK_EDGE = re.compile(f"[{CJK_RANGES}，。！？；：、）》」』]")
_ENUMERATOR = re.compile(r"^[0-9]+[.)]\s+")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|([0-9]+[.)]))\s+(?:\[[ xX]\]\s+)?")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
"""A heading's explicit anchor (``## Title {#title}``): not part of its text."""
_LABEL = re.compile(r"^\*\*[^*]+\*\*\s*[:：]?$")
_DEFINITION = re.compile(r"^\s*[:：]\s+(\S.*)$")
_VALUE_LEAD = re.compile(
    r"^(?:[(（]|(?:the\s+)?default(?:s|ed)?\b|by default\b|e\.g\.|i\.e\.|默认|缺省|例如|单位[:：])",
    re.IGNORECASE,
)
"""How a piece that belongs to the one before begins: a parenthesis, "Default: …", "默认 …", "e.g."."""
_ABBREVIATION_END = re.compile(r"(?:^|[\s(])(?:e\.g|i\.e|etc|vs|cf|approx|incl)\.$", re.IGNORECASE)
"""A piece ending in an abbreviation ("… build of Vue (i.e.") has not ended its sentence."""
_NOT_AN_ANSWER = re.compile(r"^[|:\-\s]+$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|(?:\s*:?-{2,}:?\s*\|)+\s*$")
_FAQ_QUESTION = re.compile(r"^\s*(?:\*\*)?\s*(?:问|Q)\s*[：:]\s*(.+?)\s*(?:\*\*)?\s*$")
_FAQ_ANSWER = re.compile(r"^\s*(?:\*\*)?\s*(?:答|A)\s*[：:]\s*(?:\*\*)?\s*")
_PLACED = "\x00"
_CODE = "\x01"
_CODE_COMMENT = re.compile(r"^(//+|#)\s+(\S.*)$")
"""A code line that is a comment ("// Delay before …", "# Keep logs …"): its marker and its text."""
_SENTENCE_END = re.compile(r"[.!?。！？:：]\s*$")


@dataclass(frozen=True)
class AnswerUnit:
    """One quotable unit of a chunk and the block (paragraph, list item, table, FAQ pair) it came from."""

    text: str
    block: int
    heading: str = ""
    """The heading the unit stands under in the chunk (readable text; "" before the chunk's first)."""
    key: str = ""
    """A table row's first cell, the name of what the row is about ("National Day Golden Week"); "" for
    any other unit."""


@dataclass
class _Block:
    kind: Literal["item", "para", "code", "placed"]
    indent: int
    lines: list[str]
    label: str = ""
    heading: str = ""
    children: int = 0
    parent: _Block | None = field(default=None, repr=False)


def labelled(label: str, text: str) -> str:
    """`text` after its label: "Label: text", or "标签：text" when the label ends in Chinese."""
    return f"{label}{'：' if _CJK_EDGE.match(label[-1]) else ': '}{text}"


def glue(left: str, right: str) -> str:
    """Join two pieces of text: nothing between Chinese characters, a space otherwise."""
    if not left or not right:
        return left + right
    return left + ("" if _CJK_EDGE.match(left[-1]) and _CJK_EDGE.match(right[0]) else " ") + right


def _cells(row: str) -> list[str]:
    return [readable_inline(c.strip()).strip() for c in row.strip().strip("|").split("|")]


def table_row_text(header: list[str], cells: list[str]) -> str:
    """One table row quoted with its header: "Continuous service Less than 3 years → 12 working days".

    The first column names the row; the others follow the arrow, each with its header when the table
    has more than two columns. Without a header the cells are joined with " | ".
    """
    if not header or len(header) != len(cells):
        return " | ".join(c for c in cells if c)
    first = f"{header[0]} {cells[0]}".strip()
    if len(cells) == 2:
        return f"{first} → {cells[1]}"
    return f"{first} → " + ", ".join(f"{h}: {c}" for h, c in zip(header[1:], cells[1:], strict=True))


def table_row_at(text: str, offset: int) -> str | None:
    """The table data row of chunk `text` holding character `offset`, quoted with its header; else None.

    For an answer span that lies in a table: "B2 → 90 EUR", even where the table's units group a short
    two-column table into one (`_table_units`); a header or separator line holds no answer.
    """
    lines = text.split("\n")
    ends = list(itertools.accumulate(len(line) + 1 for line in lines))
    index = bisect.bisect_right(ends, offset)
    if index >= len(lines):
        return None
    line = lines[index]
    if not _TABLE_ROW.match(line) or _TABLE_SEPARATOR.match(line):
        return None
    first = index
    while first > 0 and _TABLE_ROW.match(lines[first - 1]):
        first -= 1
    has_header = first + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[first + 1]) is not None
    if has_header and index == first:
        return None
    header = _cells(lines[first]) if has_header else []
    return table_row_text(header, _cells(line))


def _table_units(rows: list[str]) -> list[tuple[str, str]]:
    """A table's units: rows quoted with their header, each with its key (`AnswerUnit.key`).

    A short two-column table is one unit (its rows together answer "how many days": one per case) and
    has no key; any other table gives one unit per row, keyed by its first cell.
    """
    if len(rows) >= 2 and _TABLE_SEPARATOR.match(rows[1]):
        header, data = _cells(rows[0]), [_cells(r) for r in rows[2:]]
    else:
        header, data = [], [_cells(r) for r in rows if not _TABLE_SEPARATOR.match(r)]
    data = [cells for cells in data if any(cells)]
    if not data:
        return []
    if header and len(header) == 2 and len(data) <= MAX_TABLE_ROWS and all(len(c) == 2 for c in data):
        return [(f"{header[0]} → {header[1]}: " + "; ".join(f"{a} → {b}" for a, b in data), "")]
    return [(table_row_text(header, cells), cells[0] if header else "") for cells in data]


def _structured_units(lines: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """Pull whole tables and FAQ question/answer pairs out of `lines`; return (units, remaining lines).

    Each unit is (text, key): a table row's key is its first cell (`AnswerUnit.key`), other units have none.

    A table becomes rows quoted with their header (never half a row or a bare header); an FAQ pair
    becomes "question answer" without its 问：/答： (Q:/A:) markers, so no marker is spliced into an
    answer. Each unit's lines are replaced by a placeholder line (`_PLACED` + its index), so units keep
    their place in document order.
    """
    units: list[tuple[str, str]] = []
    rest: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_ROW.match(line):
            j = i
            while j < len(lines) and _TABLE_ROW.match(lines[j]):
                j += 1
            for unit in _table_units(lines[i:j]):
                rest.extend(["", f"{_PLACED}{len(units)}", ""])
                units.append(unit)
            i = j
            continue
        question = _FAQ_QUESTION.match(line)
        if question:
            j = i + 1
            answer: list[str] = []
            while j < len(lines) and lines[j].strip() and not _FAQ_QUESTION.match(lines[j]):
                answer.append(readable_inline(_FAQ_ANSWER.sub("", lines[j])).strip())
                j += 1
            if answer:
                rest.extend(["", f"{_PLACED}{len(units)}", ""])
                units.append((glue(readable_inline(question.group(1)).strip(), "".join(answer)), ""))
                i = j
                continue
        rest.append(line)
        i += 1
    return units, rest


def _blocks(lines: list[str]) -> list[_Block]:
    """Group lines into blocks: list items, paragraphs, code lines, placed tables and FAQ pairs.

    An item takes its wrapped and indented continuation lines, and "Default: …" lines or sub-items
    (`_VALUE_LEAD`); a nested item under an item ending in a colon takes that item as its lead-in, and
    so does a list's item after a paragraph ending in a colon ("…behave differently:" then the cases).
    Headings end a section and are left out; a ``**label**`` line (or a bold-only item) and a
    definition list's term (``Term`` then ``: definition``) are kept as the label of the block after it.
    """
    blocks: list[_Block] = []
    current: _Block | None = None  # the block a plain next line continues
    items: list[_Block] = []  # open list items, outermost first
    label = ""
    section = 0  # index of the first block under the latest heading: nothing attaches across a heading
    heading = ""
    lead: _Block | None = None  # the paragraph a list's items take as lead-in
    open_comment: tuple[_Block, str] | None = None  # a code comment whose sentence goes on, its marker
    for raw in lines:
        if raw.startswith(_CODE):
            code = raw[1:].strip()
            remark = _CODE_COMMENT.match(code)
            if open_comment is not None and remark is not None and remark.group(1) == open_comment[1]:
                # "// … displayed if a timeout is" + "// provided and exceeded. Default: Infinity."
                open_comment[0].lines[0] = f"{open_comment[0].lines[0]} {remark.group(2)}"
            elif code:
                blocks.append(_Block("code", 0, [code], heading=heading))
            open_comment = None
            if remark is not None and not _SENTENCE_END.search(code):
                open_comment = (blocks[-1], remark.group(1))
            current = None
            continue
        open_comment = None
        line = raw.expandtabs(4)
        stripped = line.strip()
        if not stripped:
            current = None
            continue
        if stripped.startswith(_PLACED):
            blocks.append(_Block("placed", 0, [stripped], heading=heading))
            current, items, label, lead = None, [], "", None
            continue
        indent = len(line) - len(line.lstrip())
        if _HEADING.match(line):
            current, items, label, section, lead = None, [], "", len(blocks), None
            heading = readable_inline(_ANCHOR.sub("", stripped.lstrip("#"))).strip()
            continue
        item = _ITEM.match(line)
        body = line[item.end() :] if item else stripped
        if _LABEL.match(body.strip()):
            label = readable_inline(body.strip()).strip().rstrip(":：").strip()
            current = None
            continue
        definition = _DEFINITION.match(line)
        if definition and len(blocks) > section and blocks[-1].kind == "para" and len(blocks[-1].lines) == 1:
            term = blocks[-1]
            term.label = term.lines[0].rstrip(":：")
            term.lines = [readable_inline(definition.group(1)).strip()]
            current = term
            continue
        content = readable_inline(body).strip()
        if not content:
            current = None  # an HTML-only line (<div>, </details>) ends a paragraph
            continue
        while items and items[-1].indent >= indent and item:
            items.pop()
        parent = items[-1] if items and item else None
        if item and parent is not None and _VALUE_LEAD.match(content):
            parent.lines.append(content)  # "- Default: 30" under its parameter
            current = parent
            continue
        if item:
            number = item.group(2)
            block = _Block("item", indent, [f"{number} {content}" if number else content], label=label)
            if parent is None:
                # a list right after "…behave differently:" (a paragraph ending in a colon) is its lead-in's
                previous = blocks[-1] if len(blocks) > section else None
                if (
                    not items
                    and previous is not None
                    and previous.kind == "para"
                    and previous.indent <= indent
                ):
                    lead = previous
                if lead is not None and lead.indent <= indent:
                    parent = lead
            if parent is not None and _joined(parent).endswith((":", "：")):
                block.parent = parent
                parent.children += 1
            block.heading = heading
            blocks.append(block)
            items.append(block)
            current, label = block, ""
            continue
        previous = blocks[-1] if len(blocks) > section else None
        if (
            previous is not None
            and previous.kind in ("item", "para")
            and not label
            and _VALUE_LEAD.match(content)
        ):
            previous.lines.append(content)  # "Default: 30" / "(about 3 months)" after its parameter
            current = previous
            continue
        if current is not None:
            current.lines.append(content)  # a wrapped line continues its paragraph or item
            continue
        if previous is not None and previous.kind == "item" and items and indent > items[-1].indent:
            items[-1].lines.append(content)  # an indented paragraph inside a loose list item
            current = items[-1]
            continue
        items, lead = [], None
        block = _Block("para", indent, [content], label=label, heading=heading)
        blocks.append(block)
        current, label = block, ""
    return blocks


def _joined(block: _Block) -> str:
    text = ""
    for line in block.lines:
        text = glue(text, line)
    return text


def _sentences(text: str) -> list[str]:
    """Sentence pieces of a block, each joined to the one before when it would not stand alone.

    That is a piece beginning like `_VALUE_LEAD`, or following one that ends in an abbreviation
    (e.g., i.e., etc.).
    """
    enumerator = _ENUMERATOR.match(text)
    head = enumerator.group(0) if enumerator else ""
    pieces = [p.strip() for p in SENTENCE_END.split(text[len(head) :]) if p and p.strip()]
    if not pieces:
        return []
    pieces[0] = head + pieces[0]
    out: list[str] = []
    for piece in pieces:
        joins = out and (_VALUE_LEAD.match(piece) or _ABBREVIATION_END.search(out[-1]))
        if joins and len(out[-1]) + 1 + len(piece) <= MAX_UNIT_CHARS:
            out[-1] = glue(out[-1], piece)
        else:
            out.append(piece)
    return out


def _last_sentence(text: str) -> tuple[str, str]:
    """`text` split before its last sentence: (what comes before it, the last sentence).

    A piece ending in an abbreviation has not ended its sentence ("Pick one, e.g. these:").
    """
    pieces = [p.strip() for p in SENTENCE_END.split(text) if p and p.strip()]
    while len(pieces) > 1 and _ABBREVIATION_END.search(pieces[-2]):
        pieces[-2:] = [glue(pieces[-2], pieces[-1])]
    before = ""
    for piece in pieces[:-1]:
        before = glue(before, piece)
    return before, (pieces[-1] if pieces else "")


def _block_units(block: _Block, structured: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (text, key) units of one block (only a table row has a key)."""
    if block.kind == "placed":
        return [structured[int(block.lines[0][1:])]]
    return [(piece, "") for piece in _block_text_units(block)]


def _block_text_units(block: _Block) -> list[str]:
    if block.kind == "code":
        return block.lines
    if block.children:
        # a lead-in ("Refunds go back:") is quoted with each of its items instead; a paragraph's
        # sentences before its last one stand on their own
        return _sentences(_last_sentence(_joined(block))[0]) if block.kind == "para" else []
    text = _joined(block)
    if block.parent is not None:
        lead = _joined(block.parent)
        if block.parent.kind == "para":
            lead = _last_sentence(lead)[1]
        if len(lead) + 1 + len(text) <= MAX_UNIT_CHARS:
            text = glue(lead, text)
    pieces = [text] if block.kind == "item" and len(text) <= MAX_UNIT_CHARS else _sentences(text)
    if block.label and pieces:
        pieces[0] = labelled(block.label, pieces[0])
    return pieces


def chunk_units(text: str) -> list[AnswerUnit]:
    """The answer units of a chunk, in document order, each with the index of its block.

    Tables and FAQ pairs are taken whole first; the rest is grouped into blocks (`_blocks`) and each
    block quoted whole (a list item up to `MAX_UNIT_CHARS`) or sentence by sentence. Headings, bare
    labels, separator rows and pieces shorter than 6 characters are not units.
    """
    marked = [f"{_CODE}{line}" if is_code else line for line, is_code in readable_lines(text)]
    structured, lines = _structured_units(marked)
    units: list[AnswerUnit] = []
    for index, block in enumerate(_blocks(lines)):
        for piece, key in _block_units(block, structured):
            piece = piece.strip()
            if len(piece) >= _MIN_UNIT_CHARS and not _NOT_AN_ANSWER.match(piece):
                units.append(AnswerUnit(piece, index, block.heading, key))
    return units


def answer_units(text: str) -> list[str]:
    """Candidate answer units of a chunk as text (`chunk_units` without their block indices)."""
    return [unit.text for unit in chunk_units(text)]
