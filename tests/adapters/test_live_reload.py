"""Long-running readers pick up a new store version without a restart: `LiveKnowledgeBase.fresh_retriever`
in-process, and `haygraph serve-mcp --tenant` as a real stdio subprocess. No model: the stores are BM25-only.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from mcp.server.fastmcp.exceptions import ToolError

from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.mcp.client import MCPToolset
from haygraph.adapters.mcp.server import create_mcp_server
from haygraph.adapters.tenancy import ScopedRetriever
from haygraph.control.tools import ContractToolExecutor, ToolRegistry
from haygraph.control.tools.types import ToolCall
from tests.adapters.tenant_helpers import add_documents, build_bm25_store, store_tenants

PARKING = {"source_id": "parking.md"}
PARKING_A = Document(
    content="Initech parking rules: staff park on level two.", meta={**PARKING, "tenant": "A"}
)
PARKING_B = Document(
    content="Globex parking rules: staff park on level nine.", meta={**PARKING, "tenant": "B"}
)


def sources(found: list[Any]) -> set[str]:
    return {e.source for e in found}


class TestFreshRetriever:
    def test_a_new_version_is_used_from_the_next_call(self, tmp_path: Path) -> None:
        store = build_bm25_store(tmp_path / "store")
        live = LiveKnowledgeBase(store, check_interval_s=0)
        live.load()
        assert live.fresh_retriever().retrieve("parking rules") == []
        add_documents(store, [PARKING_A])
        assert sources(live.fresh_retriever().retrieve("parking rules")) == {"parking.md"}
        assert live.reloads == 1

    def test_on_reload_runs_after_a_new_version_only(self, tmp_path: Path) -> None:
        store = build_bm25_store(tmp_path / "store")
        calls: list[int] = []
        live = LiveKnowledgeBase(store, check_interval_s=0, on_reload=lambda: calls.append(live.reloads))
        live.load()
        live.fresh_retriever()
        assert calls == []  # the first load and an unchanged store call nothing
        add_documents(store, [PARKING_A])
        live.fresh_retriever()
        assert calls == [1]  # called once the new version serves

    def test_checks_are_throttled(self, tmp_path: Path) -> None:
        store = build_bm25_store(tmp_path / "store")
        live = LiveKnowledgeBase(store, check_interval_s=3600)
        live.load()
        live.fresh_retriever()  # the first call checks
        add_documents(store, [PARKING_A])
        assert live.fresh_retriever().retrieve("parking rules") == []  # not re-checked within the hour
        assert live.reloads == 0

    def test_a_broken_new_version_keeps_the_old_one(self, tmp_path: Path) -> None:
        store = build_bm25_store(tmp_path / "store")
        live = LiveKnowledgeBase(store, check_interval_s=0)
        live.load()
        (store / "CURRENT").write_text("v-does-not-exist\n")
        assert sources(live.fresh_retriever().retrieve("travel policy")) >= {"acme-travel.md"}
        assert live.reloads == 0

    def test_mcp_server_over_a_live_store_sees_the_new_version_within_its_tenant(
        self, tmp_path: Path
    ) -> None:
        store = build_bm25_store(tmp_path / "store")
        live = LiveKnowledgeBase(store, check_interval_s=0)
        live.load()
        scoped = ScopedRetriever(live.fresh_retriever, "A")
        server = create_mcp_server(scoped, scoped.lookup)
        add_documents(store, [PARKING_A, PARKING_B])
        tenants = store_tenants(store)
        _, out = asyncio.run(server.call_tool("search_knowledge_base", {"query": "parking rules level"}))
        assert out["result"] and {tenants[h["id"]] for h in out["result"]} == {"A"}
        foreign = next(i for i, t in tenants.items() if t == "B")
        with pytest.raises(ToolError, match="no chunk with id"):
            asyncio.run(server.call_tool("get_chunk", {"chunk_id": foreign}))


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).with_name("haygraph")
    return (str(script), []) if script.exists() else (sys.executable, ["-m", "haygraph.adapters.cli.main"])


class TestServeMCPSubprocess:
    def test_serve_mcp_tenant_and_reload_without_restart(self, tmp_path: Path) -> None:
        store = build_bm25_store(tmp_path / "store")
        command, prefix = _command()
        connection = {
            "transport": "stdio",
            "command": command,
            "args": [*prefix, "serve-mcp", "--store", str(store), "--tenant", "A"],
            "env": {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            "cwd": str(Path(__file__).resolve().parents[2]),
        }
        with MCPToolset({"kb": connection}, timeout_s=60, max_retries=0, startup_timeout_s=120) as toolset:
            registry = ToolRegistry(toolset.contracts())
            executor = ContractToolExecutor(registry, registry.names(), max_calls_per_turn=10)

            def search(query: str) -> list[dict[str, Any]]:
                call = ToolCall(id="1", name="search_knowledge_base", args={"query": query, "top_k": 10})
                [result] = executor.execute([call], thread_id="mcp")
                assert result.status == "ok", result.error
                return list(result.content["structured"]["result"])

            tenants = store_tenants(store)
            assert {tenants[h["id"]] for h in search("travel policy expense claims")} == {"A"}
            assert search("parking rules") == []
            add_documents(store, [PARKING_A, PARKING_B])
            tenants = store_tenants(store)
            deadline = time.monotonic() + 30
            found: list[dict[str, Any]] = []
            while not found and time.monotonic() < deadline:
                time.sleep(0.5)
                found = search("parking rules level")
            assert found and {tenants[h["id"]] for h in found} == {"A"}
            foreign = next(i for i, t in tenants.items() if t == "B")
            [refused] = executor.execute(
                [ToolCall(id="2", name="get_chunk", args={"chunk_id": foreign})], thread_id="m"
            )
            assert refused.status == "error" and "no chunk with id" in (refused.error or "")
            [asked] = executor.execute(
                [ToolCall(id="3", name="ask", args={"question": "What are the parking rules?"})],
                thread_id="m",
            )
            assert asked.status == "ok", asked.error
            cited = asked.content["structured"]["evidence_ids"]
            assert cited and {tenants[i] for i in cited} == {"A"}  # the new version, the tenant's only
