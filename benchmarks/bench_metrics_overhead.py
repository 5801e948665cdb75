"""The cost of `--metrics`: the same 8-client ask load on `serve` with metrics off and on, in one run.

Two `haygraph serve` processes over the bundled handbook start together, one with `--metrics off`
(the default) and one with `--metrics loopback` (the HTTP middleware, the node and Haystack component
timers, the collectors; scraped every `--scrape-s` seconds by this script, as Prometheus would: 15 s is
a usual interval, 5 s the default here). The load
alternates between them in rounds (off, on, off, on, ...) so that the machine's drift hits both alike;
each round is `--clients` threads sending `--asks` questions each. Printed: p50 / p95 and throughput per
variant over all its rounds, and the ratio on / off.

    python -m benchmarks.bench_metrics_overhead [--rounds 4] [--clients 8] [--asks 25]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.bench_service import build_handbook_store, free_port, run_clients, start_server


def main() -> None:
    """Start both servers, run the alternating rounds, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per variant (default 4)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--asks", type=int, default=25, help="asks per client per round (default 25)")
    parser.add_argument("--scrape-s", type=float, default=5.0, help="scrape interval (default 5 s)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as name:
        store = build_handbook_store(Path(name))
        ports = {"off": free_port(), "on": free_port()}
        servers = {
            "off": start_server(store, ports["off"])[0],
            "on": start_server(store, ports["on"], ["--metrics", "loopback"])[0],
        }
        stop = threading.Event()

        def scrape() -> None:  # as a Prometheus server would
            with httpx.Client(timeout=10) as http:
                while not stop.wait(args.scrape_s):
                    http.get(f"http://127.0.0.1:{ports['on']}/metrics")

        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        rounds: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        try:
            for variant in ("off", "on"):  # warm both (first turns, caches) outside the figures
                run_clients(f"http://127.0.0.1:{ports[variant]}", args.clients, 3)
            for _ in range(args.rounds):
                for variant in ("off", "on"):
                    rounds[variant].append(
                        run_clients(f"http://127.0.0.1:{ports[variant]}", args.clients, args.asks)
                    )
        finally:
            stop.set()
            for proc in servers.values():
                proc.terminate()
                proc.wait(timeout=60)
    figures: dict[str, Any] = {}
    for variant, runs in rounds.items():
        requests = sum(r["requests"] for r in runs)
        wall = sum(r["wall_s"] for r in runs)
        figures[variant] = {
            "requests": requests,
            "errors": sum(r["errors"] for r in runs),
            "p50_ms_per_round": [r["p50_ms"] for r in runs],
            "p50_ms": round(float(np.median([r["p50_ms"] for r in runs])), 1),
            "p95_ms": round(float(np.median([r["p95_ms"] for r in runs])), 1),
            "throughput_rps": round(requests / wall, 1),
        }
    figures["on_vs_off"] = {
        "p50": round(figures["on"]["p50_ms"] / figures["off"]["p50_ms"], 3),
        "throughput": round(figures["on"]["throughput_rps"] / figures["off"]["throughput_rps"], 3),
    }
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
