"""MCP over Streamable HTTP at `/mcp` of the real service (uvicorn, 127.0.0.1), with the MCP SDK's client.

One key per tenant: each lists the tools and calls every one, and sees only its own tenant's documents.
A wrong key is refused before any MCP processing; a key's rate limit answers 429; an ask via MCP
leaves its audit line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from tests.adapters.service.server_helpers import KEY_A, KEY_B, TENANT_SOURCES, running_server, wait_for

pytestmark = pytest.mark.integration

KEYS = {"A": KEY_A, "B": KEY_B}
LIMITED_KEY = "hg-test-tenant-a-limited-0003"
PER_DIEM = "What is the per diem for business travel?"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path) -> Iterator[tuple[str, Path]]:
    """The service over the two-tenant store, keys for A and B (and a rate-limited A key), an audit log."""
    from haygraph.adapters.service import HaygraphService, ServiceSettings

    root = tmp_path_factory.mktemp("mcp-http")
    keys = root / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n'
        f'"{LIMITED_KEY}": {{tenant: A, requests_per_minute: 2}}\n'
    )
    audit = root / "audit.jsonl"
    settings = ServiceSettings(store_dir=tenant_store, api_keys=keys, audit_log=audit)
    with running_server(HaygraphService(settings)) as url:
        yield url, audit


async def _session_calls(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Open an MCP session with `key`, list the tools, make `calls`; the names and results."""
    async with (
        httpx.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, session_id),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, args) for name, args in calls]
        return {
            "server": init.serverInfo.name,
            "session_id": session_id(),
            "tools": {t.name: t for t in tools.tools},
            "results": results,
        }


def calls(url: str, key: str, *tool_calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return asyncio.run(_session_calls(url, key, list(tool_calls)))


def structured(result: CallToolResult) -> Any:
    assert not result.isError, result.content
    data = result.structuredContent
    assert data is not None
    return data.get("result", data) if set(data) == {"result"} else data


def error_text(result: CallToolResult) -> str:
    assert result.isError
    return " ".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("tenant", ["A", "B"])
def test_each_tenant_lists_and_calls_every_tool_and_sees_only_its_documents(
    served: tuple[str, Path], tenant: str
) -> None:
    url, _ = served
    other = "B" if tenant == "A" else "A"
    foreign = calls(
        url, KEYS[other], ("search_knowledge_base", {"query": "travel policy per diem", "top_k": 10})
    )
    foreign_ids = [hit["id"] for hit in structured(foreign["results"][0])]
    assert foreign_ids

    done = calls(
        url,
        KEYS[tenant],
        ("search_knowledge_base", {"query": "travel policy per diem expense claims", "top_k": 10}),
        ("ask", {"question": PER_DIEM}),
        ("get_chunk", {"chunk_id": foreign_ids[0]}),
        (
            "search_knowledge_base",
            {
                "query": "Globex Acme per diem",
                "filters": {"field": "meta.tenant", "operator": "==", "value": other},
            },
        ),
    )
    assert done["server"] == "haygraph" and done["session_id"] is None  # stateless: no session to lose
    assert set(done["tools"]) == {"search_knowledge_base", "get_chunk", "ask"}
    assert all(t.annotations and t.annotations.readOnlyHint for t in done["tools"].values())
    search, ask, foreign_chunk, widened = done["results"]

    hits = structured(search)
    assert hits and {h["source"] for h in hits} <= TENANT_SOURCES[tenant]
    assert not {h["id"] for h in hits} & set(foreign_ids)

    answer = structured(ask)
    assert answer["status"] == "completed" and answer["answered"] is True
    assert answer["evidence_ids"] and [c["id"] for c in answer["citations"]] == answer["evidence_ids"]
    assert {c["source"] for c in answer["citations"]} <= TENANT_SOURCES[tenant]
    assert {"page", "char_start", "text"} <= set(answer["citations"][0])
    assert not any(source in answer["answer"] for source in TENANT_SOURCES[other])

    assert "no chunk with id" in error_text(foreign_chunk)  # another tenant's chunk: as if it did not exist
    assert structured(widened) == []  # a filter naming the other tenant narrows to nothing

    own = calls(url, KEYS[tenant], ("get_chunk", {"chunk_id": hits[0]["id"]}))
    chunk = structured(own["results"][0])
    assert chunk["id"] == hits[0]["id"] and chunk["source"] in TENANT_SOURCES[tenant]


def test_ask_refuses_what_only_the_other_tenant_knows(served: tuple[str, Path]) -> None:
    url, audit = served
    question = "What is the Wi-Fi password of the Globex office?"
    done = calls(url, KEY_A, ("ask", {"question": question}))
    answer = structured(done["results"][0])
    assert answer["status"] == "insufficient_evidence" and answer["answered"] is False
    assert answer["evidence_ids"] == [] and answer["citations"] == []
    assert answer["answer"]
    asks = [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]
    last = [e for e in asks if e["action"] == "ask" and e.get("via") == "mcp"][-1]
    assert last["tenant"] == "A" and last["outcome"] == "insufficient_evidence"
    assert last["actor"].startswith("key:") and "question" not in last  # not kept without --audit-questions


def test_an_ask_via_mcp_leaves_one_audit_line_with_its_evidence_ids(served: tuple[str, Path]) -> None:
    url, audit = served
    before = audit.read_text().splitlines() if audit.exists() else []
    done = calls(url, KEY_B, ("ask", {"question": PER_DIEM}))
    answer = structured(done["results"][0])
    added = [json.loads(line) for line in audit.read_text().splitlines()[len(before) :] if line.strip()]
    assert [e["action"] for e in added] == ["ask"]
    line = added[0]
    assert line["via"] == "mcp" and line["tenant"] == "B" and line["outcome"] == "completed"
    assert line["evidence_ids"] == answer["evidence_ids"] and line["evidence_ids"]


def refusal_lines(audit: Path, before: int) -> list[dict[str, Any]]:
    """The audit lines added after the first `before`, once a refusal's line is there (10 s at most).

    The audit middleware writes a refused request's line once its response has ended, so the client can
    hold the 401 or 429 a moment before the line is on disk (seen on a loaded machine).
    """

    def lines() -> list[str]:
        return [line for line in audit.read_text().splitlines()[before:] if line.strip()]

    wait_for(lambda: audit.exists() and bool(lines()), 10.0)
    return [json.loads(line) for line in lines()]


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ({}, "missing API key: send the header 'Authorization: Bearer KEY'"),
        ({"Authorization": "Bearer hg-not-a-real-key-000000"}, "invalid API key"),
    ],
)
def test_a_wrong_or_missing_key_is_refused_before_any_mcp_processing(
    served: tuple[str, Path], headers: dict[str, str], message: str
) -> None:
    url, audit = served
    before = len(audit.read_text().splitlines()) if audit.exists() else 0
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    accept = {"Accept": "application/json, text/event-stream", **headers}
    response = httpx.post(f"{url}/mcp", json=initialize, headers=accept, timeout=30)
    assert response.status_code == 401
    assert response.json() == {"error": {"type": "authentication_error", "message": message}}
    assert response.headers["www-authenticate"] == "Bearer"
    added = refusal_lines(audit, before)
    assert [(e["action"], e["actor"], e["outcome"], e["status"]) for e in added] == [
        ("mcp", "unauthenticated", "refused", 401)
    ]


def test_the_sdk_client_with_a_wrong_key_gets_the_401(served: tuple[str, Path]) -> None:
    url, _ = served
    with pytest.raises(BaseException) as caught:  # the SDK raises from its task group
        calls(url, "hg-not-a-real-key-000000")
    assert "401" in repr(caught.value) or any(
        "401" in repr(e) for e in getattr(caught.value, "exceptions", ())
    )


def test_the_keys_rate_limit_answers_429_on_mcp(served: tuple[str, Path]) -> None:
    url, audit = served
    before = len(audit.read_text().splitlines()) if audit.exists() else 0
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Authorization": f"Bearer {LIMITED_KEY}", "Accept": "application/json, text/event-stream"}
    statuses = []
    for _ in range(3):  # the bucket holds 2
        response = httpx.post(f"{url}/mcp", json=listing, headers=headers, timeout=30)
        statuses.append(response.status_code)
    assert statuses == [200, 200, 429]
    assert response.json()["error"]["type"] == "rate_limited" and int(response.headers["retry-after"]) >= 1
    # the refused request leaves one audit line; the accepted ones (no ask among them) none
    added = refusal_lines(audit, before)
    assert [(e["action"], e["tenant"], e["outcome"], e["status"]) for e in added] == [
        ("mcp", "A", "refused", 429)
    ]
    # the first two were real MCP answers: the tools, as JSON (stateless, no server-sent stream)
    ok = httpx.post(f"{url}/mcp", json=listing, headers={**headers, "Authorization": f"Bearer {KEY_A}"})
    assert ok.headers["content-type"].startswith("application/json") and "mcp-session-id" not in ok.headers
    assert {t["name"] for t in ok.json()["result"]["tools"]} == {"search_knowledge_base", "get_chunk", "ask"}


def test_bad_arguments_are_tool_errors(served: tuple[str, Path]) -> None:
    url, _ = served
    done = calls(
        url,
        KEY_A,
        ("ask", {"question": ""}),
        ("ask", {"question": "x", "filters": {"field": "meta.x", "operator": "~=", "value": 1}}),
        ("get_chunk", {"chunk_id": "x" * 5000}),
    )
    empty, bad_filter, long_id = done["results"]
    assert "question" in error_text(empty)
    assert "filter" in error_text(bad_filter)
    assert "5000 characters" in error_text(long_id)


def test_without_keys_only_loopback_names_may_reach_mcp(tenant_store: Path) -> None:
    """Without keys (loopback only): a rebound name (`Host`) or a foreign page (`Origin`) is refused."""
    from haygraph.adapters.service import HaygraphService, ServiceSettings

    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    with running_server(HaygraphService(ServiceSettings(store_dir=tenant_store))) as url:
        port = url.rsplit(":", 1)[1]
        ok = httpx.post(f"{url}/mcp", json=listing, headers=accept, timeout=30)
        assert ok.status_code == 200 and len(ok.json()["result"]["tools"]) == 3
        local = httpx.post(f"{url}/mcp", json=listing, headers={**accept, "Host": f"localhost:{port}"})
        assert local.status_code == 200
        rebound = httpx.post(f"{url}/mcp", json=listing, headers={**accept, "Host": f"evil.example:{port}"})
        assert rebound.status_code == 421
        foreign = httpx.post(f"{url}/mcp", json=listing, headers={**accept, "Origin": "http://evil.example"})
        assert foreign.status_code == 403


def test_haygraphs_own_mcp_client_uses_it_as_a_toolset(served: tuple[str, Path]) -> None:
    """`MCPToolset` with `streamable_http` and the key in `headers` (as docs/service.md shows)."""
    from haygraph.adapters.mcp.client import MCPToolset
    from haygraph.control.tools import ContractToolExecutor, ToolCall, ToolRegistry

    url, _ = served
    connection = {
        "transport": "streamable_http",
        "url": f"{url}/mcp",
        "headers": {"Authorization": f"Bearer {KEY_B}"},
    }
    with MCPToolset({"kb": connection}, timeout_s=60, max_retries=0) as toolset:
        registry = ToolRegistry(toolset.contracts())
        assert set(registry.names()) == {"search_knowledge_base", "get_chunk", "ask"}
        executor = ContractToolExecutor(registry, registry.names(), max_calls_per_turn=5)
        [asked] = executor.execute([ToolCall(id="1", name="ask", args={"question": PER_DIEM})], thread_id="t")
    assert asked.status == "ok", asked.error
    assert {c["source"] for c in asked.content["structured"]["citations"]} <= TENANT_SOURCES["B"]


def test_a_client_session_survives_a_restart_of_serve(tmp_path: Path, tenant_store: Path) -> None:
    """Stateless: one `ClientSession` keeps calling while `serve` stops and a new one starts on its port."""
    from haygraph.adapters.service import HaygraphService, ServiceSettings
    from tests.adapters.service.server_helpers import free_port, write_keys

    settings = ServiceSettings(store_dir=tenant_store, api_keys=write_keys(tmp_path / "keys.yaml"))
    port = free_port()
    servers = [running_server(HaygraphService(settings), port)]
    url = servers[0].__enter__()

    def restart() -> None:
        servers[0].__exit__(None, None, None)  # the old server is gone ...
        servers[0] = running_server(HaygraphService(settings), port)
        assert servers[0].__enter__() == url  # ... and a new one listens (a fresh service, nothing shared)

    async def session() -> tuple[CallToolResult, CallToolResult, set[str]]:
        async with (
            httpx.AsyncClient(headers={"Authorization": f"Bearer {KEY_A}"}, timeout=60) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            before = await client.call_tool("ask", {"question": PER_DIEM})
            await asyncio.to_thread(restart)
            after = await client.call_tool("ask", {"question": PER_DIEM})
            listed = await client.list_tools()
            return before, after, {t.name for t in listed.tools}

    try:
        before, after, names = asyncio.run(session())
    finally:
        servers[0].__exit__(None, None, None)
    first = structured(before)
    assert first["evidence_ids"] and {c["source"] for c in first["citations"]} <= TENANT_SOURCES["A"]
    assert structured(after)["evidence_ids"] == first["evidence_ids"]
    assert names == {"search_knowledge_base", "get_chunk", "ask"}
