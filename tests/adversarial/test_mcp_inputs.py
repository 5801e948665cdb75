"""Hostile and wrong-typed arguments for the MCP server's tools, in-process, over a tenant-bound live store.

Each call either returns a correct result (only tenant A's chunks) or raises the MCP tool error a
host sees: a short message that names the argument, never a 1 MB echo or a traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.server.fastmcp import FastMCP
from mcp.server.fastmcp.exceptions import ToolError

from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.mcp.server import create_mcp_server
from haygraph.adapters.tenancy import ScopedRetriever, visible_to
from tests.adapters.tenant_helpers import store_tenants
from tests.adversarial.conftest import Tally
from tests.adversarial.inputs import ALL_VALUES, ids

SURFACE = "mcp-server"
SLOTS = [
    ("search_knowledge_base", "query", {"query": "leave policy"}),
    ("search_knowledge_base", "top_k", {"query": "leave policy"}),
    ("search_knowledge_base", "filters", {"query": "leave policy"}),
    ("get_chunk", "chunk_id", {}),
    ("get_chunk", "filters", {"chunk_id": ""}),
]
MAX_MESSAGE = 2000


@pytest.fixture(scope="module")
def server(bm25_tenant_store: Path) -> tuple[FastMCP, dict[str, str | None]]:
    live = LiveKnowledgeBase(bm25_tenant_store, warm_top_ks=(5,))
    live.load()
    scoped = ScopedRetriever(live.fresh_retriever, "A")
    return create_mcp_server(scoped, scoped.lookup), store_tenants(bm25_tenant_store)


def _jsonable(value: Any) -> Any:
    """What a host could send for `value` (MCP arguments are JSON)."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    if isinstance(value, float) and value != value:
        return "NaN"
    return value if isinstance(value, str | int | float | bool | list | dict | type(None)) else repr(value)


@pytest.mark.parametrize(("tool", "argument", "base"), SLOTS, ids=[f"{t}.{a}" for t, a, _ in SLOTS])
@pytest.mark.parametrize(("label", "value"), ALL_VALUES, ids=ids(ALL_VALUES))
def test_hostile_argument(
    server: tuple[FastMCP, dict[str, str | None]],
    classify: Callable[..., None],
    tally: Tally,
    tool: str,
    argument: str,
    base: dict[str, Any],
    label: str,
    value: Any,
) -> None:
    mcp, owner = server
    arguments = dict(base)
    if tool == "get_chunk" and argument == "filters":
        arguments["chunk_id"] = next(i for i, t in owner.items() if t == "A")
    arguments[argument] = _jsonable(value)
    try:
        with tally.timed(SURFACE, label):
            _, out = asyncio.run(mcp.call_tool(tool, arguments))
    except ToolError as exc:
        message = str(exc)
        clear = len(message) < MAX_MESSAGE and "Traceback" not in message
        named = argument in message or "no chunk with id" in message
        classify(
            SURFACE,
            "clear_error" if clear and named else "unclear",
            f"{tool}.{argument}={label}: {message[:300]}",
        )
        return
    except Exception as exc:  # anything else escaping the server is a crash
        classify(SURFACE, "crash", f"{tool}.{argument}={label}: {type(exc).__name__}: {exc}"[:500])
        return
    found = out["result"] if tool == "search_knowledge_base" else [out]
    leaked = [h["id"] for h in found if not visible_to("A", owner.get(h["id"]))]
    classify(SURFACE, "foreign_chunk" if leaked else "ok", f"{tool}.{argument}={label}: {leaked[:3]}")
