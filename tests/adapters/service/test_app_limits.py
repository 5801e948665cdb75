"""Deadlines, client disconnects and store reloads on the real server (real embedding model)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from haystack import Document

from haygraph.adapters.service import HaygraphService, ServiceSettings
from tests.adapters.service.chat_models import SlowChatModel
from tests.adapters.service.server_helpers import parse_sse, running_server

pytestmark = pytest.mark.integration

QUESTION = "What is the per diem for business travel?"


@pytest.fixture(scope="module")
def slow_server(tenant_store: Path) -> Iterator[str]:
    """A server whose chat model takes 2 s per call, with a 1 s request deadline."""
    settings = ServiceSettings(store_dir=tenant_store, request_timeout_s=1.0)
    with running_server(HaygraphService(settings, model=SlowChatModel(delay_s=2.0))) as url:
        yield url


def wait_for(predicate: object, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


class TestDeadline:
    def test_slow_model_gives_504_and_no_thread(self, slow_server: str) -> None:
        start = time.monotonic()
        response = httpx.post(
            f"{slow_server}/v1/ask", json={"question": QUESTION, "thread_id": "slow-1"}, timeout=30
        )
        assert 1.0 <= time.monotonic() - start < 1.9  # at the deadline, not after the model
        assert response.status_code == 504
        error = response.json()["error"]
        assert error["type"] == "deadline_exceeded" and "1 s deadline" in error["message"]
        time.sleep(2.5)  # the abandoned model call returns; the cancelled run must not continue
        assert httpx.get(f"{slow_server}/v1/threads/slow-1").status_code == 404

    def test_chat_completion_504(self, slow_server: str) -> None:
        body = {"model": "haygraph", "messages": [{"role": "user", "content": QUESTION}]}
        response = httpx.post(f"{slow_server}/v1/chat/completions", json=body, timeout=30)
        assert response.status_code == 504 and response.json()["error"]["type"] == "deadline_exceeded"

    def test_stream_ends_with_an_error_event(self, slow_server: str) -> None:
        response = httpx.post(f"{slow_server}/v1/ask/stream", json={"question": QUESTION}, timeout=30)
        events = parse_sse(response.text)
        assert events[-1][0] == "error" and events[-1][1]["error"]["type"] == "deadline_exceeded"
        assert "result" not in [k for k, _ in events]


class TestDisconnect:
    def test_client_disconnect_cancels_the_run(self, slow_server: str) -> None:
        with (
            httpx.Client(timeout=30) as client,
            client.stream(
                "POST", f"{slow_server}/v1/ask/stream", json={"question": QUESTION, "thread_id": "gone-1"}
            ) as r,
        ):
            assert r.status_code == 200
            assert wait_for(lambda: httpx.get(f"{slow_server}/readyz").json()["active_runs"] == 1, 2.0)
        # The stream is closed mid-run: the run is cancelled and nothing keeps running.
        assert wait_for(lambda: httpx.get(f"{slow_server}/readyz").json()["active_runs"] == 0, 3.0)
        time.sleep(2.5)
        assert httpx.get(f"{slow_server}/v1/threads/gone-1").status_code == 404


class TestReload:
    def test_new_store_version_is_picked_up(self, tenant_store: Path, tmp_path: Path) -> None:
        from haygraph.retrieval import KnowledgeBase

        store = tmp_path / "store"
        shutil.copytree(tenant_store, store)
        settings = ServiceSettings(store_dir=store, reload_interval_s=0.2)
        with running_server(HaygraphService(settings)) as url:
            before = httpx.get(f"{url}/readyz").json()
            assert (before["documents"], before["reloads"]) == (4, 0)
            extra = Document(
                content="Initech travel policy: the per diem is 75 francs a day.",
                meta={"source_id": "initech-travel.md", "tenant": "C"},
            )
            KnowledgeBase.open(store).index_documents([extra])
            assert wait_for(lambda: httpx.get(f"{url}/readyz").json()["reloads"] == 1, 30.0)
            after = httpx.get(f"{url}/readyz").json()
            assert after["documents"] == 5 and after["store_version"] != before["store_version"]
            hits = httpx.post(
                f"{url}/v1/search", json={"query": "Initech per diem francs"}, timeout=30
            ).json()
            assert hits["results"][0]["source"] == "initech-travel.md"


class TestSqliteThreads:
    def test_thread_survives_a_restart(self, tenant_store: Path, tmp_path: Path) -> None:
        settings = ServiceSettings(store_dir=tenant_store, threads_db=str(tmp_path / "threads.sqlite"))
        with running_server(HaygraphService(settings)) as url:
            assert httpx.get(f"{url}/readyz").json()["threads"] == "sqlite"
            httpx.post(f"{url}/v1/ask", json={"question": QUESTION, "thread_id": "lite-1"}, timeout=30)
        with running_server(HaygraphService(settings)) as url:
            view = httpx.get(f"{url}/v1/threads/lite-1").json()
            assert view["turns"] == 1 and view["messages"][0]["content"] == QUESTION


_FREED = """
import sys
import numpy as np
from haygraph.adapters.service.allocator import give_back_large_blocks
if sys.argv[1] == "fixed":
    assert give_back_large_blocks()
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) / 1024
big = np.ones(1 << 20); del big  # 8 MB mapped, then freed: glibc's own threshold rises past 4 MB
arrays = [np.ones(1 << 19) for _ in range(30)]  # 4 MB each, written
before = anon()
del arrays[::2]
print(round(before - anon()))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RssAnon from /proc (Linux)")
def test_serve_gives_freed_large_arrays_back() -> None:
    # the serve process fixes glibc's mmap threshold: 15 freed 4 MB arrays (the size of BM25 score
    # arrays at a million chunks) leave the process's memory; with glibc's default they stay
    import subprocess
    import sys

    def freed(mode: str) -> int:
        done = subprocess.run(
            [sys.executable, "-c", _FREED, mode], capture_output=True, text=True, check=True, timeout=120
        )
        return int(done.stdout.split()[-1])

    assert freed("fixed") >= 50
    assert freed("default") <= 20
