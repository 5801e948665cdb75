"""Slow and vanishing clients on a real `haygraph serve` process: nobody holds a slot past a deadline."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adapters.service.server_helpers import serve_process

pytestmark = pytest.mark.integration

QUESTION = "What is the Acme per diem for business travel?"


@pytest.fixture(scope="module")
def server(tenant_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One slot (so a held slot would show), 1 s read deadlines, a 1 s-per-call chat model."""
    log = tmp_path_factory.mktemp("slow") / "serve.log"
    args = ["--store", str(tenant_store), "--model", "slow:1", "--max-in-flight", "1", "--body-timeout", "1"]
    with serve_process([*args, "--threads-db", str(log.parent / "threads.sqlite")], log) as (_proc, url):
        yield url
    assert "Traceback" not in log.read_text()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def load(url: str) -> dict[str, Any]:
    body = httpx.get(f"{url}/readyz", timeout=5).json()
    return {**body["load"], "active_runs": body["active_runs"]}


def wait_idle(url: str, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        now = load(url)
        if now["in_flight"] == 0 and now["waiting"] == 0 and now["active_runs"] == 0:
            return True
        time.sleep(0.1)
    return False


def read_all(sock: socket.socket, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def test_body_one_byte_a_second_gets_408_without_a_slot(server: str) -> None:
    body = json.dumps({"question": QUESTION}).encode()
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        head = (
            "POST /v1/ask HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode())
        start = time.monotonic()
        sock.settimeout(0.05)
        sent, answer = 0, b""
        while time.monotonic() - start < 5 and not answer:
            sock.sendall(body[sent : sent + 1])
            sent += 1
            assert load(server)["in_flight"] == 0  # a body still arriving holds no slot
            try:
                answer = sock.recv(65536)
            except TimeoutError:
                time.sleep(0.25)
        answer += read_all(sock, 5)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"request_timeout"' in answer and time.monotonic() - start < 3
    assert httpx.post(f"{server}/v1/search", json={"query": "per diem"}, timeout=30).status_code == 200


def test_headers_that_never_end_are_cut_off(server: str) -> None:
    with socket.create_connection(("127.0.0.1", port_of(server))) as sock:
        sock.sendall(b"POST /v1/ask HTTP/1.1\r\nHost: x\r\n")
        start = time.monotonic()
        assert read_all(sock, 10) == b""  # closed by the server, nothing answered
    assert 0.8 < time.monotonic() - start < 5


def test_stream_never_read_and_disconnect_mid_stream_leave_the_thread_consistent(server: str) -> None:
    port = port_of(server)
    body = json.dumps({"question": QUESTION, "thread_id": "vanish-1"}).encode()
    request = (
        f"POST /v1/ask/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    never_reads = socket.create_connection(("127.0.0.1", port))
    never_reads.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    never_reads.sendall(request.replace(b"vanish-1", b"unread-1"))
    try:
        assert wait_idle(server, 20)  # its turn ran to the end; nothing waits on the reader
        with socket.create_connection(("127.0.0.1", port)) as vanishing:
            vanishing.sendall(request)
            deadline = time.monotonic() + 10
            while load(server)["active_runs"] == 0 and time.monotonic() < deadline:
                time.sleep(0.05)
        # closed mid-turn: the run is cancelled, the slot given back
        assert wait_idle(server, 10)
    finally:
        never_reads.close()
    assert httpx.get(f"{server}/v1/threads/vanish-1", timeout=10).status_code == 404  # nothing half-saved
    answered = httpx.post(
        f"{server}/v1/ask", json={"question": QUESTION, "thread_id": "vanish-1"}, timeout=60
    )
    assert answered.status_code == 200 and answered.json()["status"] == "completed"
    view = httpx.get(f"{server}/v1/threads/vanish-1", timeout=10).json()
    assert view["turns"] == 1 and [m["role"] for m in view["messages"]] == ["user", "assistant"]
