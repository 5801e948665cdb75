"""The reader's scores apart from its threshold (`benchmarks.eval_reader`)."""

from __future__ import annotations

import math

import pytest

from benchmarks.eval_reader import best_threshold, span_f1

ROWS = [
    {"id": "a", "golds": ["seven am"]},
    {"id": "b", "golds": ["opens daily"]},
    {"id": "c", "golds": []},  # unanswerable
]


def test_span_f1_scores_the_best_span_of_answerable_rows_whatever_its_margin():
    preds = [("seven am", -3.0), ("opens", 2.0), ("anything", -9.0)]
    # "a" right though refused at 0 (100); "opens" is half of "b"'s words (F1 66.7); "c" left out
    assert span_f1(ROWS, preds) == pytest.approx((100 + 200 / 3) / 2)
    assert best_threshold(ROWS, preds)[1] < 100.0  # the refusal line cannot make "b" right


def test_span_f1_is_nan_without_an_answerable_row():
    assert math.isnan(span_f1(ROWS[2:], [("x", 1.0)]))
