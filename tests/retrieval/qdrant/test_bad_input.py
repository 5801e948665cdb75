"""Bad input on the Qdrant backend: each failure is one clear error naming the fix; the agent degrades.

A refused API key comes from a loopback HTTP server that answers 401/403 to everything (no Qdrant server
can be obtained here); the server going away mid-query is a connection failure injected into the
client's query call; the directory lock of local mode is taken by a second process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from qdrant_client import QdrantClient
from qdrant_client.http.exceptions import ResponseHandlingException

from haygraph.adapters.agent import build_agent
from haygraph.adapters.cli.main import main
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import StoreError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.qdrant import connection
from tests.retrieval.store_helpers import write_texts

TEXTS = {
    "leave.md": "# Leave\n\nAnnual leave is twenty days per year. Unused leave carries over (five days).\n",
    "travel.md": "# Travel\n\nBook flights at least fourteen days before departure in TripDesk.\n",
}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_texts(tmp_path / "docs", TEXTS)


@pytest.fixture
def indexed(docs: Path, qdrant_config: RetrievalConfig) -> RetrievalConfig:
    """A BM25-mode collection holding `TEXTS` (the agent needs no model)."""
    KnowledgeBase(qdrant_config.with_overrides(query={"mode": "bm25"})).index([docs])
    return qdrant_config


def refusing_server(status: int) -> Iterator[str]:
    class Refuse(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            body = json.dumps({"status": {"error": "Unauthorized: invalid API key"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        connection.close_clients()


@pytest.fixture(params=[401, 403])
def refusing_url(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from refusing_server(request.param)


class TestRefusedApiKey:
    def test_open_names_the_key_variable(self, refusing_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("HAYGRAPH_TEST_QDRANT_KEY", "wrong-key")
        config = RetrievalConfig.from_dict(
            {"store": {"backend": "qdrant", "url": refusing_url, "api_key_env": "HAYGRAPH_TEST_QDRANT_KEY"}}
        )
        with pytest.warns(UserWarning, match="insecure"), pytest.raises(StoreError) as info:
            KnowledgeBase.open(None, config)
        assert "refused the API key" in str(info.value)
        assert "HAYGRAPH_TEST_QDRANT_KEY" in str(info.value)

    def test_cli_prints_one_line(
        self, refusing_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
    ) -> None:
        monkeypatch.setenv("HAYGRAPH_TEST_QDRANT_KEY", "wrong-key")
        store = {"backend": "qdrant", "url": refusing_url, "api_key_env": "HAYGRAPH_TEST_QDRANT_KEY"}
        config = tmp_path / "qdrant.yaml"
        config.write_text(yaml.safe_dump({"store": store}))
        with pytest.warns(UserWarning, match="insecure"):
            code = main(["search", "annual leave", "--store", "unused", "--config", str(config)])
        err = capsys.readouterr().err.strip()
        assert code != 0
        assert err.startswith("error:") and "\n" not in err and "refused the API key" in err


def _server_gone(*args: Any, **kwargs: Any) -> Any:
    raise ResponseHandlingException(httpx.ConnectError("[Errno 111] Connection refused"))


class TestServerGoneMidQuery:
    def test_search_is_a_store_error(self, indexed: RetrievalConfig, monkeypatch: pytest.MonkeyPatch) -> None:
        kb = KnowledgeBase.open(None, indexed)
        assert kb.search("annual leave").hits  # it worked before the server went away
        monkeypatch.setattr(QdrantClient, "query_points", _server_gone)
        with pytest.raises(StoreError, match=r"cannot reach Qdrant.*check store.url"):
            kb.search("annual leave")

    def test_agent_degrades(
        self, indexed: RetrievalConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        agent = build_agent(tmp_path, config=indexed)
        assert agent.ask("How many days of annual leave do I get?")["status"] == "completed"
        monkeypatch.setattr(QdrantClient, "query_points", _server_gone)
        result = agent.ask("How many days of annual leave do I get?", thread_id="gone")
        assert result["status"] == "degraded" and result["evidence_ids"] == []

    def test_a_hanging_server_never_holds_the_agent_past_the_deadline(
        self, indexed: RetrievalConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        agent = build_agent(tmp_path, config=indexed, retrieve_timeout_s=1.0)
        agent.ask("warm up", thread_id="warm")
        release = threading.Event()

        def hang(*args: Any, **kwargs: Any) -> Any:
            release.wait(30)
            return _server_gone()

        monkeypatch.setattr(QdrantClient, "query_points", hang)
        start = time.monotonic()
        try:
            result = agent.ask("How many days of annual leave do I get?", thread_id="hang")
        finally:
            release.set()
        assert result["status"] == "degraded"
        assert time.monotonic() - start < 5.0


@pytest.mark.skipif(
    "QDRANT_URL" in __import__("os").environ, reason="the directory lock is a local-mode matter"
)
class TestLocalModeLock:
    def test_second_process_gets_one_clear_error(
        self, indexed: RetrievalConfig, tmp_path: Path, capsys: Any
    ) -> None:
        connection.close_clients()  # this process lets go of the directory
        path = indexed.store.path
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sys, time\nfrom qdrant_client import QdrantClient\n"
                f"c = QdrantClient(path={path!r})\nprint('ready', flush=True)\nsys.stdin.read()\n",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
            with pytest.raises(StoreError, match=r"open in another process.*run a Qdrant server"):
                KnowledgeBase.open(None, indexed)
            config = tmp_path / "qdrant.yaml"
            config.write_text(yaml.safe_dump({"store": indexed.store.model_dump(exclude_none=True)}))
            assert main(["search", "annual leave", "--store", "unused", "--config", str(config)]) != 0
            err = capsys.readouterr().err.strip()
            assert err.startswith("error:") and "\n" not in err and "another process" in err
        finally:
            holder.communicate("", timeout=30)
        assert KnowledgeBase.open(None, indexed).search("annual leave").hits  # free again: it opens
