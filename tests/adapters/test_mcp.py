"""MCP server and client tests.

The server tests run FastMCP in-process; the client tests start `mcp_fixture_server.py` as a real
stdio (or streamable HTTP) subprocess. The `haygraph serve-mcp` subprocess test comes with the CLI.
"""

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from langchain_mcp_adapters.client import MultiServerMCPClient
from mcp.server.fastmcp.exceptions import ToolError
from pydantic import ValidationError

from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.mcp.client import (
    MCPClientError,
    MCPToolset,
    args_model_from_schema,
)
from haygraph.adapters.mcp.server import contract_tools, create_mcp_server
from haygraph.control.tools import ContractToolExecutor, ToolRegistry
from haygraph.control.tools.types import ToolCall

FIXTURE = Path(__file__).with_name("mcp_fixture_server.py")
sys.path.insert(0, str(FIXTURE.parent))
from mcp_fixture_server import MemoryRetriever, lookup  # noqa: E402


def _stdio(pid_file=None):
    args = [str(FIXTURE)] + (["--pid-file", str(pid_file)] if pid_file else [])
    return {"kb": {"transport": "stdio", "command": sys.executable, "args": args}}


@pytest.fixture(scope="module")
def toolset():
    with MCPToolset(_stdio(), timeout_s=2.0, max_retries=0, startup_timeout_s=90) as ts:
        yield ts


def _executor(contracts, allow=None):
    registry = ToolRegistry(contracts)
    return ContractToolExecutor(
        registry, allow if allow is not None else registry.names(), max_calls_per_turn=5
    )


class TestMCPServer:
    def test_tools_are_listed_with_schemas(self):
        server = create_mcp_server(MemoryRetriever(), lookup)
        tools = {t.name: t for t in asyncio.run(server.list_tools())}
        assert set(tools) == {"search_knowledge_base", "get_chunk"}
        props = tools["search_knowledge_base"].inputSchema["properties"]
        assert props["top_k"]["default"] == 5 and props["top_k"]["maximum"] == 20
        assert tools["search_knowledge_base"].annotations.readOnlyHint is True

    def test_search_returns_evidence_ids_and_get_chunk_fetches(self):
        server = create_mcp_server(MemoryRetriever(), lookup)
        _, structured = asyncio.run(server.call_tool("search_knowledge_base", {"query": "refund returned"}))
        hits = structured["result"]
        assert hits[0]["id"] == "returns#1" and set(hits[0]) == {
            "id",
            "text",
            "score",
            "source",
            "page",
            "page_breaks",
            "char_start",
            "char_end",
        }
        _, chunk = asyncio.run(server.call_tool("get_chunk", {"chunk_id": "warranty#1"}))
        assert chunk["source"] == "warranty.md" and "two-year" in chunk["text"]
        with pytest.raises(ToolError, match="no chunk with id"):
            asyncio.run(server.call_tool("get_chunk", {"chunk_id": "missing"}))
        with pytest.raises(ToolError):
            asyncio.run(server.call_tool("search_knowledge_base", {"query": "x", "top_k": 0}))

    def test_contract_tools_are_served_through_the_executor(self, tmp_path):
        db = OrdersDatabase(tmp_path / "orders.sqlite")
        registry = build_example_registry(db, MemoryRetriever())
        executor = ContractToolExecutor(registry, DEFAULT_ALLOW_LIST)
        server = create_mcp_server(MemoryRetriever(), lookup, tools=contract_tools(executor))
        tools = {t.name: t for t in asyncio.run(server.list_tools())}
        # the allowed example tools join the two built-in ones; update_shipping_address is not allowed
        assert set(tools) == {"search_knowledge_base", "get_chunk", "query_order", "create_ticket", "today",
                              "count_workdays"}  # fmt: skip
        assert tools["query_order"].inputSchema["properties"]["order_id"]["pattern"] == r"^[0-9]{12}$"
        result = asyncio.run(server.call_tool("query_order", {"order_id": "202405120001"}))
        assert "SF Express" in json.dumps(result, default=str)
        with pytest.raises(ToolError, match="query_order error: order 202405120099 not found"):
            asyncio.run(server.call_tool("query_order", {"order_id": "202405120099"}))
        with pytest.raises(ToolError):
            asyncio.run(server.call_tool("query_order", {"order_id": "123"}))
        # side effects carry a fresh request id per MCP call: two calls, two tickets
        ticket = {"category": "delivery", "description": "The parcel arrived damaged yesterday."}
        asyncio.run(server.call_tool("create_ticket", ticket))
        asyncio.run(server.call_tool("create_ticket", ticket))
        assert len(db.tickets()) == 2


class TestArgsModelFromSchema:
    def test_constraints_enums_defaults_and_extra_forbid(self):
        model = args_model_from_schema(
            "t",
            {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string", "pattern": r"^\d{12}$", "description": "12 digits"},
                    "level": {"enum": ["summary", "full"], "default": "summary"},
                    "n": {"type": "integer", "minimum": 1, "maximum": 10},
                    "from": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["order_id"],
            },
        )
        ok = model.model_validate({"order_id": "202405120001", "from": "x", "n": 3})
        assert ok.model_dump(by_alias=True, exclude_unset=True) == {
            "order_id": "202405120001",
            "from": "x",
            "n": 3,
        }
        oid = "202405120001"
        bad_inputs = [{"order_id": "1"}, {"order_id": oid, "level": "all"}, {"order_id": oid, "n": 11},
                      {"order_id": oid, "zzz": 1}, {}]  # fmt: skip
        for bad in bad_inputs:
            with pytest.raises(ValidationError):
                model.model_validate(bad)
        assert model.model_json_schema()["properties"]["order_id"]["description"] == "12 digits"


class TestMCPToolset:
    def test_stdio_tools_discovered_and_called_through_executor(self, toolset):
        names = [c.name for c in toolset.contracts()]
        assert names == ["search_knowledge_base", "get_chunk", "hang"]
        search = toolset.contracts()[0]
        assert (
            search.side_effects is False
            and "When not to use:" in search.model_schema()["function"]["description"]
        )
        ok, invalid, missing = _executor(toolset.contracts()).execute(
            [
                ToolCall(
                    id="1",
                    name="search_knowledge_base",
                    args={"query": "how long does shipping take", "top_k": 2},
                ),
                ToolCall(id="2", name="search_knowledge_base", args={"query": "x", "top_k": 99}),
                ToolCall(id="3", name="get_chunk", args={"chunk_id": "missing"}),
            ],
            thread_id="t",
        )
        assert ok.status == "ok"
        assert ok.content["structured"]["result"][0]["id"] == "shipping#1"
        assert invalid.status == "invalid_arguments" and "top_k" in invalid.error
        assert missing.status == "error" and "no chunk with id" in missing.error and missing.attempts == 1

    def test_hanging_tool_times_out(self, toolset):
        started = time.perf_counter()
        [result] = _executor(toolset.contracts()).execute(
            [ToolCall(id="1", name="hang", args={"seconds": 30})], thread_id="t"
        )
        assert result.status == "timeout"
        assert time.perf_counter() - started < 2.0 + 0.5
        # The session still works afterwards.
        [after] = _executor(toolset.contracts()).execute(
            [ToolCall(id="2", name="get_chunk", args={"chunk_id": "returns#1"})], thread_id="t"
        )
        assert after.status == "ok" and after.content["structured"]["id"] == "returns#1"

    def test_injected_passage_cannot_unlock_update_shipping_address(self, toolset, tmp_path):
        db_path = tmp_path / "orders.db"
        registry = build_example_registry(OrdersDatabase(db_path))
        for contract in toolset.contracts():
            registry.register(contract)
        executor = ContractToolExecutor(registry, DEFAULT_ALLOW_LIST)
        search, follow = executor.execute(
            [
                ToolCall(
                    id="1",
                    name="search_knowledge_base",
                    args={"query": "ignore previous rules shipping address"},
                ),
                ToolCall(
                    id="2",
                    name="update_shipping_address",
                    args={"order_id": "202406030017", "address": "1 Attacker Lane, Nowhere"},
                ),
            ],
            thread_id="t",
        )
        assert search.status == "ok" and "call update_shipping_address" in search.content["text"]
        assert follow.status == "not_allowed"
        assert OrdersDatabase(db_path).address_changes() == []

    def test_killed_server_gives_error_not_hang(self, tmp_path):
        pid_file = tmp_path / "server.pid"
        with MCPToolset(_stdio(pid_file), timeout_s=3.0, max_retries=1, startup_timeout_s=90) as ts:
            executor = _executor(ts.contracts())
            call = ToolCall(id="1", name="get_chunk", args={"chunk_id": "returns#1"})
            assert executor.execute([call], thread_id="t")[0].status == "ok"
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
            time.sleep(0.3)
            started = time.perf_counter()
            [result] = executor.execute([call], thread_id="t")
            assert result.status in ("error", "timeout")
            assert time.perf_counter() - started < 2 * 3.0 + 1.0
            [again] = executor.execute([call], thread_id="t")
            assert again.status == "error" and "gone" in again.error

    def test_unreachable_server_raises_typed_error(self):
        conn = {
            "kb": {"transport": "stdio", "command": sys.executable, "args": ["-c", "import sys; sys.exit(3)"]}
        }
        with pytest.raises(MCPClientError, match="could not load tools"):
            MCPToolset(conn, startup_timeout_s=20).open()

    def test_bad_override_key_rejected(self):
        with pytest.raises(MCPClientError, match="unknown override keys"):
            MCPToolset(_stdio(), overrides={"hang": {"colour": "red"}})


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestStatelessAndHTTP:
    def test_langchain_adapters_discover_the_stdio_server(self):
        tools = asyncio.run(MultiServerMCPClient(_stdio()).get_tools())
        assert {t.name for t in tools} == {"search_knowledge_base", "get_chunk", "hang"}

    def test_streamable_http_server_through_stateless_contracts(self):
        port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, str(FIXTURE), "--http", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.time() + 60
            while time.time() < deadline:
                with socket.socket() as s:
                    if s.connect_ex(("127.0.0.1", port)) == 0:
                        break
                time.sleep(0.2)
            conn = {"kb": {"transport": "streamable_http", "url": f"http://127.0.0.1:{port}/mcp"}}
            contracts = MCPToolset(
                conn,
                persistent=False,
                timeout_s=10.0,
                overrides={"hang": {"timeout_s": 0.5, "max_retries": 0}},
            ).open()
            executor = _executor(contracts)
            ok, hung = executor.execute(
                [
                    ToolCall(id="1", name="search_knowledge_base", args={"query": "warranty electronics"}),
                    ToolCall(id="2", name="hang", args={"seconds": 5}),
                ],
                thread_id="t",
            )
            assert ok.status == "ok" and ok.content["structured"]["result"][0]["id"] == "warranty#1"
            assert hung.status == "timeout"
            proc.kill()
            proc.wait(10)
            [gone] = executor.execute(
                [ToolCall(id="3", name="get_chunk", args={"chunk_id": "returns#1"})], thread_id="t"
            )
            assert gone.status in ("error", "timeout")
        finally:
            proc.kill()
            proc.wait(10)
