"""The pure parts of `benchmarks.e5_cross_encoder`: labels, training rows, held-out figures, AUC."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.e5_cross_encoder import _positive, auc, reranking_figures, training_rows
from haygraph.eval.agent_cases import AgentCase


def _row(
    case: str, rank: int, y: int, *, group: str = "handbook", part: str = "test", **extra: Any
) -> dict[str, Any]:
    row = {"group": group, "part": part, "case": case, "lang": "en", "absent": False, "q": "q?",
           "chunk": f"{case}-{rank}", "rank": rank, "fused": 1 / (60 + rank), "y": y}  # fmt: skip
    row.update(extra)
    return row


def test_a_positive_is_a_gold_chunk_holding_an_answer_string() -> None:
    case = AgentCase(
        id="a", question="q", lang="en", absent=False, gold_sources=("leave.md",), answers=("12 days",)
    )
    assert _positive(case, "leave.md", "You get 12  Days a year.")  # whitespace and case do not matter
    assert not _positive(case, "leave.md", "You get leave.")
    assert not _positive(case, "other.md", "You get 12 days.")
    absent = AgentCase(
        id="b", question="q", lang="en", absent=True, gold_sources=("leave.md",), answers=("12 days",)
    )
    assert not _positive(absent, "leave.md", "You get 12 days.")


def test_training_rows_read_tune_rows_only_and_sample_cmrc_negatives() -> None:
    rows = [_row("t1", r, int(r == 4), part="tune") for r in range(6)]
    rows += [_row("c1", r, int(r == 0), group="cmrc", part="tune") for r in range(10)]
    rows += [_row("x1", r, int(r == 0)) for r in range(5)]  # a test part: never trained on
    train = training_rows(rows)
    assert all(r["part"] == "tune" for r in train)
    assert sum(1 for r in train if r["case"] == "t1") == 7  # every candidate, the positive twice
    cmrc = [r for r in train if r["case"] == "c1"]
    assert len(cmrc) == 4 and sum(r["y"] for r in cmrc) == 1
    assert {r["rank"] for r in cmrc} >= {0, 1, 2}  # the positive and the two best-ranked negatives


def test_reranking_figures_compare_orders_on_answerable_test_questions() -> None:
    # the positive is third by fusion; the cross-encoder puts it first
    rows = [_row("q1", r, int(r == 2), p=0.9 if r == 2 else 0.1) for r in range(5)]
    rows += [_row("q2", r, 0, p=0.5) for r in range(5)]  # no positive among the candidates: skipped
    rows += [_row("q3", r, int(r == 0), absent=True, p=0.5) for r in range(5)]  # absent: skipped
    figures = reranking_figures(rows)["handbook/en"]
    assert math.isclose(figures["fused mrr"], 1 / 3)
    assert figures["fused top3"] == 1.0
    assert figures["cross-encoder mrr"] == 1.0
    assert set(figures) >= {"blend w=0.5 mrr", "blend w=0.5 top3"}


def test_auc_counts_ties_as_half_and_is_nan_without_one_side() -> None:
    assert auc([0.9, 0.8], [0.1]) == 1.0
    assert auc([0.5], [0.5]) == 0.5
    assert auc([0.1], [0.9, 0.2]) == 0.0
    assert math.isnan(auc([], [0.3]))
