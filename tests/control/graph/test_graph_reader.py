"""The evaluate step with a reader: it reads the top evidence once, the decision weighs the margin, the
answer gives the span first and the result carries its offsets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from haygraph.control.api import result_from_state
from haygraph.control.evidence import Evidence
from haygraph.control.graph import build_graph
from haygraph.control.graph.context import Context
from haygraph.control.planning.decision.model import AnswerabilityModel
from haygraph.control.reading import AnswerSpan, Reading
from tests.control.graph_helpers import handbook_retriever

GRAPH = build_graph()

BY_MARGIN = AnswerabilityModel(
    weights={
        "en_reader_margin": 4.0,
        "en_bias": -1.0,
        "zh_reader_margin": 4.0,
        "zh_bias": -1.0,
    },
    lead_margin=0.0,
)
"""Answerable when the reader's margin (scaled by 1/4) is above 1: a decision on the reader alone; the
span's value leads the answer from margin 0 on."""


class ScriptedReader:
    """Points at `answer` in whichever evidence holds it, with `margin`; records what it read."""

    def __init__(self, answer: str, margin: float) -> None:
        self.answer = answer
        self.margin = margin
        self.calls: list[tuple[str, list[str]]] = []

    def read(self, question: str, evidence: Sequence[Evidence]) -> Reading:
        self.calls.append((question, [e.id for e in evidence]))
        spans = []
        for e in evidence:
            at = e.text.find(self.answer)
            if at >= 0:
                spans.append(
                    AnswerSpan(
                        evidence_id=e.id,
                        start=at,
                        end=at + len(self.answer),
                        text=self.answer,
                        margin=self.margin,
                    )
                )
        return Reading(spans=spans, margin=self.margin if spans else -20.0, read=[e.id for e in evidence])


def run(question: str, reader: ScriptedReader, **settings: Any) -> dict[str, Any]:
    context = Context(retriever=handbook_retriever(), reader=reader, answerability=BY_MARGIN, **settings)
    return GRAPH.invoke({"question": question}, context=context)


class TestReaderTurn:
    def test_a_confident_span_is_answered_and_its_offsets_reach_the_result(self) -> None:
        reader = ScriptedReader("20 days", margin=8.0)
        state = run("How many days of annual leave do employees get?", reader)
        assert state["status"] == "completed"
        # same language: the sentence picker's quote (`combined_answer`), the span in answer_spans
        assert state["answer"].startswith("Full-time employees receive 20 days of annual leave")
        assert state["evidence_ids"] == ["hr.md::leave"]
        assert state["decision"]["signals"]["reader_margin"] == 2.0  # 8 / MARGIN_SCALE
        # read once, the user's words, the top evidence only
        question, read = reader.calls[0]
        assert question == "How many days of annual leave do employees get?" and len(read) <= 3
        spans = result_from_state(state, 1.0)["answer_spans"]
        leave = next(e for e in state["evidence"] if e.id == "hr.md::leave")
        assert spans and leave.text[spans[0]["start"] : spans[0]["end"]] == "20 days"

    def test_a_low_margin_refuses_after_one_expansion(self) -> None:
        reader = ScriptedReader("20 days", margin=-6.0)
        state = run("How many days of annual leave do employees get?", reader)
        assert state["status"] == "insufficient_evidence"
        assert state["path"] == ["analyze", "retrieve", "evaluate", "expand", "evaluate", "generate"]
        assert len(reader.calls) == 2
        assert result_from_state(state, 1.0)["answer_spans"] == []

    def test_without_a_reader_nothing_is_read(self) -> None:
        state = GRAPH.invoke(
            {"question": "How many days of annual leave do employees get?"},
            context=Context(retriever=handbook_retriever()),
        )
        assert state["reading"] is None and result_from_state(state, 1.0)["answer_spans"] == []

    def test_a_rewrite_that_adds_words_is_what_the_reader_reads(self) -> None:
        from haygraph.control.graph.nodes import _adds_words

        assert not _adds_words("请问年假有几天？", "年假有几天")
        assert _adds_words("and for managers?", "annual leave for managers")


class AppendingRetriever:
    """One ranked chunk, then one chunk in the other language marked `OTHER_LANGUAGE` (as
    `HaystackRetriever(cross_language=...)` appends them)."""

    def retrieve(self, query: str, *, top_k: int = 5, filters: Any = None) -> list[Evidence]:
        return [
            Evidence(id="zh.md::1", text="年假规定见英文政策。", score=0.9, relevance=0.8, source="zh.md"),
            Evidence(
                id="en.md::1",
                text="Full-time employees receive 20 days of annual leave per year.",
                score=0.5,
                relevance=0.5,
                source="en.md",
                meta={"other_language": True},
            ),
        ]


class TestOtherLanguageItems:
    def test_they_are_read_but_never_the_decisions_evidence(self) -> None:
        reader = ScriptedReader("20 days", margin=8.0)
        context = Context(retriever=AppendingRetriever(), reader=reader, answerability=BY_MARGIN)
        # not a question for a required type: the rules after the model apply across languages too, and
        # a count asked over a page sharing no word with it is refused by `type absent`
        state = GRAPH.invoke({"question": "全职员工的年假是怎样规定的？"}, context=context)
        assert reader.calls[0][1] == ["zh.md::1", "en.md::1"]  # read, in one call with the top item
        assert state["status"] == "completed" and state["evidence_ids"] == ["en.md::1"]
        assert state["answer"].startswith("20 days — Full-time employees receive 20 days")
        assert "英文" in state["answer"]  # the source's language, said in the question's
