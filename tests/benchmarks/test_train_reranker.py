"""Tests for benchmarks.train_reranker: pair mining from qrels and rankings, and the bad-input errors."""

from __future__ import annotations

import json

from benchmarks.results_page import default_check
from benchmarks.train_reranker import PAIRS_FILE, _load_pairs, _save_pairs, main, training_pairs


class TestTrainingPairs:
    def test_positives_and_hard_negatives(self):
        queries = {"q1": "what is x", "q2": "no judgments"}
        qrels = {"q1": {"d1": 1, "d9": 0}}
        corpus = {"d1": "x is one", "d2": "two", "d3": "three", "d4": "four", "d9": "nine"}
        # d1 is relevant and skipped as a negative; d9 is judged 0 -> not relevant -> a negative
        ranked = {"q1": ["d1", "d9", "d2", "d3", "d4"], "q2": ["d2"]}
        pairs = training_pairs(queries, qrels, corpus, ranked, negatives=2)
        assert sorted(pairs) == sorted(
            [("what is x", "x is one", 1.0), ("what is x", "nine", 0.0), ("what is x", "two", 0.0)]
        )

    def test_pairs_round_trip_through_the_resume_file(self, tmp_path):
        pairs = [("问题", "段落", 1.0), ("q", "d", 0.0)]
        _save_pairs(tmp_path / PAIRS_FILE, pairs)
        assert _load_pairs(tmp_path / PAIRS_FILE) == pairs
        assert _load_pairs(tmp_path / "missing.jsonl") is None


class TestBadInput:
    def test_dataset_without_the_split(self, tmp_path, capsys):
        (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
        (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
        (tmp_path / "qrels").mkdir()
        (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
        assert main(["--dataset", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and "train.tsv" in err and "splits found" in err and "test" in err

    def test_split_without_judgments(self, tmp_path, capsys):
        (tmp_path / "corpus.jsonl").write_text(json.dumps({"_id": "d1", "text": "x"}) + "\n")
        (tmp_path / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "x"}) + "\n")
        (tmp_path / "qrels").mkdir()
        (tmp_path / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n")
        assert main(["--dataset", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
        assert "no relevance judgments" in capsys.readouterr().err

    def test_test_split_refused(self, tmp_path, capsys):
        assert main(["--dataset", "scifact", "--split", "test", "--out", str(tmp_path)]) == 2
        assert "refusing to train on the test split" in capsys.readouterr().err


class TestDefaultCheck:
    def test_pass_and_fail(self):
        def results(default):
            return {
                "configs": {
                    "default": {"metrics": {"nDCG@10": default}},
                    "bm25": {"metrics": {"nDCG@10": 0.98}},
                    "dense": {"metrics": {"nDCG@10": 0.24}},
                }
            }

        assert default_check("cmrc2018", results(0.976))[0].endswith("pass")
        assert default_check("cmrc2018", results(0.61))[0].endswith("FAIL")
        assert default_check("x", {"configs": {"bm25": {"metrics": {"nDCG@10": 1.0}}}}) == []
