"""SIGTERM to a real `haygraph serve` process mid-turn: readiness first, drain, final events, exit 0."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.adapters.service.server_helpers import parse_sse, serve_process, wait_for

pytestmark = pytest.mark.integration

QUESTION = "What is the Acme per diem for business travel?"


def active_runs(url: str) -> int:
    try:
        return int(httpx.get(f"{url}/readyz", timeout=2).json()["active_runs"])
    except (httpx.HTTPError, KeyError, ValueError):
        return -1


def in_background(results: dict[str, Any], url: str) -> list[threading.Thread]:
    """An ask and a stream on their own threads; their responses land in `results`."""

    def ask() -> None:
        try:
            response = httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, timeout=60)
            results["ask"] = (response.status_code, response.json())
        except httpx.HTTPError as exc:
            results["ask"] = (None, repr(exc))

    def stream() -> None:
        try:
            response = httpx.post(
                f"{url}/v1/ask/stream", json={"question": QUESTION, "thread_id": "t1"}, timeout=60
            )
            results["stream"] = (response.status_code, parse_sse(response.text))
        except httpx.HTTPError as exc:
            results["stream"] = (None, repr(exc))

    threads = [threading.Thread(target=ask), threading.Thread(target=stream)]
    for t in threads:
        t.start()
    return threads


def test_sigterm_mid_turn_drains_and_exits_0(tenant_store: Path, tmp_path: Path) -> None:
    """Readiness goes 503 at once; requests are served through the drain delay; the port then closes;
    the in-flight ask and stream complete normally; exit 0 without a traceback."""
    log = tmp_path / "serve.log"
    args = [
        "--store",
        str(tenant_store),
        "--model",
        "slow:1",
        "--drain-delay",
        "1.5",
        "--shutdown-grace",
        "30",
    ]
    with serve_process(args, log) as (proc, url):
        results: dict[str, Any] = {}
        threads = in_background(results, url)
        assert wait_for(lambda: active_runs(url) == 2, 20), "the two turns did not start"
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert wait_for(lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 503, 1.0)
        readyz = httpx.get(f"{url}/readyz", timeout=2)
        assert readyz.json()["error"]["type"] == "shutting_down"
        assert httpx.get(f"{url}/healthz", timeout=2).status_code == 200  # still accepting (drain delay)

        def refused() -> bool:
            try:
                httpx.get(f"{url}/healthz", timeout=1)
            except httpx.ConnectError:
                return True
            return False

        assert wait_for(refused, 10), "the port did not close after the drain delay"
        assert time.monotonic() - signalled >= 1.4
        for t in threads:
            t.join(timeout=60)
        assert proc.wait(timeout=60) == 0
    status, body = results["ask"]
    assert status == 200 and body["status"] == "completed", body
    status, events = results["stream"]
    assert status == 200 and events[-1][0] == "result" and events[-1][1]["status"] == "completed"
    assert "Traceback" not in log.read_text()


def test_turns_past_the_grace_end_with_a_final_event(tenant_store: Path, tmp_path: Path) -> None:
    """A grace shorter than the turn: the ask gets 503 shutting_down, the stream a final `error` event."""
    log = tmp_path / "serve.log"
    args = ["--store", str(tenant_store), "--model", "slow:4", "--shutdown-grace", "0.5"]
    with serve_process(args, log) as (proc, url):
        results: dict[str, Any] = {}
        threads = in_background(results, url)
        assert wait_for(lambda: active_runs(url) == 2, 20), "the two turns did not start"
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        for t in threads:
            t.join(timeout=60)
        assert proc.wait(timeout=60) == 0
        assert time.monotonic() - start < 4.0  # stopped at the grace, not after the 4 s model call
    status, body = results["ask"]
    assert status == 503 and body["error"]["type"] == "shutting_down", body
    status, events = results["stream"]
    assert status == 200 and events[-1][0] == "error", events
    assert events[-1][1]["error"]["type"] == "shutting_down"
    assert "Traceback" not in log.read_text()
