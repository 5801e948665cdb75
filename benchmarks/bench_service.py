"""Benchmark `haygraph serve`: concurrent clients asking over HTTP vs a cold-start `haygraph ask`.

Starts a real server process on 127.0.0.1 over the handbook store (built from the bundled sample
with the embedding cache when no --store is given), runs CLIENTS concurrent clients that each send
ASKS one-off questions to `POST /v1/ask`, and reports latency p50/p95, throughput and errors (any
non-200 response or transport failure). In the same run it times `haygraph ask --json` as a fresh
process (model and store loaded per call), which is what the service saves.

    python benchmarks/bench_service.py [--store DIR] [--clients 8] [--asks 50] [--out result.json]

`--knee` measures overload instead: for each of `--levels` (default 1, 8, 32, 128) concurrent clients
asking for `--seconds` each, throughput of answers, latency p50/p95/p99 of the 200s, the share of 429s
and their latency p99 (a client waits `--backoff` seconds after a 429, default 0.2, or what the
`Retry-After` header says with `--backoff retry-after`, then asks again). Server flags after `--`
(e.g. `-- --max-in-flight 4 --max-queue 32`) are passed to `haygraph serve`.

Traffic goes only to the server this script starts on 127.0.0.1; the loops are bounded.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

QUESTIONS = (
    "How many days of annual leave do I get?",
    "What is the minimum length for my password?",
    "请问婚假有几天？",
    "Can I carry over unused annual leave?",
    "每个月报销截止是几号？",
    "How do I book a meeting room?",
    "Can I bring my dog to the office?",
    "Hi there!",
)
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}


def build_handbook_store(root: Path) -> Path:
    """Index the bundled handbook into `root/store` (embeddings from $HAYGRAPH_CACHE_DIR when cached)."""
    from haygraph.retrieval import KnowledgeBase, sample_handbook_path

    store = root / "store"
    KnowledgeBase(store_dir=store).index([sample_handbook_path()])
    return store


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(
    store: Path, port: int, extra: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], float]:
    """Start `haygraph serve` and wait until /readyz answers; returns the process and its start-up seconds."""
    start = time.perf_counter()
    cmd = [
        sys.executable,
        "-m",
        "haygraph.adapters.cli.main",
        "serve",
        "--store",
        str(store),
        "--port",
        str(port),
    ]
    cmd += extra or []
    proc = subprocess.Popen(cmd, env={**os.environ, **OFFLINE_ENV}, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with status {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc, time.perf_counter() - start
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not become ready within 300 s")


def run_clients(
    url: str, clients: int, asks: int, questions: Sequence[str] = QUESTIONS, offset: int = 0
) -> dict[str, Any]:
    """`clients` threads each send `asks` questions; latencies in ms, error count, wall time.

    Client `i`'s `n`-th question is `questions[(offset + i * asks + n) % len(questions)]` when the
    list holds more than half the round's asks (the clients then ask different questions while the
    list lasts), else `questions[(i + n) % len(questions)]` (a short list, over and over).
    """
    spread = len(questions) > clients * asks // 2
    latencies: list[float] = []
    errors: list[str] = []
    statuses: dict[str, int] = {}
    lock = threading.Lock()

    def client(index: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            for n in range(asks):
                slot = offset + index * asks + n if spread else index + n
                question = questions[slot % len(questions)]
                start = time.perf_counter()
                try:
                    response = http.post("/v1/ask", json={"question": question})
                    ok = response.status_code == 200
                    status = response.json().get("status") if ok else None
                except httpx.HTTPError as exc:
                    ok, status = False, None
                    response = None
                    with lock:
                        errors.append(f"{type(exc).__name__}: {exc}")
                elapsed = (time.perf_counter() - start) * 1000.0
                with lock:
                    latencies.append(elapsed)
                    if not ok and response is not None:
                        errors.append(f"HTTP {response.status_code}: {response.text[:200]}")
                    if status:
                        statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    values = np.asarray(latencies)
    return {
        "requests": len(latencies),
        "errors": len(errors),
        "error_samples": errors[:5],
        "statuses": statuses,
        "p50_ms": round(float(np.percentile(values, 50)), 1),
        "p95_ms": round(float(np.percentile(values, 95)), 1),
        "max_ms": round(float(values.max()), 1),
        "wall_s": round(wall, 2),
        "throughput_rps": round(len(latencies) / wall, 1),
    }


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(np.asarray(values), q)), 1) if values else None


class RawHttpClient:
    """One keep-alive HTTP/1.1 connection speaking just enough HTTP for JSON requests.

    httpx's async client spends milliseconds of CPU per request once it holds ~100 connections (here
    /healthz at 128 clients: 368 requests in 5 s against 10,784 for this client), which would measure
    the client, not the service.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post_json(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """Send one POST; (status, lower-cased headers, body). Reconnects when the server closed."""
        if self._writer is None or self._writer.is_closing():
            self._reader, self._writer = await asyncio.open_connection("127.0.0.1", self.port)
        assert self._reader is not None
        data = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n\r\n"
        )
        self._writer.write(head.encode() + data)
        await self._writer.drain()
        raw_head = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:] if h)}
        payload = await self._reader.readexactly(int(headers.get("content-length", "0")))
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, headers, payload

    def close(self) -> None:
        """Close the connection."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


async def _knee_level(port: int, clients: int, seconds: float, backoff: str = "0.2") -> dict[str, Any]:
    """`clients` concurrent asyncio clients asking for `seconds`; answers, 429s and their latencies."""
    ok_ms: list[float] = []
    shed_ms: list[float] = []
    other: dict[str, int] = {}
    stop_at = time.perf_counter() + seconds

    async def client(index: int) -> None:
        http = RawHttpClient(port)
        n = 0
        try:
            while time.perf_counter() < stop_at:
                question = QUESTIONS[(index + n) % len(QUESTIONS)]
                n += 1
                start = time.perf_counter()
                retry_after = "1"
                try:
                    status, headers, _ = await http.post_json("/v1/ask", {"question": question})
                    code, retry_after = str(status), headers.get("retry-after", "1")
                except (OSError, asyncio.IncompleteReadError) as exc:
                    code = type(exc).__name__
                    http.close()
                elapsed = (time.perf_counter() - start) * 1000.0
                if code == "200":
                    ok_ms.append(elapsed)
                elif code == "429":
                    shed_ms.append(elapsed)
                    await asyncio.sleep(float(retry_after if backoff == "retry-after" else backoff))
                else:
                    other[code] = other.get(code, 0) + 1
        finally:
            http.close()

    wall = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    wall = time.perf_counter() - wall
    total = len(ok_ms) + len(shed_ms) + sum(other.values())
    return {
        "clients": clients,
        "requests": total,
        "answered": len(ok_ms),
        "answers_per_s": round(len(ok_ms) / wall, 1),
        "p50_ms": _pct(ok_ms, 50),
        "p95_ms": _pct(ok_ms, 95),
        "p99_ms": _pct(ok_ms, 99),
        "share_429": round(len(shed_ms) / total, 3) if total else 0.0,
        "p50_429_ms": _pct(shed_ms, 50),
        "p99_429_ms": _pct(shed_ms, 99),
        "other": other,
    }


def knee(port: int, levels: list[int], seconds: float, backoff: str = "0.2") -> list[dict[str, Any]]:
    """Run `_knee_level` for each concurrency level in turn."""
    return [asyncio.run(_knee_level(port, clients, seconds, backoff)) for clients in levels]


def print_knee(rows: list[dict[str, Any]], out: Any) -> None:
    """The knee as a Markdown table."""
    out.write("| clients | answers/s | p50 ms | p95 ms | p99 ms | 429 share | 429 p50 / p99 ms | other |\n")
    out.write("|---|---|---|---|---|---|---|---|\n")
    for r in rows:
        out.write(
            f"| {r['clients']} | {r['answers_per_s']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} | "
            f"{r['share_429']:.1%} | {r['p50_429_ms'] or '-'} / {r['p99_429_ms'] or '-'} | "
            f"{r['other'] or 0} |\n"
        )


def cold_cli_ask(store: Path, runs: int) -> dict[str, Any]:
    """Time `haygraph ask --json` as a fresh process `runs` times (median and each run, seconds)."""
    times = []
    for n in range(runs):
        question = QUESTIONS[n % len(QUESTIONS)]
        cmd = [
            sys.executable,
            "-m",
            "haygraph.adapters.cli.main",
            "ask",
            question,
            "--store",
            str(store),
            "--json",
        ]
        start = time.perf_counter()
        subprocess.run(cmd, env={**os.environ, **OFFLINE_ENV}, check=True, capture_output=True, timeout=300)
        times.append(time.perf_counter() - start)
    return {
        "runs": runs,
        "median_s": round(float(np.median(times)), 2),
        "each_s": [round(t, 2) for t in times],
    }


def main() -> None:
    """Run the benchmark and print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="store directory (default: the handbook, indexed now)")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--asks", type=int, default=50, help="questions per client")
    parser.add_argument("--cli-runs", type=int, default=3, help="cold-start `haygraph ask` runs")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    parser.add_argument("--knee", action="store_true", help="measure overload at --levels clients")
    parser.add_argument("--levels", default="1,8,32,128", help="concurrency levels of --knee")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per --knee level")
    parser.add_argument(
        "--backoff", default="0.2", help="seconds a --knee client waits after a 429, or 'retry-after'"
    )
    parser.add_argument("serve_args", nargs="*", help="extra `haygraph serve` flags (after --)")
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    if args.knee:
        main_knee(args)
        return
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        store = args.store or build_handbook_store(Path(tmp))
        port = free_port()
        server, startup_s = start_server(store, port)
        try:
            url = f"http://127.0.0.1:{port}"
            run_clients(url, 2, 2)  # warm the first code paths
            service = run_clients(url, args.clients, args.asks)
        finally:
            server.terminate()
            server.wait(timeout=60)
        cli = cold_cli_ask(store, args.cli_runs)
    figures = {"clients": args.clients, "asks_per_client": args.asks, "server_startup_s": round(startup_s, 1)}
    figures |= {"service": service, "cli_cold_ask": cli}
    out = sys.stdout
    out.write(f"server start-up (store + model loaded, warm): {figures['server_startup_s']} s\n")
    out.write(
        f"service /v1/ask, {args.clients} clients x {args.asks}: p50 {service['p50_ms']} ms, "
        f"p95 {service['p95_ms']} ms, max {service['max_ms']} ms, {service['throughput_rps']} req/s, "
        f"errors {service['errors']} / {service['requests']}; statuses {service['statuses']}\n"
    )
    out.write(f"cold `haygraph ask --json` (new process each): median {cli['median_s']} s {cli['each_s']}\n")
    if args.out:
        args.out.write_text(json.dumps(figures, ensure_ascii=False, indent=2))
    if service["errors"]:
        out.write(f"ERRORS: {service['error_samples']}\n")
        raise SystemExit(1)


def main_knee(args: argparse.Namespace) -> None:
    """The --knee run: one server, each concurrency level in turn, a table on stdout."""
    levels = [int(v) for v in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp:
        store = args.store or build_handbook_store(Path(tmp))
        port = free_port()
        server, _ = start_server(store, port, args.serve_args)
        try:
            url = f"http://127.0.0.1:{port}"
            run_clients(url, 2, 2)  # warm the first code paths
            limits = httpx.get(f"{url}/readyz", timeout=10).json()["load"]
            rows = knee(port, levels, args.seconds, args.backoff)
        finally:
            server.terminate()
            server.wait(timeout=60)
    sys.stdout.write(
        f"haygraph serve {' '.join(args.serve_args)}: {limits['max_in_flight']} in flight, "
        f"{limits['max_queue']} queued; {args.seconds:g} s per level, POST /v1/ask, offline mode; "
        f"after a 429 a client waits {args.backoff}\n"
    )
    print_knee(rows, sys.stdout)
    if args.out:
        args.out.write_text(json.dumps({"limits": limits, "levels": rows}, indent=2))


if __name__ == "__main__":
    main()
