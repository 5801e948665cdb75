"""The CLI's settings flags without a model: argument types, layers, the settings report, the parser.

Stores here are the small hand-embedded test store saved with a chosen config; BM25-mode pipelines
need no model, so nothing is embedded.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from haygraph.adapters.cli import settings as cli_settings
from haygraph.adapters.cli.main import build_parser, main
from haygraph.adapters.cli.settings import (
    describe_settings,
    filter_pair,
    filters_from_pairs,
    given_config,
    open_knowledge_base,
    settings_layers,
)
from haygraph.eval.errors import EvalError
from haygraph.retrieval import config as retrieval_config
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import ConfigError, CorruptStoreError
from tests.retrieval.store_helpers import small_store

BM25_QUERY = {"mode": "bm25", "cut": {"max_keep": 3}}
TUNED = {
    "dataset": "scifact",
    "split": "train",
    "fusion": {"method": "minmax", "weights": [0.3, 0.7], "rrf_k": 60, "candidates": 100},
    "cut": {"drop_ratio": 0.4, "max_keep": 4},
}
HEAVY = ("haystack", "torch", "sentence_transformers", "transformers")


def _store(tmp_path: Path, query: dict | None = BM25_QUERY) -> Path:
    """A saved small store whose persisted config has `query` (no query section when None)."""
    config = RetrievalConfig.from_dict({"query": query} if query is not None else {})
    store = small_store()
    saved = config.model_dump(mode="json")
    if query is None:
        saved.pop("query")
    store.meta["config"] = saved
    store.save(tmp_path / "kb")
    return tmp_path / "kb"


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


class TestArgumentTypes:
    @pytest.mark.parametrize("text", ["1", "7", "10000"])
    def test_top_k_in_range(self, text):
        args = build_parser().parse_args(["search", "q", "--store", "kb", "--top-k", text])
        assert args.top_k == int(text)

    def test_top_k_limit_is_the_query_settings_limit(self):
        # repeated in the CLI so that building the parser imports no pydantic: a divergence fails here
        assert cli_settings.MAX_TOP_K == retrieval_config.MAX_TOP_K == 10_000

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("source_id=leave.md", ("meta.source_id", "leave.md")),
            ("meta.tenant=acme", ("meta.tenant", "acme")),
            ("a.b-c=x=y", ("meta.a.b-c", "x=y")),
        ],
    )
    def test_filter_pair(self, text, expected):
        assert filter_pair(text) == expected

    @pytest.mark.parametrize("text", ["meta.=x", "=x", "meta.", "tenant", "tenant=", "a b=c", "a..b=c"])
    def test_filter_pair_refuses(self, text):
        with pytest.raises(argparse.ArgumentTypeError, match="FIELD=VALUE"):
            filter_pair(text)

    def test_filters_combine_with_and(self):
        assert filters_from_pairs(None) is None
        one = filters_from_pairs([("meta.tenant", "acme")])
        assert one == {"field": "meta.tenant", "operator": "==", "value": "acme"}
        two = filters_from_pairs([("meta.tenant", "acme"), ("meta.source_id", "a.md")])
        assert two is not None and two["operator"] == "AND" and len(two["conditions"]) == 2


class TestLayers:
    def test_no_flags_no_layers(self):
        assert settings_layers() == [] and given_config([]) is None

    def test_config_tuned_and_flags_in_precedence_order(self, tmp_path):
        config = _write(tmp_path / "c.yaml", "query: {mode: dense, cut: {max_keep: 2}}\n")
        tuned = _write(tmp_path / "t.json", json.dumps(TUNED))
        layers = settings_layers(config, tuned, top_k=6)
        assert [layer.source for layer in layers] == ["config", "tuned", "flag"]
        assert layers[0].values == {"query": {"mode": "dense", "cut": {"max_keep": 2}}}  # only what it sets
        merged = given_config(layers)
        assert merged is not None
        assert merged.query.mode == "hybrid"  # tuned (hybrid fusion) over the config's dense
        assert (merged.query.fusion.method, merged.query.fusion.weights) == ("minmax", (0.3, 0.7))
        assert (merged.query.cut.drop_ratio, merged.query.cut.max_keep, merged.query.top_k) == (0.4, 6, 6)
        assert merged.model_dump(exclude_unset=True)["query"].keys() == {"mode", "fusion", "cut", "top_k"}

    def test_bad_config_file_names_the_flag(self, tmp_path):
        config = _write(tmp_path / "c.yaml", "query: {moed: bm25}\n")
        with pytest.raises(ConfigError, match=rf"^--config {config}: .*unknown config key 'query.moed'"):
            settings_layers(config)

    @pytest.mark.parametrize(
        ("content", "message"),
        [(None, "cannot read"), ("{", "not valid JSON"), ('{"fusion": {"method": "rrf"}}', "missing")],
    )
    def test_bad_tuned_file_names_the_flag(self, tmp_path, content, message):
        path = tmp_path / "t.json"
        if content is not None:
            path.write_text(content)
        with pytest.raises(EvalError, match=rf"^--tuned: .*{message}"):
            settings_layers(tuned=str(path))


class TestDescribeSettings:
    def test_store_settings_are_used_and_reported(self, tmp_path):
        layers = settings_layers()
        kb = open_knowledge_base(_store(tmp_path), layers)
        settings = describe_settings(kb, layers)
        assert (settings["mode"], settings["cut"]["max_keep"]) == ("bm25", 3)
        assert settings["pipeline"] == ["bm25", "relevance", "cut"]  # no text embedder, no dense retriever
        assert set(settings["sources"].values()) == {"store"}
        assert settings["files"] == {"config": None, "tuned": None}
        assert kb.search("leave policy").hits[0].id == "d1"

    def test_each_setting_names_its_layer(self, tmp_path):
        config = _write(tmp_path / "c.yaml", "query: {cut: {drop_ratio: 0.3}}\n")
        tuned = _write(tmp_path / "t.json", json.dumps(TUNED))
        layers = settings_layers(config, tuned, top_k=2)
        settings = describe_settings(open_knowledge_base(_store(tmp_path), layers), layers)
        sources = settings["sources"]
        assert (sources["cut.drop_ratio"], sources["fusion.weights"], sources["mode"]) == (
            "tuned",  # tuned's 0.4 over the config's 0.3
            "tuned",
            "tuned",
        )
        assert (sources["top_k"], sources["cut.max_keep"], sources["cut.enabled"]) == (
            "flag",
            "flag",
            "store",
        )
        assert settings["cut"]["drop_ratio"] == 0.4 and settings["top_k"] == 2
        assert "dense" in settings["pipeline"] and settings["files"] == {"config": config, "tuned": tuned}

    def test_old_store_reports_defaults(self, tmp_path):
        kb = open_knowledge_base(_store(tmp_path, query=None), [])
        settings = describe_settings(kb, [], per_call=("agent", {"top_k": 3, "cut.max_keep": 3}))
        assert settings["mode"] == "hybrid" and settings["sources"]["mode"] == "default"
        assert (settings["top_k"], settings["cut"]["max_keep"], settings["sources"]["top_k"]) == (
            3,
            3,
            "agent",
        )

    def test_indexing_setting_mismatch_names_the_config_flag(self, tmp_path):
        config = _write(tmp_path / "c.yaml", "splitter: {max_chars: 600}\n")
        with pytest.raises(ConfigError, match=rf"^--config {config}: config key 'splitter.max_chars' is 600"):
            open_knowledge_base(_store(tmp_path), settings_layers(config))


class TestParser:
    @pytest.mark.parametrize(
        "argv",
        [
            ["-v", "--debug", "search", "q", "--store", "kb"],
            ["search", "q", "--store", "kb", "-v", "--debug"],
            ["--debug", "ask", "q", "--store", "kb", "--verbose"],
        ],
    )
    def test_global_flags_anywhere(self, argv):
        args = build_parser().parse_args(argv)
        assert (args.verbose, args.debug) == (True, True)

    def test_global_flags_default_off(self):
        args = build_parser().parse_args(["search", "q", "--store", "kb"])
        assert (args.verbose, args.debug) == (False, False)

    @pytest.mark.parametrize("command", ["search", "ask", "chat", "serve-mcp"])
    def test_settings_flags_on_every_store_command(self, command):
        argv = [command, *(["q"] if command in ("search", "ask") else []), "--store", "kb"]
        args = build_parser().parse_args([*argv, "--config", "c.yaml", "--tuned", "t.json"])
        assert (args.config, args.tuned) == ("c.yaml", "t.json")

    def test_eval_takes_config_and_tuned(self):
        args = build_parser().parse_args(
            ["eval", "--dataset", "med", "--config", "c.yaml", "--tuned", "t.json"]
        )
        assert (args.config, args.tuned) == ("c.yaml", "t.json")

    @pytest.mark.parametrize("value", ["0", "-3", "many", "2.5", "", "10001", "1000000000"])
    def test_bad_top_k_is_one_line_naming_the_flag_and_the_limit(self, value, capsys):
        with pytest.raises(SystemExit) as info:
            main(["search", "q", "--store", "kb", f"--top-k={value}"])
        assert info.value.code == 2
        line = _one_error_line(capsys.readouterr().err)
        assert (
            line == f"error: --top-k must be between 1 and 10000, got {value!r} (see haygraph search --help)"
        )

    @pytest.mark.parametrize(("command", "bad"), [("ask", "meta.=x"), ("chat", "=x"), ("search", "tenant")])
    def test_malformed_filter_is_one_line_naming_the_flag(self, command, bad, capsys):
        argv = [command, *(["q"] if command != "chat" else []), "--store", "kb", "--filter", bad]
        with pytest.raises(SystemExit):
            main(argv)
        assert "argument --filter: expects FIELD=VALUE" in _one_error_line(capsys.readouterr().err)

    def test_missing_config_file_is_one_line(self, tmp_path, capsys):
        store = _store(tmp_path)
        assert main(["search", "leave", "--store", str(store), "--config", str(tmp_path / "no.yaml")]) == 2
        assert "--config" in _one_error_line(capsys.readouterr().err)

    def test_search_json_reports_the_settings(self, tmp_path, capsys):
        store = _store(tmp_path)
        assert main(["search", "leave policy", "--store", str(store), "--json", "--top-k", "1"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert [r["id"] for r in out["results"]] == ["d1"]
        assert out["settings"]["mode"] == "bm25" and out["settings"]["sources"]["top_k"] == "flag"


class TestCorruptStoreMessage:
    def test_corrupt_embeddings_are_one_short_line_and_numpy_text_only_under_debug(self, tmp_path, capsys):
        store = _store(tmp_path)
        npy = store / (store / "CURRENT").read_text().strip() / "embeddings.npy"
        npy.write_bytes(b"\x80\x04" + b"x" * 600)  # numpy explains pickled data at length
        assert main(["search", "leave", "--store", str(store)]) == 2
        line = _one_error_line(capsys.readouterr().err)
        assert line == (
            f"error: store {store} is corrupt: {npy} is unreadable or truncated (ValueError). Fix: "
            f"re-index — delete {store} and run `haygraph index PATH... --store {store}` again (or index "
            "into a new directory)"
        )
        with pytest.raises(CorruptStoreError) as info:  # --debug: the traceback, numpy's text in the cause
            main(["search", "leave", "--store", str(store), "--debug"])
        assert "pickled" in str(info.value.__cause__)


class TestFastHelp:
    def test_help_of_every_command_imports_no_model_code(self):
        script = (
            "import contextlib, io, json, sys\n"
            "from haygraph.adapters.cli.main import build_parser, main\n"
            "commands = list(build_parser()._subparsers._group_actions[0].choices)\n"
            "for argv in [['--help']] + [[c, '--help'] for c in commands]:\n"
            "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
            "        main(argv)\n"
            "print(json.dumps({'commands': commands, 'modules': sorted(sys.modules)}))\n"
        )
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert {"index", "search", "ask", "chat", "serve-mcp", "demo", "eval", "tune"} <= set(out["commands"])
        heavy = [m for m in out["modules"] if m.split(".")[0] in HEAVY]
        assert heavy == []
