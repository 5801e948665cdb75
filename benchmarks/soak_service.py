"""Soak `haygraph serve`: mixed traffic from 16 clients of 2 tenants, a re-index every few minutes.

Builds a two-tenant store from the bundled handbook's English files (tenant A: the first half of them,
tenant B: the rest; `meta.tenant`), starts a real server on 127.0.0.1 with an API key per tenant and
SQLite threads, and runs `--clients` client threads (half per tenant) for `--minutes`, each picking in
turn: search, ask, ask on its own thread, stream, chat completion (plain and streamed), and a read of
its thread. Every `--reindex-every` seconds one of tenant A's files changes and `haygraph index` runs
as its own process; the server reloads the new version by itself.

It reports errors by kind (a 429 is counted apart, as deliberate), every result whose evidence (or
search hit) comes from a source of the other tenant (`foreign`), the versions the server reloaded,
and the server's RSS, open file descriptors and threads every `--sample-every` seconds — as JSON and a
PNG plot (matplotlib) in `--out-dir`. Exit status 1 when any error other than a 429 occurred, any
foreign evidence was seen, a re-index failed, the server did not exit 0 on SIGTERM, or its file
descriptors, once every client has left, exceed those at the start by more than `--max-fd-growth`.

    python -m benchmarks.soak_service --minutes 2 --out-dir soak-results    # CI (make soak)
    python -m benchmarks.soak_service --minutes 30 --out-dir soak-results   # make soak-long

Traffic goes only to the server this script starts on 127.0.0.1; every loop ends at the deadline.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from benchmarks.bench_service import OFFLINE_ENV, free_port
from benchmarks.bench_slow_clients import process_figures

KEYS = {"A": "hg-soak-tenant-a-0000000001", "B": "hg-soak-tenant-b-0000000002"}
QUESTIONS = (
    "How many days of annual leave do I get?",
    "What is the minimum length for my password?",
    "Can I work from home on Fridays?",
    "How do I return a damaged item?",
    "What is the per diem for business travel?",
    "When must expense claims be filed?",
    "Which public holidays are there in 2026?",
    "What should I do on my first day?",
    "Can I carry over unused annual leave?",
    "How long does shipping take?",
)
OPS = ("search", "ask", "ask_thread", "stream", "chat", "chat_stream", "thread_read")


def build_store(root: Path) -> tuple[Path, dict[str, set[str]], Path]:
    """The two-tenant store; the sources of each tenant; tenant A's folder (re-indexed during the run)."""
    from haygraph.retrieval import KnowledgeBase, sample_handbook_path

    files = sorted(p for p in sample_handbook_path().iterdir() if p.is_file() and p.name.isascii())
    half = len(files) // 2
    store = root / "store"
    sources: dict[str, set[str]] = {}
    folders = {}
    for tenant, group in (("A", files[:half]), ("B", files[half:])):
        folder = root / f"tenant-{tenant}"
        folder.mkdir()
        for path in group:
            shutil.copy(path, folder / path.name)
        KnowledgeBase(store_dir=store).index([folder], meta={"tenant": tenant})
        sources[tenant] = {p.name for p in group}
        folders[tenant] = folder
    return store, sources, folders["A"]


def start_server(store: Path, keys: Path, threads_db: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """`haygraph serve` with API keys and SQLite threads; waits until /readyz answers."""
    cmd = [
        sys.executable,
        "-m",
        "haygraph.adapters.cli",
        "serve",
        "--store",
        str(store),
        "--port",
        str(port),
        "--api-keys",
        str(keys),
        "--threads-db",
        str(threads_db),
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, env={**os.environ, **OFFLINE_ENV}, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with status {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise SystemExit("the server did not become ready within 300 s")


class Tally:
    """Outcomes of every request, shared by the client threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ok: Counter[str] = Counter()
        self.shed: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.error_samples: list[str] = []
        self.foreign: list[str] = []

    def record(self, op: str, status: int | str, detail: str = "") -> None:
        """Count one outcome: 200 (or an expected 404), a deliberate 429, or an error of some kind."""
        with self.lock:
            if status == 200:
                self.ok[op] += 1
            elif status == 429:
                self.shed[op] += 1
            else:
                self.errors[f"{op}: {status}"] += 1
                if len(self.error_samples) < 10:
                    self.error_samples.append(f"{op}: {status} {detail[:300]}")


def _sse_data(text: str) -> list[Any]:
    payloads = []
    for line in text.splitlines():
        if line.startswith("data:"):
            raw = line[5:].strip()
            try:
                payloads.append(json.loads(raw))
            except json.JSONDecodeError:
                payloads.append(raw)
    return payloads


def run_client(
    index: int, tenant: str, url: str, stop_at: float, tally: Tally, sources: dict[str, set[str]]
) -> None:
    """One client: operations in a shuffled cycle until `stop_at`; checks every evidence's tenant."""
    rng = random.Random(index)
    other = {s for t, names in sources.items() if t != tenant for s in names}
    thread_id = f"soak-{index}"
    asked_on_thread = False
    headers = {"Authorization": f"Bearer {KEYS[tenant]}"}
    with httpx.Client(base_url=url, headers=headers, timeout=120) as http:
        n = 0
        while time.monotonic() < stop_at:
            op = OPS[n % len(OPS)] if n < len(OPS) else rng.choice(OPS)
            n += 1
            question = rng.choice(QUESTIONS)
            seen: list[str] = []
            try:
                if op == "search":
                    r = http.post("/v1/search", json={"query": question, "top_k": 5})
                    if r.status_code == 200:
                        seen = [h["source"] for h in r.json()["results"]]
                elif op in ("ask", "ask_thread"):
                    body: dict[str, Any] = {"question": question}
                    if op == "ask_thread":
                        body["thread_id"] = thread_id
                    r = http.post("/v1/ask", json=body)
                    if r.status_code == 200:
                        seen = [e["source"] for e in r.json()["evidence"]]
                        asked_on_thread |= op == "ask_thread"
                elif op == "stream":
                    r = http.post("/v1/ask/stream", json={"question": question})
                    if r.status_code == 200:
                        results = [d for d in _sse_data(r.text) if isinstance(d, dict) and "evidence" in d]
                        if not results:
                            tally.record(op, "no result event", r.text[-300:])
                            continue
                        seen = [e["source"] for e in results[-1]["evidence"]]
                elif op in ("chat", "chat_stream"):
                    stream = op == "chat_stream"
                    body = {"model": "haygraph", "messages": [{"role": "user", "content": question}]}
                    r = http.post("/v1/chat/completions", json={**body, "stream": stream})
                    if r.status_code == 200:
                        chunks = _sse_data(r.text) if stream else [r.json()]
                        final = [c["haygraph"] for c in chunks if isinstance(c, dict) and "haygraph" in c]
                        if not final or (stream and chunks[-1] != "[DONE]"):
                            tally.record(op, "incomplete", r.text[-300:])
                            continue
                        seen = [e["source"] for e in final[-1]["evidence"]]
                else:  # thread_read
                    r = http.get(f"/v1/threads/{thread_id}")
                    if r.status_code == 404 and not asked_on_thread:
                        tally.record(op, 200)
                        continue
            except httpx.HTTPError as exc:
                tally.record(op, type(exc).__name__, str(exc))
                continue
            tally.record(op, r.status_code, r.text)
            leaked = [s for s in seen if s in other]
            if leaked:
                with tally.lock:
                    tally.foreign.append(f"{op} by tenant {tenant}: {leaked}")


def reindex_loop(
    store: Path, folder: Path, every_s: float, stop_at: float, log: list[dict[str, Any]]
) -> None:
    """Change one of tenant A's files and run `haygraph index` every `every_s` seconds until `stop_at`."""
    target = sorted(folder.iterdir())[0]
    round_ = 0
    while time.monotonic() + every_s < stop_at:
        time.sleep(every_s)
        round_ += 1
        with target.open("a", encoding="utf-8") as handle:
            handle.write(f"\n\nUpdate {round_}: the cafeteria opens at {7 + round_ % 3}:{round_ % 60:02d}.\n")
        start = time.monotonic()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "haygraph.adapters.cli",
                "index",
                str(folder),
                "--store",
                str(store),
                "--meta",
                "tenant=A",
                "--no-progress",
            ],
            env={**os.environ, **OFFLINE_ENV},
            capture_output=True,
            text=True,
            timeout=600,
        )
        log.append(
            {
                "at_s": start,
                "seconds": round(time.monotonic() - start, 1),
                "exit": done.returncode,
                "stderr": done.stderr.strip()[-300:],
            }
        )


def sample_loop(pid: int, url: str, every_s: float, stop_at: float, samples: list[dict[str, Any]]) -> None:
    """Record the server's RSS, fds, threads and store version every `every_s` seconds."""
    while True:
        figures: dict[str, Any] = {"t": time.monotonic(), **process_figures(pid)}
        try:
            ready = httpx.get(f"{url}/readyz", timeout=10).json()
            figures |= {"version": ready.get("store_version"), "reloads": ready.get("reloads")}
        except (httpx.HTTPError, ValueError):
            figures["version"] = None
        samples.append(figures)
        if time.monotonic() >= stop_at:
            return
        time.sleep(min(every_s, max(stop_at - time.monotonic(), 0.0)))


def plot(samples: list[dict[str, Any]], reindexes: list[dict[str, Any]], t0: float, path: Path) -> bool:
    """RSS and open fds over time, re-index runs marked; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    minutes = [(s["t"] - t0) / 60 for s in samples]
    fig, (rss_ax, fd_ax) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
    rss_ax.plot(minutes, [s["rss_mb"] for s in samples], color="tab:blue")
    rss_ax.set_ylabel("server RSS (MB)")
    fd_ax.plot(minutes, [s["fds"] for s in samples], color="tab:orange", label="open fds")
    fd_ax.plot(minutes, [s["threads"] for s in samples], color="tab:green", label="threads")
    fd_ax.set_ylabel("count")
    fd_ax.set_xlabel("minutes")
    fd_ax.legend(loc="upper left")
    for run in reindexes:
        for ax in (rss_ax, fd_ax):
            ax.axvline((run["at_s"] - t0) / 60, color="grey", linestyle=":", linewidth=1)
    rss_ax.set_title("haygraph serve soak (dotted: re-index)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def main() -> None:
    """Run the soak; print and save the figures; exit 1 on an error, foreign evidence or an fd leak."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=2.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument(
        "--reindex-every", type=float, help="seconds between re-indexes (default: minutes*15)"
    )
    parser.add_argument("--sample-every", type=float, default=5.0)
    parser.add_argument(
        "--max-fd-growth", type=int, default=4, help="fds allowed over the start once every client has left"
    )
    parser.add_argument("--out-dir", type=Path, default=Path("soak-results"))
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    reindex_every = args.reindex_every or max(30.0, args.minutes * 15)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        root = Path(tmp)
        store, sources, folder_a = build_store(root)
        keys = root / "keys.yaml"
        keys.write_text("".join(f'"{key}": {{tenant: {tenant}}}\n' for tenant, key in KEYS.items()))
        port = free_port()
        server = start_server(store, keys, root / "threads.sqlite", port, args.out_dir / "serve.log")
        url = f"http://127.0.0.1:{port}"
        tally, samples, reindexes = Tally(), [], []  # type: ignore[var-annotated]
        try:
            t0 = time.monotonic()
            stop_at = t0 + args.minutes * 60
            workers = [
                threading.Thread(
                    target=run_client, args=(i, "AB"[i % 2], url, stop_at, tally, sources), daemon=True
                )
                for i in range(args.clients)
            ]
            workers.append(
                threading.Thread(
                    target=sample_loop, args=(server.pid, url, args.sample_every, stop_at, samples)
                )
            )
            workers.append(
                threading.Thread(
                    target=reindex_loop, args=(store, folder_a, reindex_every, stop_at, reindexes)
                )
            )
            for w in workers:
                w.start()
            for w in workers:
                w.join(timeout=args.minutes * 60 + 900)
            time.sleep(1.0)  # every client has closed its connections
            after = process_figures(server.pid)
            server.terminate()
            exit_status = server.wait(timeout=120)
        finally:
            if server.poll() is None:
                server.kill()
    first, last = samples[0], samples[-1]
    warm = samples[min(len(samples) - 1, max(1, len(samples) // 5))]  # after the first fifth: warmed up
    figures = {
        "minutes": args.minutes,
        "clients": args.clients,
        "requests_ok": dict(tally.ok),
        "requests_total": sum(tally.ok.values()) + sum(tally.shed.values()) + sum(tally.errors.values()),
        "shed_429": dict(tally.shed),
        "errors": dict(tally.errors),
        "error_samples": tally.error_samples,
        "foreign_evidence": len(tally.foreign),
        "foreign_samples": tally.foreign[:10],
        "reindexes": [{k: v for k, v in r.items() if k != "at_s"} for r in reindexes],
        "reloads": last.get("reloads"),
        "rss_mb": {
            "start": first["rss_mb"],
            "warm": warm["rss_mb"],
            "end": last["rss_mb"],
            "max": max(s["rss_mb"] for s in samples),
        },
        "fds": {
            "start": first["fds"],
            "end": last["fds"],
            "after_clients_left": after["fds"],
            "max": max(s["fds"] for s in samples),
        },
        "threads": {
            "start": first["threads"],
            "end": last["threads"],
            "max": max(s["threads"] for s in samples),
        },
        "server_exit_status": exit_status,
        "samples": [{**s, "t": round(s["t"] - t0, 1)} for s in samples],
    }
    plotted = plot(samples, reindexes, t0, args.out_dir / "soak.png")
    (args.out_dir / "soak.json").write_text(json.dumps(figures, indent=2, ensure_ascii=False))
    out = sys.stdout
    out.write(
        f"soak: {args.minutes:g} min, {args.clients} clients, {figures['requests_total']} requests "
        f"({sum(tally.ok.values())} ok, {sum(tally.shed.values())} deliberate 429s)\n"
        f"ok by kind: {dict(sorted(tally.ok.items()))}\n"
        f"errors by kind: {dict(tally.errors) or 0}; foreign-tenant evidence: {len(tally.foreign)}\n"
        f"re-index runs: {len(reindexes)} (exit {[r['exit'] for r in reindexes]}), server reloads: "
        f"{figures['reloads']}\n"
        f"server RSS MB start {figures['rss_mb']['start']} / warm {figures['rss_mb']['warm']} / end "
        f"{figures['rss_mb']['end']} / max {figures['rss_mb']['max']}; fds {figures['fds']}; threads "
        f"{figures['threads']}; exit status {exit_status}\n"
        f"curves: {args.out_dir / 'soak.json'}"
        + (f", plot {args.out_dir / 'soak.png'}" if plotted else "")
        + "\n"
    )
    for sample in tally.error_samples:
        out.write(f"  error: {sample}\n")
    failed = (
        tally.errors
        or tally.foreign
        or after["fds"] - first["fds"] > args.max_fd_growth
        or any(r["exit"] != 0 for r in reindexes)
        or exit_status != 0
    )
    out.write("soak: FAILED\n" if failed else "soak: passed\n")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
