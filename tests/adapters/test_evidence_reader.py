"""The control plane's reader over the bundled trained reader: spans, and items read once per question."""

from __future__ import annotations

from typing import Any

import pytest

from haygraph.adapters.evidence_reader import MEMO_ITEMS, EvidenceReader
from haygraph.control.evidence import Evidence

pytestmark = pytest.mark.integration

PARKING = Evidence(
    id="p", text="Staff park on level B2. A monthly permit costs 90 EUR.", score=0.9, relevance=0.9
)
LEAVE = Evidence(id="l", text="Annual leave is 12 working days in the first year.", score=0.8, relevance=0.8)
QUESTION = "How much does a parking permit cost per month?"


@pytest.fixture(scope="module")
def reader() -> EvidenceReader:
    return EvidenceReader()


def counted(reader: EvidenceReader) -> list[int]:
    """Wrap the component's run: the list holds the number of documents of each call."""
    calls: list[int] = []
    run = reader.component.run

    def spy(query: str, documents: list[Any]) -> Any:
        calls.append(len(documents))
        return run(query=query, documents=documents)

    reader.component.run = spy  # type: ignore[method-assign]
    return calls


def test_the_answer_span_is_found_and_an_item_is_not_read_twice(reader: EvidenceReader) -> None:
    calls = counted(reader)
    first = reader.read(QUESTION, [PARKING, LEAVE])
    assert first.spans and first.spans[0].evidence_id == "p" and "90" in first.spans[0].text
    assert PARKING.text[first.spans[0].start : first.spans[0].end] == first.spans[0].text
    again = reader.read(QUESTION, [LEAVE, PARKING])
    assert again.spans == first.spans and again.read == ["l", "p"]
    assert calls == [2]  # the second read came from the memo
    other = Evidence(id="o", text="Visitors park at the front gate for free.", score=0.7, relevance=0.7)
    mixed = reader.read(QUESTION, [PARKING, other])
    assert calls == [2, 1]  # only the new item was read
    assert [s for s in mixed.spans if s.evidence_id == "p"] == [
        s for s in first.spans if s.evidence_id == "p"
    ]
    reader.read("Who may park there?", [PARKING])  # another question reads again
    assert calls == [2, 1, 1]


def test_the_memo_is_bounded(reader: EvidenceReader) -> None:
    for i in range(MEMO_ITEMS + 5):
        reader._memo[(f"q{i}", "t")] = []
    reader.read("Is there a bicycle rack?", [PARKING])  # a new item: the oldest go
    assert len(reader._memo) == MEMO_ITEMS and ("q0", "t") not in reader._memo
