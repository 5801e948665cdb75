"""Tests for eval.reranker_blend: dev nDCG of a blend (hand-worked) and the choice of the retrieval weight."""

from __future__ import annotations

import math

import pytest

from haygraph.eval.reranker_blend import GRID, DevQuery, dev_ndcg, tune_blend


def _query(grades, fused, positives=1):
    docs = [f"doc{i}" for i in range(len(grades))]
    return DevQuery(
        query="q",
        documents=docs,
        fused=fused,
        grades=grades,
        positives=[d for d, g in zip(docs, grades, strict=True) if g > 0][:positives]
        + ["missed"] * max(0, positives - sum(g > 0 for g in grades)),
    )


class _FakeCrossEncoder:
    """`predict` returns a fixed score per document text (already a probability)."""

    def __init__(self, table):
        self.table = table

    def predict(self, pairs, batch_size, activation_fn):
        return [self.table[doc] for _, doc in pairs]


class TestDevNdcg:
    def test_hand_worked(self):
        # one relevant doc at index 1; fused puts it 2nd: nDCG = 1/log2(3) = 0.6309
        q = _query([0, 1, 0], fused=[0.9, 0.5, 0.1])
        assert dev_ndcg([q], [[0.1, 0.2, 0.3]], 1.0) == pytest.approx(1 / math.log2(3))
        # the reranker alone (w=0) puts doc2 (0.3) first, doc1 (0.2) second: same 0.6309
        assert dev_ndcg([q], [[0.1, 0.2, 0.3]], 0.0) == pytest.approx(1 / math.log2(3))
        # a reranker that puts it first: 1.0
        assert dev_ndcg([q], [[0.1, 0.9, 0.3]], 0.0) == pytest.approx(1.0)

    def test_relevant_documents_retrieval_missed_count_in_the_ideal(self):
        # 2 relevant, only one retrieved (ranked 1st): DCG 1, IDCG 1 + 1/log2(3) -> 0.6131
        q = _query([1, 0], fused=[0.9, 0.1], positives=2)
        assert dev_ndcg([q], [[0.9, 0.1]], 0.5) == pytest.approx(1 / (1 + 1 / math.log2(3)))


class TestTuneBlend:
    def test_picks_a_weight_that_helps_on_dev(self):
        # query A: fused right, reranker wrong by a hair; query B: reranker right, fused wrong by a hair.
        a = DevQuery("qa", ["a_rel", "a_non"], [1.0, 0.0], [1, 0], ["a_rel"])
        b = DevQuery("qb", ["b_non", "b_rel"], [1.0, 0.99], [0, 1], ["b_rel"])
        model = _FakeCrossEncoder({"a_rel": 0.50, "a_non": 0.52, "b_non": 0.1, "b_rel": 0.9})
        summary = tune_blend(model, [a, b])
        assert summary["dev_ndcg@10"]["blend"] == pytest.approx(1.0)
        assert summary["dev_ndcg@10"]["retrieval"] < 1.0 and summary["dev_ndcg@10"]["reranker"] < 1.0
        w = summary["retrieval_weight"]
        assert w in GRID and 0 < w < 0.9

    def test_reranker_alone_when_it_is_best(self):
        a = DevQuery("qa", ["x", "y"], [1.0, 0.0], [0, 1], ["y"])
        summary = tune_blend(_FakeCrossEncoder({"x": 0.1, "y": 0.9}), [a])
        assert summary["retrieval_weight"] == 0.0 and summary["dev_ndcg@10"]["reranker"] == 1.0

    def test_round_trip(self):
        q = _query([1, 0], [0.5, 0.2])
        assert DevQuery.from_dict(q.to_dict()) == q
