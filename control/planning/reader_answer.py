"""The offline answer from the reader's span: the value first, then the unit that holds it, cited.

"How much is parking on level B2 per month?" over a fee table reads ``90 EUR — Level B2 → Monthly
fee: 90 EUR [policy.md#2]``: the span the reader points at (`haygraph.control.reading`), then the answer
unit of its chunk that holds it (a sentence, a list item, a table row with its header: `answer_units`),
then the evidence id. When the span is the unit (or nearly all of it) the unit alone is quoted. When
the question and the chunk are in different languages, a note says in the question's language which
language the source is in (the span stays in the source's words: it is a quote).
"""

from __future__ import annotations

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


def reader_answer(question: str, reading: Reading, evidence: Sequence[Evidence]) -> ExtractiveAnswer | None:
    """The answer from the best usable span: span, the unit holding it, ``[id]``; None without a span."""
    found = usable_span(reading, evidence)
    if found is None:
        return None
    span, item = found
    value = readable_value(span.text) or " ".join(span.text.split())
    unit = holding_unit(item.text, span.start, span.end) or value
    if len(value) >= NEARLY_ALL * len(unit):
        text = unit
    else:
        text = f"{value}{'——' if is_chinese(unit) else ' — '}{unit}"
    note = source_note(question, item.text)
    answer = f"{text} [{item.id}]" + (f" {note}" if note else "")
    return ExtractiveAnswer(answer=answer, evidence_ids=[item.id], units=[unit])


def combined_answer(
    question: str, reading: Reading, evidence: Sequence[Evidence], picked: ExtractiveAnswer | None
) -> ExtractiveAnswer | None:
    """The offline answer from the reader's best span and the sentence picker's answer `picked`.

    - The span's chunk is in the other language than the question (or the picker found nothing):
      `reader_answer`, the span's value and the unit holding it. The picker matches words and finds
      little across languages: on XQuAD the unit holding the reader's span contained the gold answer
      for 58-65% of cross-language questions, the picker's answer for 39-42%.
    - Otherwise `picked`, unchanged: on XQuAD's same-language questions the picker's answer contained the
      gold more often (92-94%) than the reader's unit (84-85%), and the reader trained on two CPU cores
      can point at a wrong value ("5 days" over a 12/15/20-day table) that would lead the answer. Its
      span still reaches the result (`answer_spans`) and the highlight.
    """
    if picked is not None and not answers_across(question, reading, evidence):
        return picked
    return reader_answer(question, reading, evidence) or picked


def answers_across(question: str, reading: Reading, evidence: Sequence[Evidence]) -> bool:
    """Whether `combined_answer` answers with the reader's span whatever the picker finds.

    That is when the best usable span stands in a chunk of the other language than the question; the
    caller can then skip the sentence picker.
    """
    found = usable_span(reading, evidence)
    return found is not None and is_chinese(found[1].text) != is_chinese(question)
