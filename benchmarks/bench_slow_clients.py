"""1,000 slow or vanishing clients against `haygraph serve`: RSS, file descriptors and threads before/after.

Starts a real server on 127.0.0.1 over the handbook store (offline mode, default load settings unless
flags follow `--`) and sends it `--clients` clients in batches of `--batch`, an equal share of each kind:

- `slow_body`: a `POST /v1/ask` whose body arrives one byte a second (expects 408 at `--body-timeout`);
- `slow_headers`: a request line and headers that never end (expects the server to close);
- `never_reads`: a `POST /v1/ask/stream` whose response is never read; closed after 12 s;
- `vanishes`: a `POST /v1/ask/stream` closed as soon as the response starts.

Before and after (once the server is idle again) it reads the server's RSS, open file descriptors
and threads from /proc, checks `/readyz` (no slot in use, no run in flight: no stuck worker) and
that a normal ask still answers.

    python -m benchmarks.bench_slow_clients [--clients 1000] [--batch 250] [-- serve flags]

Traffic goes only to the server this script starts; every client and loop is bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from benchmarks.bench_service import OFFLINE_ENV, build_handbook_store, free_port, start_server

KINDS = ("slow_body", "slow_headers", "never_reads", "vanishes")
QUESTION = "How many days of annual leave do I get?"


def process_figures(pid: int) -> dict[str, float]:
    """RSS (MB), open file descriptors and threads of process `pid`, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in status if ":" in line}
    return {
        "rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(fields["Threads"]),
    }


def _request(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode()


async def one_client(port: int, kind: str, limit_s: float) -> str:
    """One client of `kind`; returns what it saw (a status line, `closed` or `timeout`)."""
    body = json.dumps({"question": QUESTION}).encode()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        if kind == "slow_body":
            writer.write(_request("/v1/ask", body))
            for i in range(len(body)):
                writer.write(body[i : i + 1])
                await writer.drain()
                try:
                    line = await asyncio.wait_for(reader.readline(), 1.0)
                except TimeoutError:
                    continue
                return line.decode(errors="replace").strip()[:12] or "closed"
            return "body complete"
        if kind == "slow_headers":
            writer.write(b"POST /v1/ask HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            for _ in range(int(limit_s)):
                writer.write(b"X")
                await writer.drain()
                try:
                    data = await asyncio.wait_for(reader.read(1024), 1.0)
                except TimeoutError:
                    continue
                return data.decode(errors="replace")[:12] or "closed"
            return "timeout"
        writer.write(_request("/v1/ask/stream", body) + body)
        await writer.drain()
        if kind == "never_reads":
            await asyncio.sleep(12)
            return "left unread"
        line = await asyncio.wait_for(reader.readline(), limit_s)
        return f"vanished after {line.decode(errors='replace').strip()[:12]}"
    except (OSError, asyncio.IncompleteReadError, TimeoutError) as exc:
        return type(exc).__name__
    finally:
        writer.close()


async def run_clients(port: int, clients: int, batch: int, limit_s: float) -> Counter[str]:
    """All clients, `batch` at a time, kinds interleaved; a count of (kind, outcome)."""
    seen: Counter[str] = Counter()
    kinds = [KINDS[i % len(KINDS)] for i in range(clients)]
    for start in range(0, clients, batch):
        group = kinds[start : start + batch]
        outcomes = await asyncio.gather(*(one_client(port, kind, limit_s) for kind in group))
        seen.update(f"{kind}: {outcome}" for kind, outcome in zip(group, outcomes, strict=True))
    return seen


def wait_idle(url: str, timeout_s: float) -> dict[str, Any]:
    """Poll /readyz until nothing is in flight (or the timeout); its last load figures."""
    deadline = time.monotonic() + timeout_s
    while True:
        body = httpx.get(f"{url}/readyz", timeout=10).json()
        now = {**body["load"], "active_runs": body["active_runs"]}
        if (now["in_flight"], now["waiting"], now["active_runs"]) == (0, 0, 0) or time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def warm_up(url: str) -> None:
    """Concurrent asks and streams, so the server's worker-thread pools have grown before `before`."""

    def both(_: int) -> None:
        for _ in range(3):
            httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, timeout=60)
            httpx.post(f"{url}/v1/ask/stream", json={"question": QUESTION}, timeout=60)

    with ThreadPoolExecutor(12) as pool:
        list(pool.map(both, range(12)))


def main() -> None:
    """Run the clients and print the before/after figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="store directory (default: the handbook, indexed now)")
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=250, help="clients at once")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    parser.add_argument("serve_args", nargs="*", help="extra `haygraph serve` flags (after --)")
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    with tempfile.TemporaryDirectory(prefix="bench-slow-") as tmp:
        store = args.store or build_handbook_store(Path(tmp))
        port = free_port()
        server, _ = start_server(store, port, args.serve_args)
        url = f"http://127.0.0.1:{port}"
        try:
            warm_up(url)
            before = process_figures(server.pid)
            start = time.monotonic()
            seen = asyncio.run(run_clients(port, args.clients, args.batch, 20.0))
            elapsed = time.monotonic() - start
            idle = wait_idle(url, 30)
            time.sleep(6)  # uvicorn's keep-alive timeout (5 s) for any connection left open
            after = process_figures(server.pid)
            ask = httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, timeout=60)
            answered = ask.status_code == 200 and ask.json().get("status") == "completed"
        finally:
            server.terminate()
            server.wait(timeout=60)
    figures = {
        "clients": args.clients,
        "seconds": round(elapsed, 1),
        "before": before,
        "after": after,
        "idle_load": idle,
        "next_ask_answered": answered,
        "outcomes": dict(sorted(seen.items())),
    }
    out = sys.stdout
    out.write(f"{args.clients} slow/vanishing clients in {figures['seconds']} s ({args.batch} at once)\n")
    out.write(f"server before: {before}\nserver after:  {after}\n")
    out.write(
        f"load after (stuck workers = in_flight + active_runs): {idle}; next ask answered: {answered}\n"
    )
    for outcome, count in sorted(seen.items()):
        out.write(f"  {count:5d}  {outcome}\n")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
