"""Resident memory of a real `haygraph serve` process under searches and asks, one and four at a time.

Run as ``python -m benchmarks.bench_serve_memory --store DIR [--config FILE] [--searches 500]
[--asks 90]``. It starts ``haygraph serve`` on the store (``--config``: a PostgreSQL or Qdrant store's
config, as `serve` takes it), waits for ``/readyz``, then runs, over HTTP with real queries of the
shared datasets (round-robin, `bench_retrieval.load_queries`):

1. a fifth of the searches (``/v1/search``, top 5) one at a time, the rest four at a time;
2. a third of the asks (``/v1/chat/completions``, offline: rules and extractive answers) one at a time,
   the rest four at a time.

After start and after each phase it prints the process's VmRSS, RssAnon and RssFile (MB) at once and
again once the process has been idle for `SETTLE_S` seconds (what it holds between bursts), and its
peak (VmHWM). `haygraph serve` sets up glibc's allocator for itself (`haygraph.adapters.service.
allocator`); set ``MALLOC_ARENA_MAX`` and ``MALLOC_MMAP_THRESHOLD_`` in the environment to compare with
other settings, in the same run or on the same machine. A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchmarks.bench_postgres import memory, wait_until_ready
from benchmarks.bench_retrieval import load_queries
from haygraph.eval.index_prep import datasets_root
from tests.adapters.service.server_helpers import free_port

SETTLE_S = 12.0
"""Idle seconds before the settled reading: more than two of the serve process's trim intervals."""


def resident(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile and VmHWM of `pid`, whole MB."""
    return {k: round(v) for k, v in memory(pid).items()}


def main(argv: list[str] | None = None) -> int:
    """Start the server, load it in phases, print its memory after each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, help="store directory (default: a new temporary one)")
    parser.add_argument("--config", type=Path, help="config file for `serve --config` (another backend)")
    parser.add_argument("--searches", type=int, default=500)
    parser.add_argument("--asks", type=int, default=90)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    store = args.store or Path(tempfile.mkdtemp(prefix="haygraph-bench-memory-"))
    queries = load_queries(datasets_root(), args.searches + args.asks)
    port = free_port()
    cmd = [str(Path(sys.executable).parent / "haygraph"), "serve", "--store", str(store), "--port", str(port)]
    if args.config:
        cmd += ["--config", str(args.config)]
    log_path = Path(tempfile.mkdtemp(prefix="haygraph-bench-memory-log-")) / "serve.log"
    figures: list[dict[str, object]] = []
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            started = time.perf_counter()
            wait_until_ready(proc, base, log_path)
            print(f"ready in {time.perf_counter() - started:.1f} s ({cmd[1:]})")

            def report(phase: str, seconds: float | None = None) -> None:
                now = resident(proc.pid)
                time.sleep(SETTLE_S)
                settled = resident(proc.pid)
                took = f" ({seconds:.2f} s each)" if seconds is not None else ""
                print(f"{phase + took:44s} now {now}\n{'':44s} settled {settled}", flush=True)
                figures.append({"phase": phase, "now": now, "settled": settled, "seconds_each": seconds})

            report("after start")
            with httpx.Client(base_url=base, timeout=600) as client:

                def search(q: str) -> None:
                    client.post("/v1/search", json={"query": q, "top_k": 5}).raise_for_status()

                def ask(q: str) -> None:
                    body = {"model": "haygraph", "messages": [{"role": "user", "content": q}]}
                    client.post("/v1/chat/completions", json=body).raise_for_status()

                def phase(name: str, work: Callable[[str], None], batch: list[str], parallel: int) -> None:
                    if not batch:
                        return
                    t0 = time.perf_counter()
                    with ThreadPoolExecutor(parallel) as pool:
                        list(pool.map(work, batch))
                    each = (time.perf_counter() - t0) / len(batch)
                    report(f"+{len(batch)} {name}, {parallel} at a time", each)

                s, a = args.searches, args.asks
                phase("searches", search, queries[: s // 5], 1)
                phase("searches", search, queries[s // 5 : s], 4)
                phase("asks", ask, queries[s : s + a // 3], 1)
                phase("asks", ask, queries[s + a // 3 : s + a], 4)
        finally:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(30)
            proc.kill()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
