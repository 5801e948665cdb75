"""PostgreSQL outages of 10, 90 and 180 s under two `haygraph serve` processes: readiness and recovery.

Two real `serve` processes (loopback ports) over the two-tenant test store; their threads live in a
private PostgreSQL server and, where pgvector runs on this CPU, their store too (copied into it). Per
process, two loops run all along: `GET /readyz` every 0.2 s, and a request that needs the database
every 0.2 s (a thread read `GET /v1/threads/{id}`; with the store on PostgreSQL a BM25 `POST /v1/search`
too). For each outage the server is stopped (`pg_ctl stop -m fast`), left down, and started again
(`pg_ctl start -w` returns once it accepts connections); the figures, per process:

- `readyz_503_during`: the share of readiness probes answered 503 while the server was down
  (with the first error type), and `readyz_200_during` (should be 0);
- `ready_after_s`: from the server's return to the first `/readyz` 200 (the probe's reply time);
- `request_after_s`: from the server's return to the first database request answered 200.

    python -m benchmarks.bench_recovery [--outages 10,90,180] [--out recovery.json]

Uses the test helpers (`tests/adapters/service/`); run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.bench_service import OFFLINE_ENV

POLL_S = 0.2


@dataclass
class Probe:
    """One loop's replies: (sent, answered, HTTP status, error type) in `time.monotonic()` seconds."""

    replies: list[tuple[float, float, int, str | None]] = field(default_factory=list)


def _loop(send: Any, probe: Probe, stop: threading.Event) -> None:
    while not stop.is_set():
        sent = time.monotonic()
        try:
            response = send()
            status = response.status_code
            kind = response.json().get("error", {}).get("type") if status != 200 else None
        except (httpx.HTTPError, ValueError) as exc:
            status, kind = 0, type(exc).__name__
        probe.replies.append((sent, time.monotonic(), status, kind))
        stop.wait(POLL_S)


def _figures(probes: dict[str, Probe], down: float, back: float) -> dict[str, Any]:
    ready = probes["readyz"].replies
    during = [r for r in ready if r[0] > down and r[1] < back]
    kinds = sorted({str(r[3]) for r in during if r[2] != 200})
    result: dict[str, Any] = {
        "readyz_probes_during": len(during),
        "readyz_503_during": sum(r[2] == 503 for r in during),
        "readyz_200_during": sum(r[2] == 200 for r in during),
        "readyz_error_types": kinds,
    }
    first_ready = next((r[1] for r in ready if r[1] > back and r[2] == 200), None)
    result["ready_after_s"] = None if first_ready is None else round(first_ready - back, 2)
    for name, probe in probes.items():
        if name == "readyz":
            continue
        first = next((r[1] for r in probe.replies if r[1] > back and r[2] == 200), None)
        result[f"{name}_after_s"] = None if first is None else round(first - back, 2)
        result[f"{name}_failed_during"] = sum(
            r[2] != 200 for r in probe.replies if r[0] > down + 0.5 and r[1] < back
        )
    return result


def main() -> None:
    """Start PostgreSQL and two `serve` processes, stop and start the server per outage, print figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outages", default="10,90,180", help="comma-separated seconds (default 10,90,180)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    from tests.adapters.service.postgres_helpers import postgres_cluster, why_no_pgvector
    from tests.adapters.service.server_helpers import build_tenant_store, serve_processes
    from tests.conftest import why_pgvector_crashes

    outages = [float(x) for x in args.outages.split(",")]
    vector = why_no_pgvector() is None
    figures: dict[str, Any] = {"outages": {}}
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as name, postgres_cluster(vector=vector) as pg:
        tmp = Path(name)
        store = build_tenant_store(tmp / "store", tmp / "cache")
        store_on_pg = vector and why_pgvector_crashes(pg.url) is None
        common = ["--threads-db", pg.url]
        if store_on_pg:
            from haygraph.retrieval.store_copy import StoreLocation, copy_store

            config = tmp / "pg.yaml"
            config.write_text(yaml.safe_dump({"store": {"backend": "postgres", "url": pg.url}}))
            copy_store(StoreLocation(directory=store), StoreLocation.parse(config))
            common += ["--config", str(config)]
        figures["store"] = "postgres" if store_on_pg else "embedded (pgvector does not run on this CPU)"
        figures["threads"] = "postgres"
        runs = []
        for worker in ("one", "two"):
            (tmp / worker).mkdir()
            where = str(tmp / worker) if store_on_pg else str(store)
            runs.append((["--store", where, *common], tmp / f"{worker}.log"))
        with serve_processes(runs) as started:
            stop = threading.Event()
            probes: list[dict[str, Probe]] = []
            threads: list[threading.Thread] = []
            for _, url in started:
                client = httpx.Client(base_url=url, timeout=30)
                ask = {"question": "What is the Acme per diem for business travel?", "thread_id": "r-1"}
                assert client.post("/v1/ask", json=ask).json()["status"] == "completed"
                sends: dict[str, Any] = {
                    "readyz": lambda c=client: c.get("/readyz"),
                    "thread_read": lambda c=client: c.get("/v1/threads/r-1"),
                }
                if store_on_pg:
                    body = {"query": "Acme per diem", "top_k": 3, "mode": "bm25"}
                    sends["search"] = lambda c=client, b=body: c.post("/v1/search", json=b)
                mine = {k: Probe() for k in sends}
                probes.append(mine)
                for key, send in sends.items():
                    threads.append(threading.Thread(target=_loop, args=(send, mine[key], stop), daemon=True))
            for thread in threads:
                thread.start()
            try:
                for outage in outages:
                    time.sleep(5)  # steady state first
                    down = time.monotonic()
                    pg.stop()
                    time.sleep(max(outage - (time.monotonic() - down), 0))
                    pg.start()
                    back = time.monotonic()
                    time.sleep(10)  # the recovery is observed
                    row = {f"serve_{i + 1}": _figures(p, down, back) for i, p in enumerate(probes)} | {
                        "outage_s": round(back - down, 1)
                    }
                    figures["outages"][f"{outage:g}"] = row
                    sys.stdout.write(f"outage {outage:g} s: {json.dumps(row)}\n")
                    sys.stdout.flush()
            finally:
                stop.set()
                for thread in threads:
                    thread.join(timeout=30)
    sys.stdout.write(json.dumps(figures, indent=2) + "\n")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
