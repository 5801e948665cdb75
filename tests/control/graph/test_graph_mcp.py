"""MCP end to end through the graph: a real stdio MCP server's tool chosen by a scripted model.

Starts `tests/adapters/mcp_fixture_server.py` as a subprocess through `MCPToolset` (persistent
session), registers its contracts with an allow-list, and runs graph turns; then kills the server
and checks that the next turn gets an error result quickly instead of hanging.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from haygraph.adapters.mcp.client import MCPToolset
from haygraph.control.graph import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.tools import ToolRegistry
from tests.control.tool_helpers import ScriptedChatModel, call

FIXTURE = Path(__file__).resolve().parents[2] / "adapters" / "mcp_fixture_server.py"
ALLOW = ["search_knowledge_base", "get_chunk"]  # the fixture's `hang` tool is not allowed
TIMEOUT_S = 3.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MCPToolset, Path]]:
    pid_file = tmp_path_factory.mktemp("mcp") / "server.pid"
    conn = {
        "kb": {
            "transport": "stdio",
            "command": sys.executable,
            "args": [str(FIXTURE), "--pid-file", str(pid_file)],
        }
    }
    with MCPToolset(conn, timeout_s=TIMEOUT_S, max_retries=1, startup_timeout_s=90) as toolset:
        yield toolset, pid_file


def route_knowledge() -> Any:
    return call("RouteDecision", route="tool", intent="knowledge", reason="knowledge-base lookup")


def search(query: str) -> Any:
    return call("search_knowledge_base", query=query, top_k=2)


class TestGraphWithMCPTools:
    def test_mcp_tool_used_end_to_end_then_server_killed(self, server: tuple[MCPToolset, Path]) -> None:
        toolset, pid_file = server
        model = ScriptedChatModel(
            script=[
                route_knowledge(),
                search("how long does standard shipping take"),
                route_knowledge(),
                search("warranty of electronics"),
            ]
        )
        ctx = Context(model=model, tool_registry=ToolRegistry(toolset.contracts()), tool_allow_list=ALLOW)
        graph = build_graph(checkpointer=memory_checkpointer())
        cfg = {"configurable": {"thread_id": "mcp-thread"}}

        first = graph.invoke({"question": "How long does standard shipping take?"}, context=ctx, config=cfg)
        assert first["path"] == ["analyze", "tool_exec", "generate"]
        assert model.tools_seen[1] == ALLOW  # MCP tools serve any intent; `hang` is not allowed
        [result] = first["tool_results"]
        assert (result.name, result.status) == ("search_knowledge_base", "ok")
        assert result.content["structured"]["result"][0]["id"] == "shipping#1"
        assert first["status"] == "completed"
        assert "Standard shipping takes 3 to 5 workdays" in first["answer"]
        assert "id=shipping#1" in first["answer"]
        assert "- search_knowledge_base (intent: any)" in str(model.prompts[0][0].content)

        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        time.sleep(0.3)
        started = time.perf_counter()
        second = graph.invoke({"question": "What warranty do electronics have?"}, context=ctx, config=cfg)
        elapsed = time.perf_counter() - started
        [gone] = second["tool_results"]
        assert gone.status in ("error", "timeout")
        assert second["status"] == "degraded"
        assert second["answer"].startswith("search_knowledge_base failed (")
        assert "the MCP server 'kb' is gone" in (gone.error or "")
        assert second["answer"].endswith("Please try again later.")
        assert elapsed < 2 * TIMEOUT_S + 2.0  # one call plus at most one retry, never a hang
