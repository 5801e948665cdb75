"""A cited span names the page that holds it, not its chunk's first page (issue 49)."""

from __future__ import annotations

from haygraph.control.api import cited_spans
from haygraph.control.evidence import Evidence

TEXT = "Cafeteria opens at 11:30.\n\nThe bicycle shed closes at 22:00.\n\nLost property: reception."


def _item(**extra: object) -> Evidence:
    return Evidence(id="h.pdf#0", text=TEXT, score=1.0, source="h.pdf", **extra)  # type: ignore[arg-type]


def test_page_at_follows_the_page_breaks_of_a_chunk() -> None:
    item = _item(page=4, page_breaks=[(27, 5), (62, 6)])
    assert [item.page_at(offset) for offset in (0, 26, 27, 61, 62, 500)] == [4, 4, 5, 5, 6, 6]
    assert _item(page=3).page_at(50) == 3  # one page: the chunk's own
    assert _item().page_at(0) is None  # a source without pages


def test_cited_spans_carry_the_page_of_their_start() -> None:
    item = _item(page=1, page_breaks=[(27, 2), (62, 3)])
    start = TEXT.index("22:00")
    reading = {
        "spans": [
            {"evidence_id": item.id, "start": start, "end": start + 5, "text": "22:00", "margin": 2.0},
            {"evidence_id": "other", "start": 0, "end": 4, "text": "x", "margin": 1.0},
        ]
    }
    [span] = cited_spans(reading, [item.id], [item])
    assert span["page"] == 2 and span["text"] == "22:00"
    assert cited_spans(reading, [item.id])[0]["page"] is None  # evidence unknown: no page claimed
