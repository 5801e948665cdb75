"""Tests for benchmarks.results_page: reference parsing, hybrid-vs-bm25 verdicts, section rendering."""

from __future__ import annotations

from benchmarks.results_page import (
    acceptance,
    best_hybrid,
    build_page,
    dataset_section,
    default_check,
    parse_reference_table,
    parse_scifact_baselines,
    verdict,
)

README = """
| name | lang | docs |
|---|---|---|
| scifact | en | 5,183 |

| name | hit@5 | MRR@10 | nDCG@10 | R@10 | R@100 | MAP |
|---|---|---|---|---|---|---|
| scifact | 0.740 | 0.630 | 0.661 | 0.778 | 0.886 | 0.624 |
| med | 1.000 | 0.887 | 0.674 | 0.303 | 0.780 | 0.494 |

After.
"""

SCIFACT = """
| system | nDCG@10 | other | source |
|---|---|---|---|
| BM25 (Elasticsearch, BEIR paper) | 0.665 | | x |
| BM25 flat (Anserini/Lucene, k1=0.9 b=0.4) | 0.6789 | R@100 0.9253 | y |
| all-MiniLM-L6-v2 (dense) | 0.64508 | MAP@10 0.59593 | z |

Sanity check.
"""


def _results(bm25, dense, hybrid, minmax):
    def cfg(v):
        return {"metrics": {"nDCG@10": v, "HitRate@5": 0.9}, "latency_ms": {"p50": 1.0, "p95": 2.0}}

    configs = {"bm25": cfg(bm25), "dense": cfg(dense), "hybrid": cfg(hybrid), "hybrid-minmax": cfg(minmax)}
    configs["hybrid+cut"] = {**cfg(0.99), "kept_set": {"precision": 0.5, "recall": 0.4}}
    configs["hybrid+rerank"] = {"metrics": {}, "latency_ms": {}, "skipped": "no model"}
    return {"dataset": "d", "split": "test", "num_queries": 3, "index": {"documents": 10}, "configs": configs}


class TestParsing:
    def test_reference_table(self):
        refs = parse_reference_table(README)
        assert set(refs) == {"scifact", "med"}  # the first table is not the reference one
        assert refs["med"]["nDCG@10"] == 0.674 and refs["scifact"]["HitRate@5"] == 0.74
        assert refs["scifact"]["Recall@100"] == 0.886 and refs["scifact"]["MAP"] == 0.624

    def test_scifact_baselines(self):
        base = parse_scifact_baselines(SCIFACT)
        assert base["BM25 flat (Anserini/Lucene, k1=0.9 b=0.4)"] == 0.6789
        assert base["all-MiniLM-L6-v2 (dense)"] == 0.64508 and len(base) == 3


class TestVerdict:
    def test_best_hybrid_ignores_cut_configs(self):
        assert best_hybrid(_results(0.6, 0.5, 0.65, 0.7)) == ("hybrid-minmax", 0.7)

    def test_yes_and_no_with_reason(self):
        assert verdict(_results(0.6, 0.5, 0.65, 0.7)).startswith("Yes")
        text = verdict(_results(0.6, 0.3, 0.5, 0.55))
        assert text.startswith("No") and "Dense retrieval alone scores 0.3000" in text

    def test_acceptance_flags_failures(self):
        lines = acceptance(
            {"scifact": _results(0.679, 0.6, 0.7, 0.71)}, {"Anserini": 0.6789, "MiniLM": 0.645}
        )
        assert any("bm25" in line and "pass" in line for line in lines)
        assert any("dense" in line and "FAIL" in line for line in lines)
        assert any("0.72" in line and "FAIL" in line for line in lines)


class TestSection:
    def test_renders_rows_skips_reference_and_verdict(self):
        text = dataset_section(_results(0.6, 0.5, 0.65, 0.7), {"nDCG@10": 0.674, "MAP": 0.5}, ["note"])
        assert "| hybrid+rerank | skipped: no model |" in text
        assert "| hybrid+cut | 0.9900" in text and "0.500 / 0.400" in text
        assert "reference BM25" in text and "0.6740" in text and "0.5000" in text
        assert "note" in text and "**Best hybrid vs bm25:** Yes" in text


class TestBuildPage:
    def test_saved_results_are_shown_without_running_and_missing_datasets_named(self):
        saved = {"med": {**_results(0.6, 0.5, 0.65, 0.7), "dataset": "med"}}
        page, results = build_page(["med"], saved=saved)
        assert results == saved
        assert "## med (test, 3 queries, 10 documents)" in page
        assert "python -m benchmarks.results_page" in page
        assert "Not generated in this run: scifact, cmrc2018, cranfield, cisi, cacm" in page

    def test_the_page_shows_the_command_that_made_it(self):
        saved = {"med": {**_results(0.6, 0.5, 0.65, 0.7), "dataset": "med"}}
        page, _ = build_page(["med"], saved=saved, command="python -m benchmarks.results_page --no-tune")
        assert "python -m benchmarks.results_page --no-tune\n" in page


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
