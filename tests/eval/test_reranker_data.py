"""Tests for eval.reranker_data: the training split rules, the dev carve-out and the pair mining."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.eval.errors import DatasetError
from haygraph.eval.reranker_data import (
    Pair,
    _ranked_sources,
    load_training_split,
    mining_query,
    split_dev,
    training_pairs,
)
from haygraph.retrieval.config import RetrievalConfig


def tiny_beir(root: Path, splits: dict[str, str]) -> Path:
    """A 3-document BEIR folder with one query and the given qrels files (split -> TSV body)."""
    root.mkdir(parents=True, exist_ok=True)
    docs = [("d1", "aspirin lowers fever"), ("d2", "cats sleep a lot"), ("d3", "fever in children")]
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in docs))
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "does aspirin lower fever"}) + "\n")
    (root / "qrels").mkdir(exist_ok=True)
    for split, body in splits.items():
        (root / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + body)
    return root


class TestLoadTrainingSplit:
    def test_loads_the_split(self, tmp_path):
        data = load_training_split(tiny_beir(tmp_path / "ds", {"train": "q1\td1\t1\n"}), "train")
        assert data.queries == {"q1": "does aspirin lower fever"} and data.qrels == {"q1": {"d1": 1}}

    def test_test_split_refused(self, tmp_path):
        with pytest.raises(DatasetError, match="--split test: a reranker is never trained on the test split"):
            load_training_split(tiny_beir(tmp_path / "ds", {"test": "q1\td1\t1\n"}), "test")

    def test_dataset_without_the_split(self, tmp_path):
        with pytest.raises(DatasetError, match=r"train\.tsv.*test"):
            load_training_split(tiny_beir(tmp_path / "ds", {"test": "q1\td1\t1\n"}), "train")

    def test_split_without_judgments(self, tmp_path):
        with pytest.raises(DatasetError, match=r"--split train: .* has no relevance judgments"):
            load_training_split(tiny_beir(tmp_path / "ds", {"train": ""}), "train")


class TestSplitDev:
    def test_deterministic_disjoint_and_sized(self):
        ids = [f"q{i}" for i in range(50)]
        train, dev = split_dev(ids, 0.1, seed=3)
        assert len(dev) == 5 and len(train) == 45 and not set(train) & set(dev)
        assert split_dev(list(reversed(ids)), 0.1, seed=3) == (train, dev)  # input order does not matter
        assert split_dev(ids, 0.1, seed=4)[1] != dev

    def test_edges(self):
        assert split_dev(["a", "b", "c"], 0.0) == (["a", "b", "c"], [])
        assert split_dev(["a"], 0.5) == (["a"], [])
        assert len(split_dev(["a", "b", "c"], 0.01)[1]) == 1  # at least one dev query
        with pytest.raises(ValueError, match=r"dev fraction must be in \[0, 0.5\], but got 0.9"):
            split_dev(["a", "b"], 0.9)


class TestTrainingPairs:
    def test_positives_and_hard_negatives(self):
        queries = {"q1": "what is x", "q2": "no judgments"}
        qrels = {"q1": {"d1": 1, "d9": 0}}
        corpus = {"d1": "x is one", "d2": "two", "d3": "three", "d4": "four", "d9": "nine"}
        # d1 is relevant, so not a negative; d9 is judged 0 (not relevant), so it is one; 2 negatives
        candidates = {"q1": [("d1", 0.9), ("d9", 0.8), ("d2", 0.7), ("d3", 0.6)], "q2": [("d2", 1.0)]}
        pairs = training_pairs(queries, qrels, corpus, candidates, negatives=2)
        assert sorted(pairs, key=lambda p: p.document) == [
            Pair("what is x", "nine", 0.0),
            Pair("what is x", "two", 0.0),
            Pair("what is x", "x is one", 1.0),
        ]

    def test_positive_missed_by_retrieval_still_trains(self):
        pairs = training_pairs(
            {"q": "t"}, {"q": {"d5": 2}}, {"d5": "five", "d1": "one"}, {"q": [("d1", 1.0)]}, 3
        )
        assert set(pairs) == {Pair("t", "five", 1.0), Pair("t", "one", 0.0)}


class TestMiningHelpers:
    def test_mining_query_is_hybrid_minmax_without_cut_or_reranker(self):
        config = RetrievalConfig().with_overrides(query={"reranker": {"model": "/some/model"}})
        q = mining_query(config)
        assert (q.mode, q.fusion.method, q.cut.enabled, q.reranker.model) == ("hybrid", "minmax", False, None)

    def test_ranked_sources_first_chunk_per_document(self):
        from haystack import Document

        docs = [
            Document(id="a::1", content="x", score=0.9, meta={"source_id": "a"}),
            Document(id="b::1", content="y", score=0.5, meta={"source_id": "b"}),
            Document(id="a::2", content="z", score=0.4, meta={"source_id": "a"}),
            Document(id="c::1", content="w", score=0.1),
        ]
        assert _ranked_sources(docs) == [("a", 0.9), ("b", 0.5), ("c", 0.1)]
