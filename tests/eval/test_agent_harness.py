"""Tests for the agent harness's scoring and aggregation (no model, no store)."""

from __future__ import annotations

from typing import Any

import pytest

from haygraph.eval.agent_cases import AgentCase
from haygraph.eval.agent_harness import aggregate, format_report, score_reply


def result(
    status: str, answer: str = "", cited: tuple[str, ...] = (), sources: dict[str, str] | None = None
) -> dict[str, Any]:
    sources = sources or {}
    return {
        "status": status,
        "answer": answer,
        "evidence_ids": list(cited),
        "evidence": [{"id": i, "text": "", "score": 1.0, "source": s} for i, s in sources.items()],
    }


PRESENT = AgentCase(
    id="q1", question="?", lang="zh", absent=False, gold_sources=("P1",), answers=("光荣", "ω-force")
)
ABSENT = AgentCase(id="q2", question="?", lang="zh", absent=True, gold_sources=("P2",))
HANDBOOK = AgentCase(
    id="h1",
    question="?",
    lang="en",
    absent=False,
    gold_sources=("a.md",),
    answers=("12 days", "15 days"),
    all_answers=True,
)


class TestScoreReply:
    def test_present_case_answered_with_gold_and_cited(self) -> None:
        checks = score_reply(PRESENT, result("completed", "由光荣开发 [c1]", ("c1",), {"c1": "P1"}))
        assert checks == {"answered_correct": True, "cited_gold": True, "false_refusal": False}

    def test_present_case_citing_another_passage(self) -> None:
        checks = score_reply(PRESENT, result("completed", "别的", ("c2",), {"c2": "P9"}))
        assert checks == {"answered_correct": False, "cited_gold": False, "false_refusal": False}

    def test_refusals(self) -> None:
        assert score_reply(ABSENT, result("insufficient_evidence")) == {"refused_when_absent": True}
        assert score_reply(ABSENT, result("completed", "x")) == {"refused_when_absent": False}
        assert score_reply(PRESENT, result("insufficient_evidence"))["false_refusal"] is True

    def test_absent_case_answered_with_a_gold_string_is_still_a_failure_but_counted(self) -> None:
        # the fact is also stated in a kept passage: reported as gold_elsewhere, still not refused
        absent = AgentCase(
            id="q3", question="?", lang="zh", absent=True, gold_sources=("P3",), answers=("1977年",)
        )
        right = score_reply(absent, result("completed", "1977年，宣布退役。 [c9]", ("c9",), {"c9": "P8"}))
        assert right == {"refused_when_absent": False, "gold_elsewhere": True}
        wrong = score_reply(absent, result("completed", "1981年 [c9]", ("c9",), {"c9": "P8"}))
        assert wrong == {"refused_when_absent": False, "gold_elsewhere": False}
        refused = score_reply(absent, result("insufficient_evidence"))
        assert refused == {"refused_when_absent": True, "gold_elsewhere": False}
        figures = aggregate([(absent, right), (absent, refused)])
        assert figures["zh"]["gold_elsewhere"] == 0.5 and figures["zh"]["refused_when_absent"] == 0.5
        report = {
            "protocol": "cmrc",
            "cases": 2,
            "modes": {"bm25": {"figures": figures, "latency_ms_p50": 1.0}},
        }
        assert any("(gold_elsewhere=0.500)" in line for line in format_report(report))

    def test_handbook_needs_every_fact_whitespace_insensitive(self) -> None:
        both = result("completed", "12  days or 15 days", ("c",), {"c": "a.md"})
        one = result("completed", "12 days", ("c",), {"c": "a.md"})
        assert score_reply(HANDBOOK, both)["answered_correct"] is True
        assert score_reply(HANDBOOK, one)["answered_correct"] is False

    def test_quoting_another_row_is_not_a_correct_answer(self) -> None:
        case = AgentCase(
            id="t",
            question="?",
            lang="en",
            absent=False,
            gold_sources=("a.docx",),
            answers=("90 EUR",),
            all_answers=True,
            excludes=("120 EUR",),
        )
        row = result("completed", "Level B2 → Monthly fee: 90 EUR [c]", ("c",), {"c": "a.docx"})
        table = result("completed", "B1 → 120 EUR; B2 → 90 EUR [c]", ("c",), {"c": "a.docx"})
        assert score_reply(case, row)["answered_correct"] is True
        assert score_reply(case, table) == {
            "answered_correct": False,
            "cited_gold": True,
            "false_refusal": False,
        }

    def test_no_answer_strings_is_not_scored(self) -> None:
        case = AgentCase(id="s", question="?", lang="en", absent=False, gold_sources=("d1",))
        assert score_reply(case, result("completed", "x", ("c",), {"c": "d1"}))["answered_correct"] is None


class TestAggregate:
    def test_rates_per_language_and_all(self) -> None:
        rows = [
            (PRESENT, {"answered_correct": True, "cited_gold": True, "false_refusal": False}),
            (PRESENT, {"answered_correct": False, "cited_gold": True, "false_refusal": False}),
            (ABSENT, {"refused_when_absent": True}),
            (HANDBOOK, {"answered_correct": None, "cited_gold": False, "false_refusal": True}),
        ]
        figures = aggregate(rows)
        assert figures["zh"] == {
            "answered_correct": 0.5,
            "cited_gold": 1.0,
            "refused_when_absent": 1.0,
            "false_refusal": 0.0,
            "gold_elsewhere": None,
            "present": 2,
            "absent": 1,
        }
        assert figures["en"]["answered_correct"] is None and figures["en"]["refused_when_absent"] is None
        assert figures["all"]["cited_gold"] == pytest.approx(2 / 3)
        report = {
            "protocol": "cmrc",
            "cases": 4,
            "modes": {"bm25": {"figures": figures, "latency_ms_p50": 12.0}},
        }
        lines = format_report(report)
        assert lines[0] == "cmrc: 4 cases" and any("answered_correct=n/a" in line for line in lines)

    def test_cross_language_cases_are_grouped_and_printed_by_direction(self) -> None:
        en_zh = AgentCase(id="x-a", question="?", lang="en->zh", absent=True)
        zh_en = AgentCase(id="x-b", question="？", lang="zh->en", absent=True)
        figures = aggregate([(en_zh, {"refused_when_absent": True}), (zh_en, {"refused_when_absent": False})])
        assert set(figures) == {"all", "en->zh", "zh->en"}
        assert (figures["en->zh"]["refused_when_absent"], figures["zh->en"]["refused_when_absent"]) == (
            1.0,
            0.0,
        )
        report = {
            "protocol": "handbook-cross",
            "cases": 2,
            "modes": {"hybrid": {"figures": figures, "latency_ms_p50": 1.0}},
        }
        lines = format_report(report)
        assert "  hybrid all    present=  0 absent=  2" in lines[1]
        assert "  hybrid en->zh present=  0 absent=  1" in lines[2]
