"""Threads across processes: two `haygraph serve` processes share one real PostgreSQL server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.adapters.service.postgres_helpers import find_pg_bin, postgres_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        find_pg_bin() is None, reason="PostgreSQL's initdb is not installed (Debian: postgresql)"
    ),
]


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(store: Path, threads_db: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
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
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }
    proc = subprocess.Popen(
        [*cmd, "--threads-db", threads_db], stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    proc.kill()
    raise AssertionError(f"server did not become ready: {log.read_text()}")


def stop_server(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM: the service drains and shuts down gracefully, exit status 0."""
    proc.terminate()
    return proc.wait(timeout=60)


def test_thread_persisted_in_postgres_is_resumed_by_another_process(
    tenant_store: Path, postgres_url: str, tmp_path: Path
) -> None:
    first, url = start_server(tenant_store, postgres_url, tmp_path / "first.log")
    try:
        assert httpx.get(f"{url}/readyz").json()["threads"] == "postgres"
        turn = {"question": "What is the Acme per diem for business travel?", "thread_id": "pg-1"}
        answered = httpx.post(f"{url}/v1/ask", json=turn, timeout=60).json()
        assert answered["status"] == "completed"
    finally:
        assert stop_server(first) == 0
    assert "Traceback" not in (tmp_path / "first.log").read_text()

    second, url = start_server(tenant_store, postgres_url, tmp_path / "second.log")
    try:
        view = httpx.get(f"{url}/v1/threads/pg-1", timeout=30).json()
        assert view["turns"] == 1 and view["messages"][0]["content"] == turn["question"]
        assert view["last_result"]["evidence_ids"] == answered["evidence_ids"]
        httpx.post(f"{url}/v1/ask", json={"question": "Thanks!", "thread_id": "pg-1"}, timeout=60)
        assert httpx.get(f"{url}/v1/threads/pg-1", timeout=30).json()["turns"] == 2
    finally:
        assert stop_server(second) == 0


def test_unreachable_database_is_one_clear_error(tenant_store: Path, tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    cmd = [sys.executable, "-m", "haygraph.adapters.cli.main", "serve", "--store", str(tenant_store)]
    done = subprocess.run(
        [*cmd, "--threads-db", f"postgresql://postgres@127.0.0.1:{port}/postgres"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: cannot connect to the threads database (PostgreSQL database 'postgres'"
    )
    assert "Traceback" not in done.stderr
