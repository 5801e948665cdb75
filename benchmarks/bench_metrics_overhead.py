"""The cost of `--metrics` and `--tracing`: one 8-client ask load on `serve` with them off and on, one run.

Four `haygraph serve` processes over the bundled handbook start together: `off` (the defaults),
`metrics` (`--metrics loopback`: the HTTP middleware, the node and Haystack component timers, the
collectors; scraped every `--scrape-s` seconds by this script, as Prometheus would: 15 s is a usual
interval, 5 s the default here), `traced` (`--metrics loopback --tracing`: the metrics as before plus a
span per request, turn, graph node, Haystack component and reader run, batched and exported over
OTLP/HTTP to a receiver in this script, `benchmarks.otlp_receiver`, which parses every request, so the
exporter's whole cost is counted) and `traced_10pct` (the same, keeping one trace in ten:
`OTEL_TRACES_SAMPLER=parentbased_traceidratio`, `OTEL_TRACES_SAMPLER_ARG=0.1`). The load alternates
between them in rounds (off, metrics, traced, traced_10pct; metrics, traced, traced_10pct, off; ...) so
that the machine's drift hits all alike; each round is `--clients` threads sending `--asks` questions
each. Printed per variant over all its rounds: p50 / p95, throughput and the server process's CPU time
per ask (user + system, from /proc: the cost itself, which a busy machine's latency noise hides); the
ratios to `off`; the spans the receiver got.

    python -m benchmarks.bench_metrics_overhead [--rounds 4] [--clients 8] [--asks 25] [--questions cases]
        [--restart]

`--questions repeated` (the default) cycles `bench_service`'s 8 questions, so after the warm-up most
of an ask is served from the reader's memo and the encoders' caches: a cheap ask, on which a fixed
cost per span weighs most. `--questions cases` asks the 182 distinct questions of the handbook
protocols (`eval/cases/handbook*_cases.jsonl`), the clients on different ones, each round going on
where the last stopped (with `--asks 20` a round's 160 asks are all distinct): asks that read their
evidence, as users' do. Past 182 asks per variant the questions come round again, to a process that has
seen them: `--restart` starts every server afresh (and warms it up, outside the figures) before each
round after the first, and each round asks the same questions from the start, so every measured ask
is new to its process however many rounds run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from benchmarks.bench_service import QUESTIONS, build_handbook_store, free_port, run_clients, start_server
from benchmarks.otlp_receiver import OtlpReceiver

TRACED = ["--metrics", "loopback", "--tracing"]
VARIANTS: dict[str, tuple[list[str], dict[str, str]]] = {
    "off": ([], {}),
    "metrics": (["--metrics", "loopback"], {}),
    "traced": (TRACED, {}),
    "traced_10pct": (
        TRACED,
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"},
    ),
}
"""Each variant's `serve` flags and environment."""


CASES = Path(__file__).resolve().parent.parent / "eval" / "cases"


def case_questions() -> list[str]:
    """The distinct questions of the handbook protocols (`eval/cases/handbook*_cases.jsonl`), in order."""
    questions: list[str] = []
    for path in sorted(CASES.glob("handbook*_cases.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                questions.append(json.loads(line)["question"])
    return list(dict.fromkeys(questions))


def cpu_seconds(pid: int) -> float:
    """The CPU time (user + system) process `pid` has used so far (Linux `/proc/PID/stat`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    """Start the servers, run the alternating rounds, print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds per variant (default 4)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--asks", type=int, default=25, help="asks per client per round (default 25)")
    parser.add_argument("--scrape-s", type=float, default=5.0, help="scrape interval (default 5 s)")
    parser.add_argument(
        "--questions",
        choices=("repeated", "cases"),
        default="repeated",
        help="bench_service's 8 questions over and over (default), or the handbook protocols' 182",
    )
    parser.add_argument(
        "--restart",
        action="store_true",
        help="restart every server (and warm it up) before each round after the first, each round then "
        "asking the same questions from the start: with --questions cases, every ask of every round is "
        "one its process has not seen (no reader memo), so the rounds can be as many as wanted",
    )
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    questions = case_questions() if args.questions == "cases" else QUESTIONS
    asked = dict.fromkeys(VARIANTS, 0)
    # the warm-up's questions: none of the measured ones where they differ (a warmed answer is memoized)
    warm = [q for q in QUESTIONS if q not in set(questions)] or QUESTIONS
    with tempfile.TemporaryDirectory(prefix="bench-metrics-") as name, OtlpReceiver() as receiver:
        store = build_handbook_store(Path(name))
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.endpoint  # read by the traced server only
        os.environ.setdefault("OTEL_SERVICE_NAME", "haygraph-bench")
        ports = {variant: free_port() for variant in VARIANTS}
        servers: dict[str, Any] = {}

        def start(variant: str) -> None:
            """(Re)start `variant`'s server with its flags and environment, and warm it up."""
            extra, env = VARIANTS[variant]
            saved = {name: os.environ.get(name) for name in env}
            os.environ.update(env)
            try:
                servers[variant] = start_server(store, ports[variant], extra)[0]
            finally:
                for name, value in saved.items():
                    if value is None:
                        del os.environ[name]
                    else:
                        os.environ[name] = value
            run_clients(f"http://127.0.0.1:{ports[variant]}", args.clients, 3, warm)  # first turns, caches

        def stop_server(variant: str) -> None:
            servers[variant].terminate()
            servers[variant].wait(timeout=60)

        for variant in VARIANTS:
            start(variant)
        stop = threading.Event()

        def scrape() -> None:  # as a Prometheus server would
            with httpx.Client(timeout=10) as http:
                while not stop.wait(args.scrape_s):
                    for variant in ("metrics", "traced", "traced_10pct"):
                        with contextlib.suppress(httpx.TransportError):  # one being restarted
                            http.get(f"http://127.0.0.1:{ports[variant]}/metrics")

        scraper = threading.Thread(target=scrape, daemon=True)
        scraper.start()
        rounds: dict[str, list[dict[str, Any]]] = {variant: [] for variant in VARIANTS}
        try:
            order = list(VARIANTS)
            for n in range(args.rounds):
                if n and args.restart:  # fresh processes: no memo of the last round's questions
                    for variant in order:
                        stop_server(variant)
                        start(variant)
                        asked[variant] = 0
                for variant in order[n % len(order) :] + order[: n % len(order)]:  # each goes first in turn
                    cpu = cpu_seconds(servers[variant].pid)
                    run = run_clients(
                        f"http://127.0.0.1:{ports[variant]}",
                        args.clients,
                        args.asks,
                        questions,
                        offset=asked[variant],
                    )
                    asked[variant] += args.clients * args.asks
                    run["cpu_s"] = cpu_seconds(servers[variant].pid) - cpu
                    rounds[variant].append(run)
        finally:
            stop.set()
            for variant in list(servers):
                stop_server(variant)
        spans, exports = receiver.count(), receiver.requests  # the traced server flushed at shutdown
    figures: dict[str, Any] = {}
    raw: dict[str, dict[str, float]] = {}  # unrounded, for the ratios
    for variant, runs in rounds.items():
        requests = sum(r["requests"] for r in runs)
        wall = sum(r["wall_s"] for r in runs)
        raw[variant] = {
            "p50": float(np.median([r["p50_ms"] for r in runs])),
            "throughput": requests / wall,
            "server_cpu": sum(r["cpu_s"] for r in runs) / requests,
        }
        figures[variant] = {
            "requests": requests,
            "errors": sum(r["errors"] for r in runs),
            "wall_s": round(wall, 1),
            "p50_ms_per_round": [r["p50_ms"] for r in runs],
            "p50_ms": round(raw[variant]["p50"], 1),
            "p95_ms": round(float(np.median([r["p95_ms"] for r in runs])), 1),
            "throughput_rps": round(raw[variant]["throughput"], 3),
            "server_cpu_ms_per_ask": round(1000.0 * raw[variant]["server_cpu"], 1),
        }
    for variant in ("metrics", "traced", "traced_10pct"):
        figures[f"{variant}_vs_off"] = {
            key: round(raw[variant][key] / raw["off"][key], 3) for key in ("p50", "throughput", "server_cpu")
        }
    figures["receiver"] = {"spans": spans, "export_requests": exports}
    figures["questions"] = {"kind": args.questions, "distinct": len(questions), "restart": args.restart}
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
