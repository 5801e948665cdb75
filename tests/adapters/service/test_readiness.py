"""Honest readiness and quick recovery: PostgreSQL (store and threads) stopped under a running service.

The service's store and its threads live on the test session's PostgreSQL server (pgvector). While the
server is stopped, `/readyz` answers 503 with the reason and a search 503 `store_unavailable`; once it is
started again, `/readyz` is 200 and searches succeed without a restart of the service. The service
tests' outage (5 s, with requests during it) checks what is answered; the query pool's own test uses a
16 s outage, after which the pool's old reconnect backoff (a doubling delay up to 300 s: attempts at 0,
1, 3, 7, 15, 31 s) kept it waiting for the attempt at 31 s (a 20 s outage measured here before the fix:
8.4 s; after it: 0.02 s).
The bound checked (4 s) leaves room for a busy machine; the 2 s figure under two `serve` processes
is measured by `benchmarks/bench_recovery.py`.

Where pgvector cannot run (its build needs CPU instructions some machines lack) the store test skips;
the query pool's recovery is then still checked on a plain PostgreSQL server (`ping` needs no pgvector),
and the threads database's through the service.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from tests.adapters.service.postgres_helpers import find_pg_bin, postgres_cluster
from tests.adapters.service.server_helpers import running_server

pytestmark = pytest.mark.integration

OUTAGE_S = 5.0
POOL_OUTAGE_S = 16.0
"""The query pool's outage: the old backoff (next attempt at 31 s) left it waiting over 8 s after it."""
RECOVERY_BOUND_S = 4.0
SEARCH = {"query": "Acme per diem for business travel", "top_k": 3}


@pytest.fixture
def threads_url(pgvector_cluster: Any) -> Iterator[str]:
    """A fresh database for the threads on the session's server; dropped afterwards."""
    import psycopg

    name = f"threads_ready_{os.getpid()}"
    with psycopg.connect(pgvector_cluster.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        conn.execute(f"CREATE DATABASE {name}")
    yield pgvector_cluster.url.rsplit("/", 1)[0] + f"/{name}"
    with contextlib.suppress(Exception), psycopg.connect(pgvector_cluster.url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_readyz_follows_postgres_and_requests_recover_quickly(
    tenant_store: Path, pg_settings: dict[str, Any], pgvector_cluster: Any, threads_url: str, tmp_path: Path
) -> None:
    from haygraph.retrieval import RetrievalConfig
    from haygraph.retrieval.store_copy import StoreLocation, copy_store

    config = RetrievalConfig.from_dict({"store": pg_settings})
    copy_store(StoreLocation(directory=tenant_store), StoreLocation(config=config))
    settings = ServiceSettings(store_dir=tmp_path / "files", config=config, threads_db=threads_url)
    (tmp_path / "files").mkdir()
    with running_server(HaygraphService(settings)) as url, httpx.Client(base_url=url, timeout=60) as client:
        ready = client.get("/readyz")
        assert ready.status_code == 200 and ready.json()["status"] == "ready", ready.text
        assert client.post("/v1/search", json=SEARCH).status_code == 200

        pgvector_cluster.stop()
        try:
            down = client.get("/readyz")
            assert down.status_code == 503, down.text
            error = down.json()["error"]
            assert error["type"] == "store_unavailable" and "PostgreSQL" in error["message"]
            assert "127.0.0.1" not in down.text and "Retry-After" in down.headers  # no server address leaks
            search = client.post("/v1/search", json=SEARCH)
            assert search.status_code == 503 and search.json()["error"]["type"] == "store_unavailable"
            stopped = time.monotonic()
            while time.monotonic() - stopped < OUTAGE_S:  # traffic during the outage: the pool retries
                assert client.get("/readyz").status_code == 503
                time.sleep(1.0)
        finally:
            pgvector_cluster.start()
        back = time.monotonic()
        while (ready := client.get("/readyz")).status_code != 200:
            assert time.monotonic() - back < RECOVERY_BOUND_S, ready.text
            time.sleep(0.1)
        ready_after = time.monotonic() - back
        search = client.post("/v1/search", json=SEARCH)
        assert search.status_code == 200, search.text
        assert {r["source"] for r in search.json()["results"]} >= {"acme-travel.md"}
        answered_after = time.monotonic() - back
        thread = client.post("/v1/ask", json={"question": SEARCH["query"], "thread_id": "ready-1"})
        assert thread.status_code == 200 and thread.json()["status"] == "completed", thread.text
        print(f"after a {OUTAGE_S:g} s outage: ready {ready_after:.2f} s, searched {answered_after:.2f} s")


def database_metric(client: httpx.Client, name: str, database: str = "threads") -> float:
    """One `haygraph_database_*` sample of the service's `/metrics`."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == name and sample.labels.get("database") == database:
                return float(sample.value)
    raise AssertionError(f"no {name}{{database={database!r}}} in /metrics")


@pytest.mark.skipif(find_pg_bin() is None, reason="PostgreSQL's initdb is not installed (Debian: postgresql)")
def test_readyz_names_the_threads_database(tenant_store: Path) -> None:
    """An embedded store, threads on PostgreSQL: readiness follows the threads database alone.

    The metrics follow it too: `haygraph_database_up{database="threads"}` is 0 during the outage and 1
    after it, and the pool's opened connections grow by the reconnect.
    """
    with postgres_cluster() as pg:
        settings = ServiceSettings(store_dir=tenant_store, threads_db=pg.url, metrics="loopback")
        with running_server(HaygraphService(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
            assert c.get("/readyz").status_code == 200
            assert database_metric(c, "haygraph_database_up") == 1.0
            opened = database_metric(c, "haygraph_database_connections_total")
            pg.stop()
            try:
                down = c.get("/readyz")
                assert down.status_code == 503 and down.json()["error"]["type"] == "threads_unavailable"
                assert database_metric(c, "haygraph_database_up") == 0.0
                assert "asks without thread_id are not affected" in down.json()["error"]["message"]
                assert c.post("/v1/search", json=SEARCH).status_code == 200  # the store is fine
                stopped = time.monotonic()
                while time.monotonic() - stopped < OUTAGE_S:
                    assert c.get("/readyz").status_code == 503
                    time.sleep(1.0)
            finally:
                pg.start()
            back = time.monotonic()
            while (ready := c.get("/readyz")).status_code != 200:
                assert time.monotonic() - back < RECOVERY_BOUND_S, ready.text
                time.sleep(0.1)
            ask = c.post("/v1/ask", json={"question": SEARCH["query"], "thread_id": "t-1"})
            assert ask.status_code == 200 and ask.json()["status"] == "completed", ask.text
            assert database_metric(c, "haygraph_database_up") == 1.0
            assert database_metric(c, "haygraph_database_connections_total") > opened
            print(f"threads: ready {time.monotonic() - back:.2f} s after an {OUTAGE_S:g} s outage")


@pytest.mark.skipif(find_pg_bin() is None, reason="PostgreSQL's initdb is not installed (Debian: postgresql)")
def test_store_query_pool_reconnects_soon_after_an_outage() -> None:
    """The store's query pool on a plain PostgreSQL: `ping` fails while it is down, succeeds soon after."""
    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.errors import StoreError
    from haygraph.retrieval.postgres.retrieval import close_pools, ping, pool_stats

    with postgres_cluster() as pg:
        settings = StoreConfig(backend="postgres", url=pg.url, collection="ready_probe")
        try:
            ping(settings)
            made = pool_stats()["connections_num"]
            pg.stop()
            stopped = time.monotonic()
            while time.monotonic() - stopped < POOL_OUTAGE_S:
                with pytest.raises(StoreError, match="PostgreSQL"):
                    ping(settings, timeout=1.0)
                time.sleep(0.5)
            pg.start()
            back = time.monotonic()
            while True:
                try:
                    ping(settings, timeout=1.0)
                    break
                except StoreError:
                    assert time.monotonic() - back < RECOVERY_BOUND_S
            print(f"store pool: answering {time.monotonic() - back:.2f} s after a {POOL_OUTAGE_S:g} s outage")
            assert pool_stats()["connections_num"] > made  # a new connection, counted (the metrics' source)
        finally:
            close_pools()
