"""Tests for retrieval.cross_encoder_ranker: the score blend, the recommended weight, the component."""

from __future__ import annotations

import json

import pytest
from haystack import Document

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.cross_encoder_ranker import (
    MODEL_INFO_FILE,
    BlendedSimilarityRanker,
    blend_scores,
    min_max,
    model_retrieval_weight,
)
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.pipelines import build_query_pipeline
from tests.retrieval.store_helpers import small_store


class _FakeStockRanker:
    """Stands in for SentenceTransformersSimilarityRanker: scores by a fixed table, best first."""

    def __init__(self, table: dict[str, float]) -> None:
        self.table = table
        self.seen: list[str] = []

    def run(self, query, documents, top_k):
        self.seen = [d.id for d in documents]
        scored = [
            Document(id=d.id, content=d.content, meta=d.meta, score=self.table[d.id]) for d in documents
        ]
        return {"documents": sorted(scored, key=lambda d: d.score, reverse=True)[:top_k]}


def _ranker(table, **kwargs):
    ranker = BlendedSimilarityRanker(model="unused", **kwargs)
    ranker._ranker = _FakeStockRanker(table)  # patch the model: no cross-encoder is loaded
    return ranker


class TestBlend:
    def test_min_max(self):
        assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
        assert min_max([0.3, 0.3]) == [1.0, 1.0]
        assert min_max([]) == []

    def test_hand_worked_blend(self):
        # fused [0.2, 0.6, 0.4] -> min-max [0, 1, 0.5]; w = 0.25:
        # 0.25*0 + 0.75*0.9 = 0.675; 0.25*1 + 0.75*0.1 = 0.325; 0.25*0.5 + 0.75*0.5 = 0.5
        assert blend_scores([0.2, 0.6, 0.4], [0.9, 0.1, 0.5], 0.25) == pytest.approx([0.675, 0.325, 0.5])
        assert blend_scores([0.2, 0.6], [0.9, 0.1], 0.0) == pytest.approx([0.9, 0.1])

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="differ in length"):
            blend_scores([1.0], [0.5, 0.5], 0.1)
        with pytest.raises(ValueError, match=r"retrieval_weight must be in \[0, 1\], but got 1.5"):
            blend_scores([1.0], [0.5], 1.5)


class TestModelRetrievalWeight:
    def test_read_absent_and_bad(self, tmp_path):
        assert model_retrieval_weight(tmp_path) is None
        (tmp_path / MODEL_INFO_FILE).write_text(json.dumps({"retrieval_weight": 0.3}), encoding="utf-8")
        assert model_retrieval_weight(tmp_path) == 0.3
        (tmp_path / MODEL_INFO_FILE).write_text(json.dumps({"retrieval_weight": 3}), encoding="utf-8")
        with pytest.raises(ConfigError, match="not in"):
            model_retrieval_weight(tmp_path)
        (tmp_path / MODEL_INFO_FILE).write_text("{oops", encoding="utf-8")
        with pytest.raises(ConfigError, match="cannot read"):
            model_retrieval_weight(tmp_path)


class TestBlendedSimilarityRanker:
    def test_reranks_the_head_and_keeps_the_tail(self):
        docs = [
            Document(id=i, content=i, score=s) for i, s in [("a", 0.9), ("b", 0.8), ("c", 0.1), ("d", 0.05)]
        ]
        ranker = _ranker({"a": 0.2, "b": 0.7, "c": 0.99, "d": 0.99}, top_k=10, top_k_in=2)
        out = ranker.run(query="q", documents=docs)["documents"]
        assert ranker._ranker.seen == ["a", "b"]  # only the head goes to the cross-encoder
        assert [d.id for d in out] == ["b", "a", "c", "d"]
        assert [d.score for d in out[2:]] == [0.0, 0.0]
        assert out[0].meta["reranker_score"] == 0.7
        assert [d.score for d in docs] == [0.9, 0.8, 0.1, 0.05]  # inputs untouched

    def test_retrieval_weight_can_keep_the_fused_order(self):
        docs = [Document(id="a", content="a", score=1.0), Document(id="b", content="b", score=0.0)]
        # reranker prefers b by 0.1; fused prefers a by 1.0 (min-max): w = 0.5 -> a 0.5+0.25, b 0+0.3
        out = _ranker({"a": 0.5, "b": 0.6}, retrieval_weight=0.5).run(query="q", documents=docs)
        assert [d.id for d in out["documents"]] == ["a", "b"]
        out = _ranker({"a": 0.5, "b": 0.6}, retrieval_weight=0.0).run(query="q", documents=docs)
        assert [d.id for d in out["documents"]] == ["b", "a"]

    def test_top_k_and_empty_input(self):
        docs = [Document(id=i, content=i, score=1.0) for i in "abc"]
        ranker = _ranker({"a": 0.1, "b": 0.2, "c": 0.3}, top_k=2)
        assert [d.id for d in ranker.run(query="q", documents=docs)["documents"]] == ["c", "b"]
        assert [d.id for d in ranker.run(query="q", documents=docs, top_k=1)["documents"]] == ["c"]
        assert ranker.run(query="q", documents=[]) == {"documents": []}
        with pytest.raises(ValueError, match="top_k must be > 0, but got 0"):
            ranker.run(query="q", documents=docs, top_k=0)

    def test_init_validation(self):
        with pytest.raises(ValueError, match="retrieval_weight"):
            BlendedSimilarityRanker(model="m", retrieval_weight=-0.1)
        with pytest.raises(ValueError, match="top_k_in must be > 0"):
            BlendedSimilarityRanker(model="m", top_k_in=0)
        with pytest.raises(ValueError, match="backend must be one of torch, onnx, onnx-int8, but got 'gpu'"):
            BlendedSimilarityRanker(model="m", backend="gpu")

    def test_to_dict_round_trip(self):
        ranker = BlendedSimilarityRanker(
            model="m", top_k=5, retrieval_weight=0.2, top_k_in=20, backend="onnx-int8"
        )
        data = ranker.to_dict()
        assert data == {
            "type": "haygraph.retrieval.cross_encoder_ranker.BlendedSimilarityRanker",
            "init_parameters": {
                "model": "m",
                "top_k": 5,
                "retrieval_weight": 0.2,
                "top_k_in": 20,
                "batch_size": 16,
                "backend": "onnx-int8",
            },
        }
        back = BlendedSimilarityRanker.from_dict(data)
        assert (back.model, back.top_k, back.retrieval_weight, back.top_k_in) == ("m", 5, 0.2, 20)
        assert back.backend == "onnx-int8"


class TestPipelineWeight:
    def _model_dir(self, tmp_path, weight):
        (tmp_path / "config.json").write_text('{"architectures": ["BertForSequenceClassification"]}')
        (tmp_path / MODEL_INFO_FILE).write_text(json.dumps({"retrieval_weight": weight}))
        return str(tmp_path)

    def test_weight_from_the_model_dir_unless_configured(self, tmp_path):
        path = self._model_dir(tmp_path, 0.3)
        q = QueryConfig(mode="bm25", cut={"enabled": False}, reranker={"model": path, "top_k_in": 7})
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), q)
        reranker = pipe.get_component("reranker")
        assert info.reranked and isinstance(reranker, BlendedSimilarityRanker)
        assert (reranker.retrieval_weight, reranker.top_k_in) == (0.3, 7)
        q = q.model_copy(update={"reranker": q.reranker.model_copy(update={"retrieval_weight": 0.0})})
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert pipe.get_component("reranker").retrieval_weight == 0.0
