"""One config for every entry point, end to end with the real model and the real handbook.

A BM25-only config given to `haygraph index --config` is kept by the store and used, without any flag,
by `search` and `serve-mcp` (real processes) and `ask` (in process); `--config`, `--tuned` and
`--filter` narrow or override it per command. "Dense retrieval is not run" is checked on the
pipeline each command reports (no text embedder, no dense retriever) and on the hits themselves.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from haygraph.adapters.cli.main import main
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.knowledge_base import KnowledgeBase
from tests.adapters.test_cli import haygraph_command, run_cli

pytestmark = pytest.mark.integration

BM25_CONFIG = "query:\n  mode: bm25\n  cut: {max_keep: 3}\n"
LEAVE_QUESTION = "How many days of annual leave do I get?"
BM25_ONLY = ["bm25", "relevance", "cut"]
TUNED = {
    "dataset": "scifact",
    "split": "train",
    "fusion": {"method": "minmax", "weights": [0.4, 0.6], "rrf_k": 60, "candidates": 50},
    "cut": {"drop_ratio": 0.3, "max_keep": 4},
}


@pytest.fixture(scope="module")
def env(haygraph_cache_dir: Path) -> dict[str, str]:
    """Offline settings and the session's embedding cache for the subprocesses."""
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    return {
        **os.environ,
        **offline,
        "TOKENIZERS_PARALLELISM": "false",
        "HAYGRAPH_CACHE_DIR": str(haygraph_cache_dir),
    }


@pytest.fixture(scope="module")
def bm25_store(tmp_path_factory: pytest.TempPathFactory, env: dict[str, str], handbook_store: Path) -> Path:
    """The handbook indexed by `haygraph index --config bm25.yaml` (embeddings from the warm cache)."""
    root = tmp_path_factory.mktemp("bm25-store")
    (root / "bm25.yaml").write_text(BM25_CONFIG)
    store = root / "kb"
    argv = ["index", str(sample_handbook_path()), "--store", str(store), "--config", str(root / "bm25.yaml")]
    proc = run_cli([*argv, "--no-progress"], env)
    assert proc.returncode == 0, proc.stderr
    assert "(0 embedded" in proc.stdout
    return store


def _assert_bm25_from_store(settings: dict[str, Any]) -> None:
    assert settings["mode"] == "bm25" and settings["sources"]["mode"] == "store"
    assert settings["pipeline"] == BM25_ONLY  # no text_embedder, no dense retriever
    assert settings["files"] == {"config": None, "tuned": None}


class TestSearch:
    def test_search_uses_the_index_time_config(self, bm25_store: Path, env: dict[str, str]) -> None:
        proc = run_cli(["search", LEAVE_QUESTION, "--store", str(bm25_store), "--json"], env)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        _assert_bm25_from_store(out["settings"])
        assert (out["settings"]["cut"]["max_keep"], out["settings"]["sources"]["cut.max_keep"]) == (
            3,
            "store",
        )
        assert 1 <= len(out["results"]) <= 3
        assert "leave-policy.md" in {r["source"] for r in out["results"]}

    def test_the_bm25_hits_carry_no_dense_score(self, bm25_store: Path) -> None:
        hits = KnowledgeBase.open(bm25_store).search(LEAVE_QUESTION).hits
        assert hits and all(h.cosine is None and "bm25_score" in h.meta for h in hits)

    def test_config_and_tuned_override_per_command(
        self, bm25_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        dense = tmp_path / "dense.yaml"
        dense.write_text("query: {mode: dense}\n")
        assert (
            main(["search", LEAVE_QUESTION, "--store", str(bm25_store), "--json", "--config", str(dense)])
            == 0
        )
        settings = json.loads(capsys.readouterr().out)["settings"]
        assert (settings["mode"], settings["sources"]["mode"]) == ("dense", "config")
        assert settings["pipeline"] == ["text_embedder", "dense", "relevance", "cut"]
        assert settings["cut"]["max_keep"] == 3  # still the store's: the config did not name it

        tuned = tmp_path / "tuned.json"
        tuned.write_text(json.dumps(TUNED))
        argv = ["search", LEAVE_QUESTION, "--store", str(bm25_store), "--json", "--tuned", str(tuned)]
        assert main(argv) == 0
        out = json.loads(capsys.readouterr().out)
        settings = out["settings"]
        assert (settings["mode"], settings["fusion"]["method"], settings["fusion"]["weights"]) == (
            "hybrid",
            "minmax",
            [0.4, 0.6],
        )
        assert (settings["cut"]["drop_ratio"], settings["cut"]["max_keep"]) == (0.3, 4)
        assert {settings["sources"][k] for k in ("mode", "fusion.weights", "cut.drop_ratio")} == {"tuned"}
        assert "fusion" in settings["pipeline"] and 1 <= len(out["results"]) <= 4

    def test_changing_an_indexing_setting_is_refused(
        self, bm25_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        other = tmp_path / "other.yaml"
        other.write_text("splitter: {max_chars: 500}\nquery: {mode: dense}\n")
        assert main(["search", "leave", "--store", str(bm25_store), "--config", str(other)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: --config {other}: config key 'splitter.max_chars' is 500")
        assert "\n" not in err


class TestAsk:
    def test_ask_uses_the_index_time_config(
        self, bm25_store: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["ask", LEAVE_QUESTION, "--store", str(bm25_store), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        _assert_bm25_from_store(result["settings"])
        assert (result["settings"]["top_k"], result["settings"]["sources"]["top_k"]) == (3, "agent")
        assert result["route"] == "retrieve" and result["evidence"]
        assert "leave-policy.md" in {e["source"] for e in result["evidence"]}

    def test_filter_narrows_the_evidence(self, bm25_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        argv = ["ask", LEAVE_QUESTION, "--store", str(bm25_store), "--json"]
        assert main([*argv, "--filter", "source_id=travel-policy.md"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["evidence"] and {e["source"] for e in result["evidence"]} == {"travel-policy.md"}


async def _mcp_settings_and_search(store: Path, env: dict[str, str], query: str) -> tuple[dict, list]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from pydantic import AnyUrl

    command, *prefix = haygraph_command()
    params = StdioServerParameters(
        command=command, args=[*prefix, "serve-mcp", "--store", str(store)], env=env
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        resource = await session.read_resource(AnyUrl("haygraph://settings"))
        settings = json.loads(resource.contents[0].text)  # type: ignore[union-attr]
        called = await session.call_tool("search_knowledge_base", {"query": query, "top_k": 2})
        assert not called.isError, called.content
        assert called.structuredContent is not None
        return settings, called.structuredContent["result"]


class TestServeMCP:
    def test_serve_mcp_uses_the_index_time_config(self, bm25_store: Path, env: dict[str, str]) -> None:
        settings, hits = asyncio.run(
            asyncio.wait_for(_mcp_settings_and_search(bm25_store, env, LEAVE_QUESTION), 300)
        )
        _assert_bm25_from_store(settings)
        assert (settings["top_k"], settings["sources"]["top_k"]) == (5, "request")
        store = KnowledgeBase.open(bm25_store).store
        assert 1 <= len(hits) <= 2 and "leave-policy.md" in {h["source"] for h in hits}
        assert all(store.get(h["id"]) is not None for h in hits)
