"""The decision's threshold picker (`train_answerability.best_threshold`) and its readings cache key."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.train_answerability import best_threshold, group_rates, reading_policy

EXAMPLES = [{"protocol": "p", "lang": "en", "id": f"p-{i}"} for i in range(16)]
Y = np.array([1] * 8 + [0] * 8)
PROB = np.array([0.9] * 6 + [0.45, 0.47] + [0.1] * 7 + [0.48])
"""Up to 0.44 everything answerable is answered and one unanswerable row too (balanced 0.9375); from
0.50 two answerable rows are refused and every unanswerable one (0.875)."""


def test_the_best_score_wins_without_a_tolerance() -> None:
    low = group_rates(EXAMPLES, PROB, Y, 0.44)["p/en"]
    high = group_rates(EXAMPLES, PROB, Y, 0.50)["p/en"]
    assert (low["answered"], low["refused"]) == (1.0, 0.875)
    assert (high["answered"], high["refused"]) == (0.75, 1.0)
    assert best_threshold(EXAMPLES, PROB, Y, min_refusal=0.0, tolerance=0.0) == 0.44  # ties: nearest 0.5


def test_within_the_tolerance_the_most_refusing_threshold_wins() -> None:
    assert best_threshold(EXAMPLES, PROB, Y, min_refusal=0.0, tolerance=0.07) == 0.5
    # the refusal floor still comes first: nothing below it competes
    assert best_threshold(EXAMPLES, PROB, Y, min_refusal=0.9, tolerance=0.0) == 0.5


def test_the_readings_cache_key_follows_how_items_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from haygraph.control.graph import nodes

    staged = reading_policy()
    assert reading_policy() == staged and len(staged) == 8
    monkeypatch.setattr(nodes, "CROSS_READ", 0)  # no other-language item read
    assert reading_policy() != staged
