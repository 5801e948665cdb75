"""The offline answer from the reader's span: the value first, then the unit that holds it, cited.

"How much is parking on level B2 per month?" over a fee table reads ``90 EUR — Level B2 → Monthly
fee: 90 EUR [policy.md#2]``: the span the reader points at (`haygraph.control.reading`), then the answer
unit of its chunk that holds it (a sentence, a list item, a table row with its header: `answer_units`),
then the evidence id. When the span is the unit (or nearly all of it) the unit alone is quoted. When
the question and the chunk are in different languages, a note says in the question's language which
language the source is in (the span stays in the source's words: it is a quote).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from haygraph.control.evidence import Evidence
from haygraph.control.language import is_chinese
from haygraph.control.planning.answer_units import chunk_units, table_row_at
from haygraph.control.planning.extractive import ExtractiveAnswer
from haygraph.control.planning.quote_location import locate_quote
from haygraph.control.planning.readable import readable_inline
from haygraph.control.reading import AnswerSpan, Reading
from haygraph.control.texts import SOURCE_IN_CHINESE, SOURCE_IN_ENGLISH

NEARLY_ALL = 0.8
"""A span this share of its unit's length (or more) is quoted as the unit alone."""


def holding_unit(text: str, start: int, end: int) -> str | None:
    """The answer unit of chunk `text` that holds offsets `start`..`end`.

    A span in a table row is quoted as that row with its header (`table_row_at`). Otherwise the shortest
    answer unit whose range holds the span: units are readable text (markup dropped), found back in the
    chunk with `locate_quote`. None when no unit holds it (a heading, say).
    """
    row = table_row_at(text, start)
    if row is not None:
        return row
    best: tuple[int, str] | None = None
    for unit in chunk_units(text):
        where = locate_quote(text, unit.text)
        if where is None or not (where[0] <= start and end <= where[1] + 1):
            continue
        size = where[1] - where[0]
        if best is None or size < best[0]:
            best = (size, unit.text)
    return best[1] if best else None


_LEFTOVER_MARKUP = re.compile(r"\*\*|__|~~|(?<!\w)[*_](?!\w)|^\s*[|>#-]+\s*|\s*[|]+\s*$")


def readable_value(span: str) -> str:
    """The span as a short readable value: Markdown made readable, markers a cut left open removed, one line.

    A span may start or end inside ``**bold**`` or a table row ("3 days** of leave", "90 EUR |"):
    `readable_inline` only removes balanced markup, so the markers a cut left behind go here.
    """
    text = readable_inline(span)
    if text.count("`") % 2:
        text = text.replace("`", "")
    text = _LEFTOVER_MARKUP.sub(" ", text)
    return " ".join(text.split()).strip(" ,;:，；：")


def usable_span(reading: Reading, evidence: Sequence[Evidence]) -> tuple[AnswerSpan, Evidence] | None:
    """The best span of `reading` that lies in one of `evidence` (the items the answer may use)."""
    by_id = {e.id: e for e in evidence}
    for span in reading.spans:
        item = by_id.get(span.evidence_id)
        if item is not None and item.text[span.start : span.end] == span.text and span.text.strip():
            return span, item
    return None


def source_note(question: str, source_text: str) -> str:
    """A note in the question's language when the source is written in the other one, else ""."""
    asked_chinese, source_chinese = is_chinese(question), is_chinese(source_text)
    if asked_chinese and not source_chinese:
        return SOURCE_IN_ENGLISH.for_question(question)
    if not asked_chinese and source_chinese:
        return SOURCE_IN_CHINESE.for_question(question)
    return ""


def reader_answer(
    question: str, reading: Reading, evidence: Sequence[Evidence], lead_margin: float = -math.inf
) -> ExtractiveAnswer | None:
    """The answer from the best usable span: the unit holding it, ``[id]``; None without a span.

    A span in a table gives the row the question names, as `narrowed_to_row` does in the question's own
    language (`named_row`: the span's row if named, else the one named row): a span that starts in
    "B1 | 120 EUR" and runs into the next row answers "停车场 B2 层每月多少钱？" with "B2 → 90 EUR". The
    span's value leads (``value — unit [id]``) when its margin is at least `lead_margin` (the
    decision's fitted ``lead_margin``: below it the value is too often wrong to put first).
    """
    found = usable_span(reading, evidence)
    if found is None:
        return None
    span, item = found
    value = readable_value(span.text) or " ".join(span.text.split())
    unit = holding_unit(item.text, span.start, span.end) or value
    at = named_row(question, item.text, span.start)
    if at is not None and not _holds(item.text, at, span.start):
        # the question names another row of the span's table: that row, its last cell the value
        unit, value = table_row_at(item.text, at) or unit, _cells(item.text, at)[-1]
    if span.margin < lead_margin or len(value) >= NEARLY_ALL * len(unit):
        text = unit
    else:
        text = f"{value}{'——' if is_chinese(unit) else ' — '}{unit}"
    note = source_note(question, item.text)
    answer = f"{text} [{item.id}]" + (f" {note}" if note else "")
    return ExtractiveAnswer(answer=answer, evidence_ids=[item.id], units=[unit])


def combined_answer(
    question: str,
    reading: Reading,
    evidence: Sequence[Evidence],
    picked: ExtractiveAnswer | None,
    lead_margin: float = -math.inf,
) -> ExtractiveAnswer | None:
    """The offline answer from the reader's best span and the sentence picker's answer `picked`.

    - The span's chunk is in the other language than the question (or the picker found nothing):
      `reader_answer`, the unit holding the span, its value first from `lead_margin` on. The picker
      matches words and finds little across languages.
    - Otherwise `picked`, with the span's table row in place of a table it quotes whole
      (`narrowed_to_row`: "B2 → 90 EUR", not every level's fee). On the tune parts (`python -m
      benchmarks.ablate_answer`, hybrid) the picker's quote held every gold fact more often than the
      span's unit in the same language (handbook en 1.00 against 0.33, zh 0.91 / 0.64; docs en 1.00 /
      0.44, zh 0.89 / 0.78; CMRC 0.93 / 0.90): its up-to-three units cover facts the one unit does not.
    """
    if picked is not None and not answers_across(question, reading, evidence):
        return narrowed_to_row(question, picked, reading, evidence)
    return reader_answer(question, reading, evidence, lead_margin) or picked


def narrowed_to_row(
    question: str, picked: ExtractiveAnswer, reading: Reading, evidence: Sequence[Evidence]
) -> ExtractiveAnswer:
    """`picked` with one table row in place of the whole table it quotes, when the question names the row.

    A short two-column table is one answer unit ("Level → Monthly fee: B1 → 120 EUR; B2 → 90 EUR; ..."):
    quoted whole, it answers "B2 per month" with every level's fee. When the reader's best span lies in
    a table of an item the answer cites, the row quoted is the span's row if the question names it by
    its first cell ("B2"), else the one row of that table the question names; no named row, or several,
    leave the picker's quote as it is. The reader points at the table; the question's row key picks
    the row, since the reader, trained on two CPU cores, points at a sibling row often enough ("120 EUR"
    for "B2"; on the tune parts narrowing to the span's row whatever it was lost 2 of 9 English
    handbook answers).
    """
    found = usable_span(reading, evidence)
    if found is None or found[1].id not in picked.evidence_ids:
        return picked
    span, item = found
    at = named_row(question, item.text, span.start)
    row = table_row_at(item.text, at) if at is not None else None
    if at is None or row is None:
        return picked
    value = _cells(item.text, at)[-1]
    units = [row if unit != row and value in unit and len(unit) > len(row) else unit for unit in picked.units]
    if units == picked.units:
        return picked
    answer = picked.answer
    for old, new in zip(picked.units, units, strict=True):
        if old != new:
            answer = answer.replace(old, new, 1)
    return ExtractiveAnswer(answer=answer, evidence_ids=picked.evidence_ids, units=units)


def named_row(question: str, text: str, offset: int) -> int | None:
    """The offset of the row the question names in the table of `text` holding `offset`, else None.

    The row holding `offset` (the reader's span) when `question` names it by its first cell ("B2"),
    else the one row of that table the question names; None outside a table, or with no named row or
    several.
    """
    if table_row_at(text, offset) is None:
        return None
    named = [at for at in _table_rows(text, offset) if _names_row(question, text, at)]
    own = [at for at in named if _holds(text, at, offset)]
    chosen = own or (named if len(named) == 1 else [])
    return chosen[0] if chosen else None


def _holds(text: str, row: int, offset: int) -> bool:
    """Whether the line of `text` starting at `row` holds character `offset`."""
    return row <= offset < text.find("\n", row) % (len(text) + 1)


def _table_rows(text: str, offset: int) -> list[int]:
    """The offsets of the data rows of the table of `text` that holds character `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    while start > 0 and text[text.rfind("\n", 0, start - 1) + 1 : start].lstrip().startswith("|"):
        start = text.rfind("\n", 0, start - 1) + 1
    rows = []
    at = start
    while at < len(text):
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if not text[at:end].lstrip().startswith("|"):
            break
        if table_row_at(text, at) is not None:
            rows.append(at)
        at = end + 1
    return rows


def _cells(text: str, offset: int) -> list[str]:
    """The readable cells of the table line of `text` holding character `offset`."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    line = text[start : end if end >= 0 else len(text)]
    return [readable_value(c) for c in line.strip().strip("|").split("|")]


def _names_row(question: str, text: str, offset: int) -> bool:
    """Whether `question` names the table row of `text` at `offset` by its first cell ("B2")."""
    key = _cells(text, offset)[0]
    if not key:
        return False
    if key.isascii():
        return re.search(rf"(?<![0-9a-z]){re.escape(key.lower())}(?![0-9a-z])", question.lower()) is not None
    return key in question


def answers_across(question: str, reading: Reading, evidence: Sequence[Evidence]) -> bool:
    """Whether `combined_answer` answers with the reader's span whatever the picker finds.

    That is when the best usable span stands in a chunk of the other language than the question; the
    caller can then skip the sentence picker.
    """
    found = usable_span(reading, evidence)
    return found is not None and is_chinese(found[1].text) != is_chinese(question)
