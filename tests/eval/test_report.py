"""Tests of eval.report: the Markdown table and the PNG plot."""

from __future__ import annotations

import struct
import sys

import pytest

from haygraph.eval.errors import EvalError, ReportError
from haygraph.eval.report import plot_results, results_to_markdown

RESULTS = {
    "dataset": "scifact",
    "split": "test",
    "num_queries": 300,
    "configs": {
        "bm25": {
            "metrics": {"nDCG@10": 0.6569, "HitRate@5": 0.7367, "MRR@10": 0.6238, "Recall@100": 0.8759},
            "latency_ms": {"p50": 1.24, "p95": 3.51},
            "chunks_kept_mean": None,
        },
        "dense": {
            "metrics": {"nDCG@10": 0.6451, "HitRate@5": 0.7500, "MRR@10": 0.6012, "Recall@100": 0.9250},
            "latency_ms": {"p50": 4.0, "p95": 6.25},
            "chunks_kept_mean": 10.0,
        },
        "hybrid+rerank|cut": {
            "metrics": {"nDCG@10": 0.7012, "HitRate@5": 0.7500, "MRR@10": 0.6600},
            "latency_ms": {"p50": 80.5, "p95": 120.0},
            "chunks_kept_mean": 2.35,
            "extra": "ignored",
        },
    },
}


def _rows(markdown: str) -> dict[str, list[str]]:
    rows = {}
    for line in markdown.splitlines():
        if line.startswith("| ") and not line.startswith("| ---") and not line.startswith("| config"):
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            rows[cells[0]] = cells[1:]
    return rows


class TestResultsToMarkdown:
    def test_one_row_per_config_with_header(self):
        markdown = results_to_markdown(RESULTS)
        lines = markdown.splitlines()
        assert lines[0] == "### Retrieval results: scifact (test, 300 queries, 3 configs)"
        assert (
            lines[2]
            == "| config | nDCG@10 | HitRate@5 | MRR@10 | Recall@100 | p50 ms | p95 ms | chunks kept |"
        )
        rows = _rows(markdown)
        assert list(rows) == ["bm25", "dense", "hybrid+rerank\\|cut"]  # the pipe is escaped

    def test_best_per_metric_is_bold_and_ties_all_bold(self):
        rows = _rows(results_to_markdown(RESULTS))
        # nDCG@10: hybrid best; HitRate@5: dense and hybrid tie at 0.7500; Recall@100: dense
        assert rows["hybrid+rerank\\|cut"][0] == "**0.7012**"
        assert rows["bm25"][0] == "0.6569"
        assert rows["dense"][1] == "**0.7500**" and rows["hybrid+rerank\\|cut"][1] == "**0.7500**"
        assert rows["bm25"][1] == "0.7367"
        assert rows["dense"][3] == "**0.9250**"

    def test_latency_chunks_and_missing_values(self):
        rows = _rows(results_to_markdown(RESULTS))
        assert rows["bm25"][4:] == ["1.2", "3.5", "–"]  # chunks_kept_mean null -> dash
        assert rows["hybrid+rerank\\|cut"][3] == "–"  # Recall@100 missing
        assert rows["hybrid+rerank\\|cut"][4:] == ["80.5", "120.0", "2.35"]

    def test_does_not_mutate_results(self):
        import copy

        before = copy.deepcopy(RESULTS)
        results_to_markdown(RESULTS)
        assert before == RESULTS

    @pytest.mark.parametrize(
        ("results", "message"),
        [
            ([], "must be a mapping"),
            ({"dataset": "x"}, "configs"),
            ({"configs": {}}, "configs"),
            ({"configs": {"a": 3}}, "config 'a' must be a mapping"),
            ({"configs": {"a": {"metrics": [0.5]}}}, '"metrics" must be a mapping'),
            ({"configs": {"a": {"metrics": {"nDCG@10": "high"}}}}, "must be a number"),
        ],
    )
    def test_malformed_results_raise(self, results, message):
        with pytest.raises(ReportError, match=message) as info:
            results_to_markdown(results)
        assert isinstance(info.value, EvalError)


class TestPlotResults:
    def test_writes_valid_png(self, tmp_path):
        target = plot_results(RESULTS, tmp_path / "plots" / "scifact.png")
        assert target == tmp_path / "plots" / "scifact.png"
        data = target.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert data[12:16] == b"IHDR"
        width, height = struct.unpack(">II", data[16:24])
        assert width >= 800 and height >= 400
        assert data.rstrip(b"\x00")[-8:-4] == b"IEND"
        assert len(data) > 10_000  # bars, labels and text were drawn

    def test_does_not_switch_global_backend(self, tmp_path):
        # The Agg canvas is chosen inside the function; pyplot's global state is untouched.
        had_pyplot = "matplotlib.pyplot" in sys.modules
        plot_results(RESULTS, tmp_path / "a.png")
        assert ("matplotlib.pyplot" in sys.modules) == had_pyplot

    def test_falls_back_to_available_metrics(self, tmp_path):
        results = {"configs": {"x": {"metrics": {"P@5": 0.2}}, "y": {"metrics": {"P@5": 0.4}}}}
        target = plot_results(results, tmp_path / "p.png")
        assert target.read_bytes()[:4] == b"\x89PNG"

    def test_configs_without_metrics_still_plot(self, tmp_path):
        target = plot_results(
            {"configs": {"x": {"latency_ms": {"p50": 1.0, "p95": 2.0}}}}, tmp_path / "e.png"
        )
        assert target.read_bytes()[:4] == b"\x89PNG"

    def test_malformed_results_raise(self, tmp_path):
        with pytest.raises(ReportError):
            plot_results({"configs": {}}, tmp_path / "x.png")
        assert not (tmp_path / "x.png").exists()
