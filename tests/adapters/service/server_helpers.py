"""Run the real service on uvicorn in a background thread (127.0.0.1, a free port); parse SSE.

Not a test module; used by the `test_app*` / `test_openai_client` modules.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from haystack import Document

from haygraph.adapters.service import HaygraphService, create_app

KEY_A = "hg-test-tenant-a-000000000001"
KEY_B = "hg-test-tenant-b-000000000002"
KEY_READER = "hg-test-tenant-a-reader-000003"
"""A read-only key of tenant A, where a test's keys file grants it."""
HEADERS = {
    "A": {"Authorization": f"Bearer {KEY_A}"},
    "B": {"Authorization": f"Bearer {KEY_B}"},
    "reader": {"Authorization": f"Bearer {KEY_READER}"},
}
"""Request headers with each of those keys."""

TENANT_DOCS = [
    Document(
        content="Acme travel policy. Economy class is booked for every flight under six hours. "
        "The Acme per diem for business travel is 60 euros a day.",
        meta={"source_id": "acme-travel.md", "tenant": "A"},
    ),
    Document(
        content="Acme expense claims must be filed within 30 days of the trip through the Acme portal.",
        meta={"source_id": "acme-expenses.md", "tenant": "A"},
    ),
    Document(
        content="Globex travel policy. Business class is allowed for flights over four hours. "
        "The Globex per diem for business travel is 90 dollars a day.",
        meta={"source_id": "globex-travel.md", "tenant": "B"},
    ),
    Document(
        content="Globex expense claims are due within 14 days of the trip and need a manager's approval.",
        meta={"source_id": "globex-expenses.md", "tenant": "B"},
    ),
]
TENANT_SOURCES = {
    "A": {"acme-travel.md", "acme-expenses.md"},
    "B": {"globex-travel.md", "globex-expenses.md"},
}


def build_tenant_store(store: Path, cache_dir: Path) -> Path:
    """Index the two-tenant corpus (real embedding model; embeddings cached in `cache_dir`)."""
    from haygraph.retrieval import KnowledgeBase, RetrievalConfig

    config = RetrievalConfig().with_overrides(embedder={"cache_dir": str(cache_dir)})
    KnowledgeBase(config, store).index_documents(list(TENANT_DOCS))
    return store


def write_keys(path: Path) -> Path:
    """An API-keys file: KEY_A -> tenant A, KEY_B -> tenant B (only `today` and knowledge search)."""
    path.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B, tools: [today, search_knowledge_base]}}\n'
    )
    return path


@contextmanager
def running_server(service: HaygraphService, port: int = 0) -> Iterator[str]:
    """Serve `service` on 127.0.0.1 (`port`, default a free one) in a thread; yields the base URL; stops
    gracefully."""
    service.load()
    config = uvicorn.Config(
        create_app(service), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def wait_for(predicate: Any, timeout_s: float = 10.0) -> bool:
    """Poll `predicate()` every 50 ms until it holds (True) or `timeout_s` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def parse_sse(text: str) -> list[tuple[str | None, Any]]:
    """(event name, JSON data or the raw string) for each event of an SSE body."""
    events: list[tuple[str | None, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            raw = "\n".join(data)
            try:
                events.append((name, json.loads(raw)))
            except json.JSONDecodeError:
                events.append((name, raw))
    return events


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_process(
    args: list[str], log: Path, *, ready_s: float = 180.0
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """Run `haygraph serve ARGS` as a real process on a free loopback port (`--model slow:S` allowed,
    see `slow_serve`); yields (process, base URL) once /readyz answers; kills it if still running after.
    """
    with serve_processes([(args, log)], ready_s=ready_s) as [started]:
        yield started


@contextmanager
def serve_processes(
    runs: list[tuple[list[str], Path]], *, ready_s: float = 180.0
) -> Iterator[list[tuple[subprocess.Popen[bytes], str]]]:
    """Start one `haygraph serve` per (ARGS, log) at once (they load in parallel); yield all once ready."""
    root = Path(__file__).resolve().parents[3]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }
    started: list[tuple[subprocess.Popen[bytes], str, Path]] = []
    try:
        for args, log in runs:
            port = free_port()
            cmd = [
                sys.executable,
                "-m",
                "tests.adapters.service.slow_serve",
                "serve",
                "--port",
                str(port),
                *args,
            ]
            with log.open("wb") as out:
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root)
            started.append((proc, f"http://127.0.0.1:{port}", log))
        deadline = time.monotonic() + ready_s
        for proc, url, log in started:
            while True:
                if proc.poll() is not None:
                    raise AssertionError(f"serve exited ({proc.returncode}): {log.read_text()}")
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise AssertionError(f"serve did not become ready: {log.read_text()}")
                time.sleep(0.2)
        yield [(proc, url) for proc, url, _ in started]
    finally:
        for proc, _, _ in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)


def wait_job_at(
    client: httpx.Client, job_id: str, timeout_s: float = 120, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """Poll `GET /v1/jobs/{job_id}` until the job is done or failed; its last state."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("done", "failed"):
            return job  # type: ignore[no-any-return]
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish")
