"""Tests for eval.harness: run dicts, kept-set quality, latency percentiles, and a BM25 smoke run."""

from __future__ import annotations

import pytest
from haystack import Document

from haygraph.eval.configs import build_configs
from haygraph.eval.errors import EvalError
from haygraph.eval.harness import (
    ConfigRun,
    latency_summary,
    mean_set_quality,
    metric_names,
    parse_ks,
    run_dict,
    run_harness,
    set_quality,
    source_ranking,
    summarize,
)
from haygraph.eval.index_prep import datasets_root, whole_document_config
from haygraph.eval.metrics import evaluate
from haygraph.eval.report import results_to_markdown


class TestSourceRanking:
    def test_maps_chunks_to_sources_keeping_first_occurrence(self):
        docs = [
            Document(id="d2::aa", content="x", meta={"source_id": "d2"}),
            Document(id="d1::bb", content="y", meta={"source_id": "d1"}),
            Document(id="d2::cc", content="z", meta={"source_id": "d2"}),
            Document(id="d3::dd", content="w"),  # no source_id: falls back to the id prefix
        ]
        assert source_ranking(docs) == ["d2", "d1", "d3"]


class TestRunDict:
    def test_scores_preserve_the_ranking_exactly(self):
        # ids chosen so that id order would differ from rank order
        run = run_dict({"q": ["a", "z", "m"]})
        assert run == {"q": {"a": 1.0, "z": 0.5, "m": pytest.approx(1 / 3)}}
        # relevant doc at rank 2 -> MRR 0.5 (ranking order kept, not id order)
        assert evaluate({"q": {"z": 1}}, run, ["MRR@10"])["MRR@10"] == 0.5

    def test_duplicate_document_is_rejected(self):
        with pytest.raises(EvalError, match="twice"):
            run_dict({"q": ["a", "a"]})


class TestSetQuality:
    def test_hand_computed_values(self):
        # kept {a, b, c}, relevant {a, d}: P = 1/3, R = 1/2, F1 = 2*(1/3*1/2)/(1/3+1/2) = 0.4
        p, r, f1 = set_quality(["a", "b", "c"], {"a", "d"})
        assert (p, r) == (pytest.approx(1 / 3), 0.5)
        assert f1 == pytest.approx(0.4)

    def test_empty_kept_set(self):
        assert set_quality([], {"a"}) == (0.0, 0.0, 0.0)

    def test_mean_over_queries_and_fixed_size(self):
        ranked = {"q1": ["a", "b", "c", "d", "e", "f"], "q2": ["x"]}
        qrels = {"q1": {"f": 1}, "q2": {"x": 1}}
        full = mean_set_quality(ranked, qrels)
        top5 = mean_set_quality(ranked, qrels, 5)
        # q1 full: P 1/6, R 1; q2: P 1, R 1
        assert full["precision"] == pytest.approx((1 / 6 + 1) / 2)
        assert full["recall"] == 1.0
        # top-5 of q1 misses f: R 0
        assert top5["recall"] == 0.5


class TestLatency:
    def test_percentiles_interpolate_linearly(self):
        # positions (n-1)*q: p50 of 1..4 -> 1.5 -> 2.5; p95 -> 2.85 -> 3 + 0.85 = 3.85
        summary = latency_summary([4.0, 1.0, 3.0, 2.0])
        assert summary["p50"] == 2.5 and summary["p95"] == pytest.approx(3.85)
        assert latency_summary([7.0]) == {"p50": 7.0, "p95": 7.0, "mean": 7.0}

    def test_summary(self):
        summary = latency_summary([10.0, 20.0, 30.0])
        assert summary == {"p50": 20.0, "p95": pytest.approx(29.0), "mean": 20.0}
        assert latency_summary([]) == {}


class TestParseKs:
    def test_parses_sorts_and_dedupes(self):
        assert parse_ks("10,1,5,5") == (1, 5, 10)
        assert parse_ks(None) == (1, 3, 5, 10, 100)

    @pytest.mark.parametrize("bad", ["0,5", "a", "5,-1"])
    def test_rejects_bad_cutoffs(self, bad):
        with pytest.raises(EvalError):
            parse_ks(bad)

    def test_metric_names_cover_every_family_and_k(self):
        names = metric_names((5, 10))
        assert {"nDCG@10", "HitRate@5", "MRR@10", "Recall@5", "MAP@10"} <= set(names)
        assert len(names) == 10


class TestSummarize:
    def test_cut_config_reports_kept_set_and_fixed_top5(self):
        cut_cfg = build_configs(["bm25+cut"], whole_document_config(), depth=10)[0]
        qrels = {"q1": {"a": 1}, "q2": {"y": 1}}
        cut_run = ConfigRun(
            ranked={"q1": ["a"], "q2": ["x", "y"]}, chunks={"q1": 1, "q2": 2}, latencies_ms=[1.0, 3.0]
        )
        base_run = ConfigRun(ranked={"q1": ["a", "b", "c", "d", "e"], "q2": ["x", "y", "z", "w", "v"]})
        result = summarize(cut_cfg, cut_run, qrels, (1, 10), base_run, 2.5)
        assert result["chunks_kept_mean"] == 1.5
        # kept: q1 P 1 R 1; q2 P 1/2 R 1
        assert result["kept_set"]["precision"] == pytest.approx(0.75)
        assert result["kept_set"]["recall"] == 1.0
        # fixed top-5: P 1/5 for both queries
        assert result["fixed_top5"] == {
            "config": "bm25",
            "precision": 0.2,
            "recall": 1.0,
            "f1": pytest.approx(1 / 3),
        }
        assert result["latency_ms"]["p50"] == 2.0
        assert result["indexing_s"] == 2.5
        assert result["metrics"]["MRR@10"] == pytest.approx(0.75)


needs_med = pytest.mark.skipif(
    not (datasets_root() / "med" / "corpus.jsonl").is_file(),
    reason=f"shared datasets folder not found at {datasets_root()} (set HAYGRAPH_DATASETS)",
)


@needs_med
class TestHarnessSmoke:
    """End to end on the real `med` dataset: BM25 only (no model is loaded), first 5 queries."""

    def test_bm25_end_to_end(self, tmp_path):
        results = run_harness(
            "med", configs="bm25,bm25+cut", limit=5, ks=(1, 5, 10, 100), store_dir=tmp_path / "s"
        )
        assert results["dataset"] == "med" and results["num_queries"] == 5
        assert results["index"]["documents"] == 1033
        assert results["index"]["with_embeddings"] is False  # BM25-only runs embed nothing
        bm25 = results["configs"]["bm25"]
        assert bm25["metrics"]["nDCG@10"] > 0.3  # med is easy for BM25 (reference 0.674 on all queries)
        assert bm25["latency_ms"]["p95"] >= bm25["latency_ms"]["p50"] > 0
        assert bm25["chunks_kept_mean"] is None
        cut = results["configs"]["bm25+cut"]
        assert 1 <= cut["chunks_kept_mean"] <= 5
        assert cut["fixed_top5"]["config"] == "bm25"
        assert "| bm25+cut |" in results_to_markdown(results)
        # second run reuses the kept index
        again = run_harness("med", configs="bm25", limit=5, store_dir=tmp_path / "s")
        assert again["index"]["reused"] is True
        assert again["configs"]["bm25"]["metrics"]["nDCG@10"] == bm25["metrics"]["nDCG@10"]

    def test_tuned_file_from_the_same_split_is_refused(self):
        from haygraph.eval.configs import TunedParams

        tuned = TunedParams("rrf", (0.5, 0.5), 60, 100, 0.5, 5, dataset="med", split="test")
        with pytest.raises(EvalError, match="tuned on med/test"):
            run_harness("med", configs="bm25", limit=2, tuned=tuned)
