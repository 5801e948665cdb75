"""Tests for retrieval.onnx_cross_encoder: export folder keys, pair length, the ranker contract."""

from __future__ import annotations

import os

import pytest
from haystack import Document

from haygraph.retrieval.cross_encoder_ranker import _OnnxRanker
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.onnx_cross_encoder import OnnxCrossEncoder, _max_length, export_dir_for


class TestExportDir:
    def test_a_retrained_model_gets_a_new_export(self, tmp_path):
        model = tmp_path / "m"
        model.mkdir()
        weights = model / "model.safetensors"
        weights.write_bytes(b"v1")
        first = export_dir_for(model, tmp_path / "cache")
        assert first.parent == tmp_path / "cache" / "onnx" and first.name.startswith("reranker-")
        assert export_dir_for(model, tmp_path / "cache") == first
        os.utime(weights, ns=(1, 1))
        assert export_dir_for(model, tmp_path / "cache") != first


class TestMaxLength:
    class _Tok:
        model_max_length = 160

    def test_from_the_tokenizer_or_the_old_config(self, tmp_path):
        assert _max_length(tmp_path, self._Tok()) == 160
        (tmp_path / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
        assert _max_length(tmp_path, self._Tok()) == 128
        huge = type("T", (), {"model_max_length": 10**30})()
        (tmp_path / "sentence_bert_config.json").write_text("{}")
        assert _max_length(tmp_path, huge) == 512


class TestOnnxRanker:
    class _Scorer:
        def score(self, query, documents, batch_size):
            return [len(d) / 10 for d in documents]

    def test_scores_dedups_and_sorts(self):
        docs = [
            Document(id="a", content="aa"),
            Document(id="b", content="bbbb"),
            Document(id="a", content="aa"),
        ]
        out = _OnnxRanker(self._Scorer(), 8).run(query="q", documents=docs, top_k=5)["documents"]
        assert [(d.id, d.score) for d in out] == [("b", 0.4), ("a", 0.2)]

    def test_missing_model_directory(self, tmp_path):
        pytest.importorskip("onnxruntime")
        with pytest.raises(ModelUnavailableError, match="needs a local model directory"):
            OnnxCrossEncoder(str(tmp_path / "nope"), tmp_path).warm_up()
