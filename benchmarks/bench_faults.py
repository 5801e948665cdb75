"""Faults under a running `haygraph serve`: what the client saw, what the store held after, time to recover.

Each fault runs against the real service (in this process, on 127.0.0.1) over the two-tenant test store:

- `postgres`: the threads database (a private PostgreSQL on a loopback port) stopped, then started again;
- `sqlite_lock`: the SQLite threads file held by `BEGIN EXCLUSIVE` in another process, then released;
- `disk_full`: `index` on a 1 MB tmpfs filled to 8 KB free, then the space given back (needs mount rights);
- `store_gone`: the store directory removed under the service, then put back with a new version;
- `kill_writer`: `haygraph index` killed with SIGKILL while it writes a version, under the service;
- `disk_full_upload`: uploads to the service on a full 1 MB tmpfs (one the disk cannot take, one that
  fits but whose new version does not), then the space given back (needs mount rights);
- `kill_serve`: `haygraph serve` (a real process) killed with SIGKILL while a background upload job
  embeds or saves, then started again.

    python -m benchmarks.bench_faults [--only postgres,disk_full] [--out faults.json]

Uses the test helpers (`tests/adapters/service/`); run it from the repository root.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from haystack import Document

from benchmarks.bench_service import OFFLINE_ENV

QUESTION = "What is the Acme per diem for business travel?"
EXTRA = Document(
    content="Initech travel policy: the per diem is 75 francs a day.",
    meta={"source_id": "initech-travel.md", "tenant": "C"},
)


def _ask(url: str, thread_id: str | None = "t1") -> dict[str, Any]:
    body: dict[str, Any] = {"question": QUESTION} | ({"thread_id": thread_id} if thread_id else {})
    start = time.monotonic()
    r = httpx.post(f"{url}/v1/ask", json=body, timeout=60)
    result = r.json()
    return {
        "http": r.status_code,
        "status": result.get("status") or result.get("error", {}).get("type"),
        "note": next((n for n in result.get("notes", []) if n.startswith("threads")), None),
        "ms": round((time.monotonic() - start) * 1000),
    }


def _until(predicate: Callable[[], bool], timeout_s: float = 60.0, poll_s: float = 0.1) -> float | None:
    """Seconds until `predicate()` holds (polled every `poll_s`), None when it never did."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if predicate():
            return round(time.monotonic() - start, 2)
        time.sleep(poll_s)
    return None


def _service(store: Path, **settings: Any) -> Any:
    from haygraph.adapters.service import HaygraphService, ServiceSettings
    from tests.adapters.service.server_helpers import running_server

    return running_server(HaygraphService(ServiceSettings(store_dir=store, **settings)))


def fault_postgres(store: Path, _tmp: Path) -> dict[str, Any]:
    """PostgreSQL stopped under asks, then started again."""
    from tests.adapters.service.postgres_helpers import find_pg_bin, postgres_cluster

    if find_pg_bin() is None:
        return {"skipped": "PostgreSQL's initdb is not installed"}
    with postgres_cluster() as pg, _service(store, threads_db=pg.url) as url:
        before = _ask(url)
        pg.stop()
        during = _ask(url)
        read = httpx.get(f"{url}/v1/threads/t1", timeout=30)
        stateless = _ask(url, None)
        pg.start()
        recover = _until(lambda: _ask(url)["status"] == "completed")
        turns = httpx.get(f"{url}/v1/threads/t1", timeout=30).json()["turns"]
    return {
        "before": before,
        "database_down_ask_on_thread": during,
        "database_down_thread_read": f"{read.status_code} {read.json()['error']['type']}",
        "database_down_ask_without_thread": stateless,
        "seconds_to_recover_after_restart": recover,
        "thread_turns_after": turns,
    }


def fault_sqlite_lock(store: Path, tmp: Path) -> dict[str, Any]:
    """The SQLite threads file locked by another process, then released."""
    db = tmp / "threads.sqlite"
    with _service(store, threads_db=str(db)) as url:
        before = _ask(url)
        script = (
            f"import sqlite3, time\nc = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(120)"
        )
        holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        during = _ask(url)
        holder.kill()
        holder.wait()
        recover = _until(lambda: _ask(url)["status"] == "completed")
        turns = httpx.get(f"{url}/v1/threads/t1", timeout=30).json()["turns"]
    return {
        "before": before,
        "locked_ask_on_thread": during,
        "seconds_to_recover_after_unlock": recover,
        "thread_turns_after": turns,
    }


@contextmanager
def _tmpfs(tmp: Path) -> Iterator[Path | str]:
    """A 1 MB tmpfs mounted at `tmp`/disk (unmounted after); the reason, as a str, where it cannot be."""
    disk = tmp / "disk"
    disk.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True)
    if mount.returncode != 0:
        yield f"cannot mount a tmpfs: {mount.stderr.decode().strip()}"
        return
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def fault_disk_full(store: Path, tmp: Path) -> dict[str, Any]:
    """`index` on a full disk, then with space again."""
    from haygraph.retrieval import KnowledgeBase
    from haygraph.retrieval.errors import StoreError
    from tests.adapters.service.test_store_faults import fill

    with _tmpfs(tmp) as disk:
        if isinstance(disk, str):
            return {"skipped": disk}
        shutil.copytree(store, disk / "store")
        with _service(disk / "store", reload_interval_s=0.5) as url:
            version = httpx.get(f"{url}/readyz").json()["store_version"]
            filler = fill(disk, 8192)
            start = time.monotonic()
            try:
                KnowledgeBase.open(disk / "store").index_documents([EXTRA])
                error = "no error"
            except StoreError as exc:
                error = str(exc)
            failed_after = round(time.monotonic() - start, 2)
            time.sleep(1.5)
            ready = httpx.get(f"{url}/readyz").json()
            search = httpx.post(f"{url}/v1/search", json={"query": "Acme per diem"}, timeout=30)
            filler.unlink()
            start = time.monotonic()
            KnowledgeBase.open(disk / "store").index_documents([EXTRA])
            served = _until(lambda: httpx.get(f"{url}/readyz").json()["documents"] == 5)
            recover = round(time.monotonic() - start, 2) if served is not None else None
    return {
        "client_saw": error,
        "failed_after_s": failed_after,
        "served_after_failure": {
            "version_unchanged": ready["store_version"] == version,
            "documents": ready["documents"],
            "search_http": search.status_code,
        },
        "seconds_from_space_back_to_new_version_served": recover,
    }


def fault_store_gone(store: Path, tmp: Path) -> dict[str, Any]:
    """The store directory removed under the service, then back with a new version."""
    from haygraph.retrieval import KnowledgeBase

    live = tmp / "store"
    shutil.copytree(store, live)
    with _service(live, reload_interval_s=0.5) as url:
        shutil.rmtree(live)
        time.sleep(1.5)
        search = httpx.post(f"{url}/v1/search", json={"query": "Acme per diem"}, timeout=30)
        ask = _ask(url, None)
        shutil.copytree(store, tmp / "copy")
        KnowledgeBase.open(tmp / "copy").index_documents([EXTRA])
        (tmp / "copy").rename(live)
        recover = _until(lambda: httpx.get(f"{url}/readyz").json()["documents"] == 5)
    return {
        "search_while_gone": search.status_code,
        "ask_while_gone": ask,
        "seconds_to_reload_when_back": recover,
    }


def fault_kill_writer(store: Path, tmp: Path) -> dict[str, Any]:
    """`haygraph index` killed mid-save while the service serves the store; then a fresh load."""
    from haygraph.retrieval import KnowledgeBase

    live = tmp / "store"
    shutil.copytree(store, live)
    docs = tmp / "docs"
    docs.mkdir()
    (docs / "initech.md").write_text("# Initech\n\nInitech travel policy: the per diem is 75 francs a day.\n")
    outcomes: dict[str, int] = {"old": 0, "new": 0, "mix": 0}
    with _service(live, reload_interval_s=0.2) as url:
        for trial in range(6):
            cmd = [sys.executable, "-m", "haygraph.adapters.cli", "index", str(docs), "--store", str(live)]
            proc = subprocess.Popen(
                [*cmd, "--meta", "tenant=C", "--no-progress"],
                env={**os.environ, **OFFLINE_ENV},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            _until(lambda proc=proc: proc.poll() is not None or any(live.glob(".tmp-v-*")), 120, 0.0005)  # type: ignore[misc]
            time.sleep(0.004 * trial)  # a save takes ~10 ms: before, during or after its commit
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            count = KnowledgeBase.open(live).store.count_documents()
            outcomes["old" if count == 4 else "new" if count == 5 else "mix"] += 1
            if count == 5:  # back to the old content for the next trial
                shutil.rmtree(live)
                shutil.copytree(store, live)
        time.sleep(1)
        ready = httpx.get(f"{url}/readyz").json()
        search = httpx.post(f"{url}/v1/search", json={"query": "per diem"}, timeout=30).status_code
    return {"trials": outcomes, "service_documents_after": ready["documents"], "search_http": search}


PARKING = b"# Parking\n\nStaff parking permits cost 35 euros per month at the facilities desk.\n"


def _upload(url: str, name: str, data: bytes) -> httpx.Response:
    return httpx.post(f"{url}/v1/sources", files=[("files", (name, data))], timeout=60)


def _job(url: str, job_id: str, timeout_s: float = 300) -> dict[str, Any]:
    """The job's final state (done or failed), polled; ``{"state": "timeout"}`` if it never ends."""
    from tests.adapters.service.server_helpers import wait_job_at

    try:
        with httpx.Client(base_url=url, timeout=10) as client:
            return wait_job_at(client, job_id, timeout_s)
    except AssertionError:
        return {"state": "timeout"}


def fault_disk_full_upload(store: Path, tmp: Path) -> dict[str, Any]:
    """Uploads on a full disk: refused (507) or a failed job; the served version intact; then space back."""
    from tests.adapters.service.test_store_faults import fill

    with _tmpfs(tmp) as disk:
        if isinstance(disk, str):
            return {"skipped": disk}
        shutil.copytree(store, disk / "store")
        with _service(disk / "store", reload_interval_s=0.5) as url:
            version = httpx.get(f"{url}/readyz").json()["store_version"]
            filler = fill(disk, 8192)
            start = time.monotonic()
            too_big = _upload(url, "parking.md", PARKING * 400)
            refused_ms = round((time.monotonic() - start) * 1000)
            fits = _upload(url, "parking.md", PARKING)
            job = _job(url, fits.json()["job"]["id"]) if fits.status_code == 202 else {}
            ready = httpx.get(f"{url}/readyz").json()
            search = httpx.post(f"{url}/v1/search", json={"query": "Acme per diem"}, timeout=30)
            filler.unlink()
            start = time.monotonic()
            again = _upload(url, "parking.md", PARKING)
            done = _job(url, again.json()["job"]["id"]) if again.status_code == 202 else {}
            recover = round(time.monotonic() - start, 2)
    return {
        "upload_the_disk_cannot_take": {"http": too_big.status_code, "error": too_big.json().get("error")},
        "refused_after_ms": refused_ms,
        "upload_that_fits_job": {
            "http": fits.status_code,
            "state": job.get("state"),
            "error": job.get("error"),
        },
        "served_after_failure": {
            "version_unchanged": ready["store_version"] == version,
            "documents": ready["documents"],
            "search_http": search.status_code,
        },
        "after_space_back": {"job": done.get("state"), "seconds_upload_to_served": recover},
    }


def fault_kill_serve(store: Path, tmp: Path, trials: int = 4) -> dict[str, Any]:
    """SIGKILL of a real `haygraph serve` during a background upload job (embedding, then later), restart."""
    from tests.adapters.service.server_helpers import serve_process
    from tests.adapters.service.test_store_faults import catalogue

    outcomes: dict[str, int] = {"old": 0, "new_whole": 0, "mix": 0}
    jobs_after: list[str] = []
    restart_s: list[float] = []
    for trial in range(trials):
        live = tmp / f"store-{trial}"
        shutil.copytree(store, live)
        document = catalogue(120)
        with serve_process(["--store", str(live)], tmp / f"serve-{trial}.log") as (proc, url):
            job_id = _upload(url, "catalogue.md", document).json()["job"]["id"]
            # trial 0 kills as soon as embedding starts; later trials later, up to the save itself
            phase = "embedding" if trial < trials - 1 else "loading"
            _until(
                lambda url=url, job_id=job_id, phase=phase: (  # type: ignore[misc]
                    httpx.get(f"{url}/v1/jobs/{job_id}", timeout=10).json()["phase"] in (phase, "done")
                ),
                300,
                0.01,
            )
            time.sleep(0.5 * trial if phase == "embedding" else 0)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        start = time.monotonic()
        with serve_process(["--store", str(live)], tmp / f"restart-{trial}.log") as (_, url):
            restart_s.append(round(time.monotonic() - start, 2))
            job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=10).json()
            jobs_after.append(f"{job['state']}: {(job.get('error') or '')[:60]}")
            chunks = httpx.get(f"{url}/readyz", timeout=10).json()["documents"]
            rows = {r["id"]: r for r in httpx.get(f"{url}/v1/sources", timeout=10).json()}
            if "catalogue.md" not in rows:
                outcomes["old" if chunks == 4 else "mix"] += 1
            else:
                outcomes["new_whole" if chunks == 4 + rows["catalogue.md"]["chunks"] else "mix"] += 1
    return {"trials": outcomes, "jobs_after_restart": jobs_after, "restart_to_ready_s": restart_s}


FAULTS = {
    "postgres": fault_postgres,
    "sqlite_lock": fault_sqlite_lock,
    "disk_full": fault_disk_full,
    "store_gone": fault_store_gone,
    "kill_writer": fault_kill_writer,
    "disk_full_upload": fault_disk_full_upload,
    "kill_serve": fault_kill_serve,
}


def main() -> None:
    """Run the faults and print what each showed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated faults (default: all)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON")
    args = parser.parse_args()
    os.environ.update(OFFLINE_ENV)
    from tests.adapters.service.server_helpers import build_tenant_store

    chosen = args.only.split(",") if args.only else list(FAULTS)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as tmp:
        store = build_tenant_store(Path(tmp) / "store", Path(tmp) / "cache")
        for name in chosen:
            work = Path(tmp) / name
            work.mkdir()
            figures[name] = FAULTS[name](store, work)
            sys.stdout.write(f"{name}: {json.dumps(figures[name], ensure_ascii=False)}\n")
            sys.stdout.flush()
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
