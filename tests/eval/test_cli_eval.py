"""Tests for eval.cli: the `eval` and `tune` sub-commands through a throwaway argparse parser."""

from __future__ import annotations

import argparse
import json

import pytest

from haygraph.eval.cli import register
from haygraph.eval.errors import EvalError
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.errors import ConfigError


def _parser():
    parser = argparse.ArgumentParser(prog="haygraph")
    register(parser.add_subparsers(dest="command"))
    return parser


class TestRegister:
    def test_eval_defaults(self):
        args = _parser().parse_args(["eval", "--dataset", "med"])
        assert (args.split, args.k, args.configs, args.limit) == ("test", "1,3,5,10,100", None, None)
        assert callable(args.func)

    def test_tune_requires_out(self, capsys):
        with pytest.raises(SystemExit):
            _parser().parse_args(["tune", "--dataset", "scifact"])
        assert "--out" in capsys.readouterr().err

    def test_tune_refuses_test_split_before_any_work(self, tmp_path):
        args = _parser().parse_args(
            ["tune", "--dataset", "scifact", "--split", "test", "--out", str(tmp_path / "t.json")]
        )
        with pytest.raises(EvalError, match="test split"):
            args.func(args)
        assert not (tmp_path / "t.json").exists()

    def test_unknown_config_is_a_typed_error(self):
        args = _parser().parse_args(["eval", "--dataset", "med", "--configs", "bm25,nope", "--no-progress"])
        with pytest.raises(EvalError, match="unknown config"):
            args.func(args)

    @pytest.mark.parametrize("flag", ["--config", "--tuned"])
    def test_unreadable_settings_file_names_the_flag(self, tmp_path, flag):
        args = _parser().parse_args(
            ["eval", "--dataset", "med", flag, str(tmp_path / "nope"), "--no-progress"]
        )
        with pytest.raises((EvalError, ConfigError), match=rf"^{flag}"):
            args.func(args)

    def test_missing_dataset_is_a_typed_error(self, tmp_path):
        args = _parser().parse_args(["eval", "--dataset", str(tmp_path / "none"), "--no-progress"])
        with pytest.raises(EvalError, match="dataset not found"):
            args.func(args)


@pytest.mark.skipif(
    not (datasets_root() / "med" / "corpus.jsonl").is_file(),
    reason=f"shared datasets not found at {datasets_root()}",
)
class TestEvalCommand:
    def test_config_file_is_the_base_of_every_configuration(self, tmp_path):
        config = tmp_path / "c.yaml"
        config.write_text("query: {cut: {max_keep: 2, drop_ratio: 0.2}}\n")
        out = tmp_path / "r.json"
        argv = ["eval", "--dataset", "med", "--configs", "bm25+cut", "--limit", "3", "--no-progress",
                "--config", str(config), "--out", str(out)]  # fmt: skip
        args = _parser().parse_args(argv)
        assert args.func(args) == 0
        data = json.loads(out.read_text())
        assert data["settings"] == {"config": str(config), "tuned": None}
        cut = data["configs"]["bm25+cut"]["query_config"]["cut"]
        assert (cut["enabled"], cut["max_keep"], cut["drop_ratio"]) == (True, 2, 0.2)
        assert data["configs"]["bm25+cut"]["chunks_kept_mean"] <= 2

    def test_bm25_smoke_writes_json_markdown_and_plot(self, tmp_path, capsys):
        out, md, png = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.png"
        argv = ["eval", "--dataset", "med", "--configs", "bm25,bm25+cut", "--limit", "3", "--no-progress",
                "--out", str(out), "--markdown", str(md), "--plot", str(png)]  # fmt: skip
        args = _parser().parse_args(argv)
        assert args.func(args) == 0
        data = json.loads(out.read_text())
        assert (data["dataset"], data["split"], data["num_queries"]) == ("med", "test", 3)
        bm25 = data["configs"]["bm25"]
        for key in ("nDCG@10", "HitRate@5", "MRR@10", "Recall@100", "MAP@100"):
            assert 0.0 <= bm25["metrics"][key] <= 1.0
        assert set(bm25["latency_ms"]) >= {"p50", "p95"} and bm25["chunks_kept_mean"] is None
        assert isinstance(data["configs"]["bm25+cut"]["chunks_kept_mean"], float)
        table = md.read_text()
        assert "| bm25 |" in table and "nDCG@100" in table and "MAP@100" in table
        assert png.read_bytes()[:4] == b"\x89PNG"
        stdout = capsys.readouterr().out
        assert "med/test: 3 queries" in stdout and "bm25+cut" in stdout


def _tiny_dataset(root):
    """Six documents, two train and two test queries: enough to run tune -> eval --tuned for real."""
    docs = {
        "d1": "Aspirin reduces the risk of heart attack in adults.",
        "d2": "Statins lower cholesterol and cardiovascular events.",
        "d3": "Vitamin D deficiency is linked to bone fractures.",
        "d4": "Regular exercise improves sleep quality.",
        "d5": "Smoking causes lung cancer and heart disease.",
        "d6": "Green tea contains antioxidants.",
    }
    queries = {
        "t1": "aspirin heart attack",
        "t2": "cholesterol drugs",
        "s1": "bone fractures vitamin",
        "s2": "lung cancer",
    }
    (root / "qrels").mkdir(parents=True)
    (root / "train").mkdir()
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps({"_id": k, "title": "", "text": v}) for k, v in docs.items()), encoding="utf-8"
    )
    (root / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": k, "text": v}) for k, v in queries.items()), encoding="utf-8"
    )
    (root / "train" / "qrels.tsv").write_text(
        "query-id\tcorpus-id\tscore\nt1\td1\t1\nt2\td2\t1\n", encoding="utf-8"
    )
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\ns1\td3\t1\ns2\td5\t1\n", encoding="utf-8"
    )
    return root


@pytest.mark.integration
class TestTuneThenEval:
    """`tune` on train writes parameters that `eval --tuned` turns into hybrid-tuned configs (real model)."""

    def test_round_trip(self, tmp_path, capsys, monkeypatch):
        monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(tmp_path / "cache"))
        data = _tiny_dataset(tmp_path / "tiny")
        tuned = tmp_path / "tuned.json"
        args = _parser().parse_args(["tune", "--dataset", str(data), "--out", str(tuned), "--no-progress"])
        assert args.func(args) == 0
        params = json.loads(tuned.read_text())
        assert params["split"] == "train" and params["num_queries"] == 2
        assert params["fusion"]["method"] in ("rrf", "minmax") and len(params["grid"]["fusion"]) == 22
        out = tmp_path / "r.json"
        names = "bm25,hybrid-tuned,hybrid-tuned+cut"
        argv = ["eval", "--dataset", str(data), "--tuned", str(tuned), "--configs", names,
                "--k", "1,5", "--out", str(out), "--no-progress"]  # fmt: skip
        args = _parser().parse_args(argv)
        assert args.func(args) == 0
        result = json.loads(out.read_text())
        tuned_cfg = result["configs"]["hybrid-tuned"]["query_config"]
        assert tuned_cfg["fusion"]["method"] == params["fusion"]["method"]
        assert tuned_cfg["fusion"]["weights"] == params["fusion"]["weights"]
        cut_cfg = result["configs"]["hybrid-tuned+cut"]["query_config"]["cut"]
        assert (cut_cfg["drop_ratio"], cut_cfg["max_keep"]) == (
            params["cut"]["drop_ratio"],
            params["cut"]["max_keep"],
        )
        assert (
            result["configs"]["hybrid-tuned"]["metrics"]["HitRate@5"] == 1.0
        )  # 6 docs: every relevant is in the top 5


class TestEvalAgentProtocols:
    """``eval-agent`` picks the protocol and part; the harness itself is replaced by a recorder."""

    @pytest.fixture
    def asked(self, monkeypatch):
        seen = []

        def fake_run(protocol, store, **kwargs):
            seen.append(protocol)
            return {"protocol": protocol.name, "cases": len(protocol.cases), "modes": {}}

        monkeypatch.setattr("haygraph.eval.agent_harness.run_protocol", fake_run)
        return seen

    def _run(self, tmp_path, *argv):
        args = _parser().parse_args(
            ["eval-agent", *argv, "--modes", "hybrid", "--no-answerability", "--store", str(tmp_path / "s")]
        )
        return args.func(args)

    def test_handbook_cross_defaults_to_its_tune_cases_grouped_by_direction(self, tmp_path, asked, capsys):
        assert self._run(tmp_path, "--protocol", "handbook-cross") == 0
        (protocol,) = asked
        assert protocol.name == "handbook-cross"
        assert {c.lang for c in protocol.cases} == {"en->zh", "zh->en"}
        assert "handbook-cross: 32 cases" in capsys.readouterr().out

    def test_handbook_paraphrase_takes_a_part(self, tmp_path, asked, capsys):
        assert self._run(tmp_path, "--protocol", "handbook-paraphrase", "--part", "test") == 0
        (protocol,) = asked
        assert protocol.name == "handbook-paraphrase"
        assert {c.lang for c in protocol.cases} == {"en", "zh"} and any(c.absent for c in protocol.cases)
        assert f"handbook-paraphrase: {len(protocol.cases)} cases" in capsys.readouterr().out

    def test_handbook_cross_refuses_the_test_part(self, tmp_path, asked):
        with pytest.raises(EvalError, match="tune cases"):
            self._run(tmp_path, "--protocol", "handbook-cross", "--part", "test")
        assert asked == []

    def test_docs_takes_a_dataset_folder_and_part(self, tmp_path, asked):
        (tmp_path / "docs" / "pages").mkdir(parents=True)
        docs = str(tmp_path / "docs")
        assert self._run(tmp_path, "--protocol", "docs", "--dataset", docs, "--part", "all") == 0
        (protocol,) = asked
        assert protocol.paths == [tmp_path / "docs" / "pages"]
        assert {c.lang for c in protocol.cases} == {"en", "zh"} and len(protocol.cases) >= 48

    @pytest.mark.parametrize(
        ("setting", "name", "groups", "folder"),
        [
            ("en", "holdout-antd", {"en", "zh"}, "pages"),
            ("en->zh", "holdout-antd-en->zh", {"en->zh"}, "pages/zh"),
            ("zh->en", "holdout-antd-zh->en", {"zh->en"}, "pages/en"),
        ],
    )
    def test_holdout_antd_takes_its_bundled_pages_and_a_setting(
        self, tmp_path, asked, setting, name, groups, folder
    ):
        from haygraph.eval.agent_cases import HOLDOUT_ANTD_DATASET

        assert self._run(tmp_path, "--protocol", "holdout-antd", "--setting", setting) == 0
        (protocol,) = asked
        assert protocol.name == name and {c.lang for c in protocol.cases} == groups
        assert protocol.paths == [HOLDOUT_ANTD_DATASET / folder]

    def test_docs_without_the_dataset_is_a_typed_error(self, tmp_path, asked):
        with pytest.raises(EvalError, match="pages"):
            self._run(tmp_path, "--protocol", "docs", "--dataset", str(tmp_path))

    def test_formats_asks_the_formats_named(self, tmp_path, monkeypatch, capsys):
        """``--formats png,scan-pdf`` builds a store for those two formats only, and prints their table."""
        seen = []

        def fake_run(protocol, store, **kwargs):
            seen.append((protocol.name, store.name))
            return {
                "protocol": protocol.name,
                "cases": len(protocol.cases),
                "modes": {"hybrid": {"figures": {}}},
            }

        monkeypatch.setattr("haygraph.eval.agent_harness.run_protocol", fake_run)
        monkeypatch.setattr("haygraph.eval.agent_harness.format_report", lambda report: [])
        assert self._run(tmp_path, "--protocol", "formats", "--formats", "png, scan-pdf") == 0
        assert seen == [("formats-png", "png"), ("formats-scan-pdf", "scan-pdf")]
        out = capsys.readouterr().out
        assert "| png | 24 | n/a | n/a | n/a | n/a |" in out and "| scan-pdf | 24 |" in out

    def test_formats_refuses_an_unknown_format_before_any_run(self, tmp_path, asked):
        with pytest.raises(EvalError, match=r"unknown format\(s\) \['tif'\]"):
            self._run(tmp_path, "--protocol", "formats", "--formats", "png,tif")
        assert asked == []

    def test_formats_names_the_ocr_extra_for_the_scans_when_it_is_missing(self, tmp_path, asked, monkeypatch):
        def missing():
            raise ImportError("No module named 'rapidocr'")

        monkeypatch.setattr("haygraph.retrieval.formats.images._import_rapidocr", missing)  # not installed
        with pytest.raises(EvalError, match=r"png, scan-pdf are scans read by OCR.*haygraph\[ocr\]"):
            self._run(tmp_path, "--protocol", "formats")
        assert asked == []
