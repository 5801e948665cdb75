"""Benchmark MCP over Streamable HTTP (`/mcp`) against the REST routes of the same `haygraph serve`.

Starts one real server process on 127.0.0.1 over the handbook store (built from the bundled sample with
the embedding cache when no --store is given) and, one request at a time and interleaved (so load and
machine noise hit every mode alike), times for each of the handbook questions, `--rounds` times:

- `rest ask`: `POST /v1/ask` (httpx, one kept-alive connection);
- `mcp ask`: the `ask` tool through one open MCP SDK `ClientSession` (its `initialize` done once);
- `mcp ask, new session`: a new `ClientSession` per question (`initialize`, `notifications/initialized`,
  then the call: what a host that reconnects for every call pays);
- `rest search` / `mcp search`: `POST /v1/search` and the `search_knowledge_base` tool (top 5);
- `mcp search, raw`: the same tool call as one hand-made JSON-RPC `POST /mcp` (httpx), without the SDK
  client (which validates every result against the tool's output schema): the server's share.

It prints p50 / p95 milliseconds per mode and the MCP overhead over REST (p50 difference).

    python benchmarks/bench_mcp_http.py [--store DIR] [--rounds 5] [--out result.json]

Traffic goes only to the server this script starts on 127.0.0.1; the loops are bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from benchmarks.bench_service import QUESTIONS, build_handbook_store, free_port, start_server

MODES = ("rest ask", "mcp ask", "mcp ask, new session", "rest search", "mcp search", "mcp search, raw")
_JSON_RPC = {"Accept": "application/json, text/event-stream"}


async def _new_session_ask(http: httpx.AsyncClient, url: str, question: str) -> None:
    async with (
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("ask", {"question": question})
        assert not result.isError, result.content


async def measure(url: str, rounds: int) -> dict[str, list[float]]:
    """Milliseconds per request for every mode, interleaved question by question."""
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    async with (
        httpx.AsyncClient(base_url=url, timeout=120) as rest,
        httpx.AsyncClient(timeout=120) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()

        async def rest_ask(question: str) -> None:
            response = await rest.post("/v1/ask", json={"question": question})
            assert response.status_code == 200, response.text

        async def mcp_ask(question: str) -> None:
            result = await session.call_tool("ask", {"question": question})
            assert not result.isError, result.content

        async def rest_search(question: str) -> None:
            response = await rest.post("/v1/search", json={"query": question, "top_k": 5})
            assert response.status_code == 200, response.text

        async def mcp_search(question: str) -> None:
            result = await session.call_tool("search_knowledge_base", {"query": question, "top_k": 5})
            assert not result.isError, result.content

        async def fresh_ask(question: str) -> None:
            await _new_session_ask(http, url, question)

        async def raw_search(question: str) -> None:
            arguments = {"query": question, "top_k": 5}
            call = {"name": "search_knowledge_base", "arguments": arguments}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            response = await rest.post("/mcp", json=body, headers=_JSON_RPC)
            assert response.status_code == 200 and "error" not in response.json(), response.text

        runs = {
            "rest ask": rest_ask,
            "mcp ask": mcp_ask,
            "mcp ask, new session": fresh_ask,
            "rest search": rest_search,
            "mcp search": mcp_search,
            "mcp search, raw": raw_search,
        }
        for question in QUESTIONS:  # warm every path once
            for run in runs.values():
                await run(question)
        for _ in range(rounds):
            for question in QUESTIONS:
                for mode, run in runs.items():
                    start = time.perf_counter()
                    await run(question)
                    times[mode].append((time.perf_counter() - start) * 1000.0)
    return times


def _pct(values: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values), q)), 1)


def main() -> None:
    """Run the benchmark and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store directory (default: the handbook, indexed into a temp dir)")
    parser.add_argument("--rounds", type=int, default=5, help="times each question is asked per mode")
    parser.add_argument("--out", help="write the figures as JSON here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(args.store) if args.store else build_handbook_store(Path(tmp))
        port = free_port()
        proc, startup_s = start_server(store, port)
        try:
            times = asyncio.run(measure(f"http://127.0.0.1:{port}", args.rounds))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    summary: dict[str, Any] = {
        mode: {"n": len(v), "p50_ms": _pct(v, 50), "p95_ms": _pct(v, 95)} for mode, v in times.items()
    }
    summary["startup_s"] = round(startup_s, 1)
    for mode in MODES:
        row = summary[mode]
        print(f"{mode:22s} n={row['n']:3d}  p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms")
    ask_extra = summary["mcp ask"]["p50_ms"] - summary["rest ask"]["p50_ms"]
    search_extra = summary["mcp search"]["p50_ms"] - summary["rest search"]["p50_ms"]
    print(f"MCP over REST, p50: ask {ask_extra:+.1f} ms, search {search_extra:+.1f} ms")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
