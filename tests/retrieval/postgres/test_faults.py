"""Faults on a live PostgreSQL: a dropped connection mid-write, `kill -9` of a writer, a server restart,
a wrong password, a server without pgvector. Nothing is lost: chunks and versions are counted before, after.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from haygraph.retrieval.config import StoreConfig
from haygraph.retrieval.errors import StoreError, StoreNotFoundError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.postgres import connection
from haygraph.retrieval.postgres.store import PostgresStore
from tests.adapters.service.postgres_helpers import find_pg_bin, postgres_cluster
from tests.retrieval.postgres.test_store import TEXTS, VECTOR, table_rows
from tests.retrieval.store_helpers import write_texts

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_texts(tmp_path / "docs", TEXTS)


def state(settings: StoreConfig) -> tuple[int | None, int]:
    """(version, rows in the table)."""
    return connection.store_version(settings), table_rows(settings)


def test_connection_dropped_mid_write_fails_the_job_whole(docs, pg_config, pg_settings, monkeypatch):
    settings = StoreConfig(**pg_settings)
    KnowledgeBase(pg_config).index([docs / "leave.md", docs / "pets.md"])
    before = state(settings)
    original = connection.ensure_hnsw

    def drop_connection(conn, s):  # called inside the job's transaction, after its rows are written
        killer = connection.connect(s)
        killer.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        killer.close()
        original(conn, s)

    monkeypatch.setattr(connection, "ensure_hnsw", drop_connection)
    with pytest.raises(StoreError, match=r"cannot reach PostgreSQL|PostgreSQL failed"):
        KnowledgeBase.open(None, pg_config).index([docs], delete_missing=False)
    assert state(settings) == before  # the previous version is still the one served
    monkeypatch.setattr(connection, "ensure_hnsw", original)
    kb = KnowledgeBase.open(None, pg_config)
    assert kb.store.count_documents() == before[1]
    kb.index([docs], delete_missing=False)  # and the next job succeeds
    assert state(settings) == (before[0] + 1, kb.store.count_documents())  # type: ignore[operator]


def test_kill_9_of_a_writer_leaves_no_partial_version(docs, pg_settings):
    settings = StoreConfig(**pg_settings)
    script = textwrap.dedent(
        f"""
        import sys, time
        from haygraph.retrieval.config import RetrievalConfig
        from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
        from haygraph.retrieval.knowledge_base import KnowledgeBase
        from haygraph.retrieval.postgres import connection
        from tests.retrieval.store_helpers import fake_warm_up

        CachedDocumentEmbedder.warm_up = fake_warm_up
        config = RetrievalConfig.from_dict({{"store": {pg_settings!r}}})
        KnowledgeBase(config).index([{str(docs / "leave.md")!r}])
        print("FIRST", flush=True)

        def stall(conn, settings):  # inside the second job's transaction, rows written
            print("INSIDE", flush=True)
            time.sleep(120)

        connection.ensure_hnsw = stall
        KnowledgeBase.open(None, config).index([{str(docs)!r}])
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO, env=env
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "FIRST"
        before = state(settings)
        assert proc.stdout.readline().strip() == "INSIDE"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        proc.kill()
    assert state(settings) == before == (1, 1)
    store = PostgresStore(settings)
    store.lock_timeout = 10  # the server ends the dead writer's session: its lock is free again
    start = time.monotonic()
    with store.writing():
        assert store.count_documents() == 1
    assert time.monotonic() - start < 10


def test_server_restart_fails_fast_and_recovers_without_reopening(docs, pg_config, pgvector_cluster):
    config = pg_config.with_overrides(store={"timeout": 2})
    KnowledgeBase(config).index([docs])
    kb = KnowledgeBase.open(None, config)
    pg = kb.store.pgvector()
    expected = [d.id for d in pg._embedding_retrieval(VECTOR, top_k=3)]
    pgvector_cluster.stop()
    try:
        start = time.monotonic()
        with (
            pytest.raises(
                StoreError, match=r"no connection to PostgreSQL within 2 s|cannot reach PostgreSQL"
            ),
            kb.store.query_errors(),
        ):
            pg._embedding_retrieval(VECTOR, top_k=3)
        assert time.monotonic() - start < 5
        start = time.monotonic()
        with pytest.raises(
            StoreError, match=r"no connection to PostgreSQL within 2 s|cannot reach PostgreSQL"
        ):
            kb.search("annual leave", config="bm25")  # BM25 scores in the process, reads the chunks' text
        assert time.monotonic() - start < 5
    finally:
        pgvector_cluster.start()
    assert [d.id for d in pg._embedding_retrieval(VECTOR, top_k=3)] == expected  # same objects, reconnected
    assert kb.search("annual leave", config="bm25").hits
    assert kb.store.count_documents() == table_rows(kb.store.settings) == len(TEXTS)


def test_wrong_password_is_one_line_naming_the_setting(pgvector_cluster, monkeypatch):
    hba = pgvector_cluster.data / "pg_hba.conf"
    rule = "host all haygraph_pw 127.0.0.1/32 scram-sha-256\n"
    text = hba.read_text()
    if rule not in text:
        hba.write_text(rule + text)  # first matching line wins: this role needs a password
    admin = connection.connect(StoreConfig(backend="postgres", url=pgvector_cluster.url))
    try:
        admin.execute("SELECT pg_reload_conf()")
        if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = 'haygraph_pw'").fetchone() is None:
            admin.execute("CREATE ROLE haygraph_pw LOGIN PASSWORD 'right'")
    finally:
        admin.close()
    url = pgvector_cluster.url.replace("postgres@", "haygraph_pw@")
    settings = StoreConfig(backend="postgres", url=url, password_env="HAYGRAPH_TEST_PG_PASSWORD")
    monkeypatch.setenv("HAYGRAPH_TEST_PG_PASSWORD", "wrong")
    with pytest.raises(StoreError) as err:
        PostgresStore.open(settings)
    assert str(err.value) == (
        f"{connection.describe(settings)}: PostgreSQL refused the password of haygraph_pw; set it in "
        "PGPASSWORD or in the variable store.password_env names (HAYGRAPH_TEST_PG_PASSWORD), not in store.url"
    )
    monkeypatch.setenv("HAYGRAPH_TEST_PG_PASSWORD", "right")
    with pytest.raises(StoreNotFoundError):  # connected: there is just no store yet
        PostgresStore.open(settings)


@pytest.mark.skipif(find_pg_bin() is None, reason="Debian's PostgreSQL (no pgvector) is not installed")
def test_server_without_pgvector_names_the_fix():
    with postgres_cluster() as plain:
        settings = StoreConfig(backend="postgres", url=plain.url, collection="kb")
        store = PostgresStore(settings)
        store.write_documents([_doc()])
        with pytest.raises(StoreError, match=r"the PostgreSQL server has no pgvector extension; install it"):
            store.save()


def _doc():
    from haystack import Document

    return Document(content="x", embedding=[1.0, 0.0], meta={"source_id": "x.md"})
