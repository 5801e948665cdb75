"""A real Prometheus scrapes two `haygraph serve` processes under a short load; its queries give the figures.

Starts two `serve` processes (`--metrics loopback`, small admission limits so the load meets 429s) over
the bundled handbook, and Debian's `prometheus` binary on a loopback port, scraping both every second.
Clients ask the handbook questions against both processes for `--seconds`; then the script asks
Prometheus (its HTTP API) for:

- p50 / p95 of `POST /v1/ask` per process and overall (`haygraph_http_request_duration_seconds`);
- p50 / p95 of each graph node and of each Haystack component;
- the 429 rate (answers per second and share of asks), by reason, against what the clients counted;
- `up` of both targets and the turns by outcome.

    python -m benchmarks.bench_prometheus [--seconds 30] [--clients 12] [--out prometheus.json]

Needs `prometheus` on PATH (Debian: apt install prometheus). Run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import yaml

from benchmarks.bench_service import OFFLINE_ENV, QUESTIONS, build_handbook_store

WINDOW = "2m"
"""The range of the rate() queries: the whole load and the scrapes around it."""


def _prometheus(tmp: Path, targets: list[str], port: int) -> subprocess.Popen[bytes]:
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [{"job_name": "haygraph", "static_configs": [{"targets": targets}]}],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("prometheus is not on PATH (Debian: apt install prometheus)")
    log = (tmp / "prometheus.log").open("wb")
    return subprocess.Popen(
        [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _query(api: str, promql: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{api}/api/v1/query", params={"query": promql}, timeout=30)
    response.raise_for_status()
    return list(response.json()["data"]["result"])


def _by(api: str, promql: str, label: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for row in _query(api, promql):
        raw = float(row["value"][1])
        out[row["metric"].get(label, "all")] = None if raw != raw else round(raw, 4)  # NaN: no data
    return dict(sorted(out.items()))


def _load(urls: list[str], clients: int, seconds: float) -> dict[str, Any]:
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    stop = time.monotonic() + seconds

    def client(index: int) -> None:
        with httpx.Client(timeout=60) as http:
            n = 0
            while time.monotonic() < stop:
                url = urls[(index + n) % len(urls)]
                question = QUESTIONS[(index + n) % len(QUESTIONS)]
                status = http.post(f"{url}/v1/ask", json={"question": question}).status_code
                with lock:
                    counts[str(status)] += 1
                n += 1
                if status == 429:
                    time.sleep(0.2)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    total = sum(counts.values())
    return {"asks": total, "by_status": dict(counts), "share_429": round(counts["429"] / max(total, 1), 4)}


def main() -> None:
    """Serve twice, start Prometheus, load both, query Prometheus, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the load (default 30)")
    parser.add_argument("--clients", type=int, default=12, help="concurrent clients (default 12)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    import os

    os.environ.update(OFFLINE_ENV)
    from tests.adapters.service.server_helpers import free_port, serve_processes

    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-prometheus-") as name:
        tmp = Path(name)
        store = build_handbook_store(tmp)
        limits = ["--max-in-flight", "2", "--max-queue", "2", "--queue-timeout", "2"]
        runs = [
            (["--store", str(store), "--metrics", "loopback", *limits], tmp / f"serve-{i}.log")
            for i in (1, 2)
        ]
        with serve_processes(runs) as started:
            urls = [url for _, url in started]
            port = free_port()
            prometheus = _prometheus(tmp, [u.removeprefix("http://") for u in urls], port)
            api = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 60
                while True:  # both targets scraped once
                    try:
                        if len(_query(api, 'up{job="haygraph"} == 1')) == 2:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise SystemExit((tmp / "prometheus.log").read_text()[-2000:])
                    time.sleep(0.5)
                figures["clients"] = _load(urls, args.clients, args.seconds)
                time.sleep(3)  # the last scrapes
                ask = 'route="/v1/ask"'
                answered = f'{ask},status="200"'
                for q in (0.5, 0.95):
                    p = f"p{int(q * 100)}"
                    figures[f"ask_{p}_s"] = _by(  # answers only: a 429 takes milliseconds
                        api,
                        f"histogram_quantile({q}, sum by (le, instance) "
                        f"(rate(haygraph_http_request_duration_seconds_bucket{{{answered}}}[{WINDOW}])))",
                        "instance",
                    )
                    figures[f"ask_{p}_s"]["all"] = _by(
                        api,
                        f"histogram_quantile({q}, sum by (le) "
                        f"(rate(haygraph_http_request_duration_seconds_bucket{{{answered}}}[{WINDOW}])))",
                        "all",
                    ).get("all")
                    figures[f"node_{p}_s"] = _by(
                        api,
                        f"histogram_quantile({q}, sum by (le, node) "
                        f"(rate(haygraph_graph_node_duration_seconds_bucket[{WINDOW}])))",
                        "node",
                    )
                    figures[f"component_{p}_s"] = _by(
                        api,
                        f"histogram_quantile({q}, sum by (le, component) "
                        f"(rate(haygraph_pipeline_component_duration_seconds_bucket[{WINDOW}])))",
                        "component",
                    )
                figures["http_429_per_s"] = _by(
                    api, f'sum(rate(haygraph_http_requests_total{{status="429"}}[{WINDOW}]))', "all"
                ).get("all")
                figures["share_429_of_asks"] = _by(
                    api,
                    f'sum(increase(haygraph_http_requests_total{{{ask},status="429"}}[{WINDOW}])) / '
                    f"sum(increase(haygraph_http_requests_total{{{ask}}}[{WINDOW}]))",
                    "all",
                ).get("all")
                figures["rejected_by_reason"] = _by(
                    api, "sum by (reason) (haygraph_admission_rejected_total)", "reason"
                )
                figures["asks_counted_by_prometheus"] = _by(
                    api, f"sum by (status) (haygraph_http_requests_total{{{ask}}})", "status"
                )
                figures["turns_by_outcome"] = _by(api, "sum by (outcome) (haygraph_turns_total)", "outcome")
                figures["up"] = _by(api, 'up{job="haygraph"}', "instance")
            finally:
                prometheus.terminate()
                prometheus.wait(timeout=30)
    sys.stdout.write(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
