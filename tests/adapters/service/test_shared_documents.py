"""Jobs and uploaded files in the PostgreSQL database: what one process writes, another reads.

Two `PostgresJobBook`s / `PostgresUploads` stand for two `serve` processes (the two-process test in
`test_postgres_service.py` runs the real thing); the session's PostgreSQL server.
"""

from pathlib import Path

import pytest

from haygraph.adapters.service.documents import INTERRUPTED, IndexJob
from haygraph.adapters.service.shared_documents import (
    PostgresJobBook,
    PostgresUploads,
    ensure_tables,
    jobs_table,
)
from haygraph.retrieval.config import StoreConfig
from haygraph.retrieval.postgres import connection

pytest.importorskip("psycopg_pool")


def test_a_job_is_read_by_another_process_and_an_abandoned_one_is_failed(pg_settings) -> None:
    settings = StoreConfig(**pg_settings)
    ensure_tables(settings)
    now = [0.0]  # the progress throttle's clock, moved by hand (a busy machine makes real time flaky)
    one, two = PostgresJobBook(settings, clock=lambda: now[0]), PostgresJobBook(settings)
    try:
        job = IndexJob(
            id="j1", tenant="acme", kind="upload", files=["a.md"], state="running", done=2, total=5
        )
        one.put(job.record())
        seen = two.get("j1", INTERRUPTED)
        assert seen is not None and (seen["state"], seen["done"], seen["tenant"]) == ("running", 2, "acme")
        now[0] = 0.9
        one.put({**job.record(), "done": 3}, progress=True)  # progress is written at most once a second
        assert two.get("j1", INTERRUPTED)["done"] == 2  # type: ignore[index]
        now[0] = 1.1
        one.put({**job.record(), "done": 4}, progress=True)
        assert two.get("j1", INTERRUPTED)["done"] == 4  # type: ignore[index]
        assert two.get("nope", INTERRUPTED) is None
        with connection.short_connection(settings) as conn:  # its process stopped beating a minute ago
            conn.execute(f"UPDATE \"{jobs_table(settings)}\" SET heartbeat = now() - interval '1 minute'")
        failed = two.get("j1", INTERRUPTED)
        assert failed is not None and (failed["state"], failed["error"]) == ("failed", INTERRUPTED)
        assert one.get("j1", INTERRUPTED)["state"] == "failed"  # type: ignore[index]  # recorded for all
    finally:
        one.close()
        two.close()


def test_an_upload_reaches_another_process(pg_settings, tmp_path: Path) -> None:
    settings = StoreConfig(**pg_settings)
    ensure_tables(settings)
    one, two = PostgresUploads(settings), PostgresUploads(settings)
    assert one.root == two.root  # the same path in every process: a source's file path is its identity
    path = tmp_path / "a" / "parking.md"
    path.parent.mkdir()
    path.write_bytes(b"# Parking\n\nLevel -2.\n")
    one.put("t-x", "parking.md", "acme", path)
    target = tmp_path / "b" / "parking.md"
    assert two.fetch("t-x", "parking.md", target) and target.read_bytes() == path.read_bytes()
    assert two.sizes("t-x") == {"parking.md": path.stat().st_size} and two.sizes("t-y") == {}
    two.delete("t-x", "parking.md")
    assert not one.fetch("t-x", "parking.md", tmp_path / "c.md") and one.sizes("t-x") == {}


def test_processes_starting_together_all_create_the_tables(pg_settings) -> None:
    # Several `serve` processes started at once each create the tables: without the lock in
    # `ensure_tables`, CREATE TABLE IF NOT EXISTS raced ("relation ... already exists") and a process
    # exited; with the lock taken out, this test failed in 3 runs of 3.
    import threading

    from psycopg import sql

    failures: list[BaseException] = []
    for attempt in range(5):
        settings = StoreConfig(**{**pg_settings, "collection": f"{pg_settings['collection']}_{attempt}"})
        start = threading.Barrier(6)

        def starting(settings: StoreConfig = settings, start: threading.Barrier = start) -> None:
            start.wait()
            try:
                ensure_tables(settings)
            except BaseException as error:  # collected, reported below
                failures.append(error)

        workers = [threading.Thread(target=starting) for _ in range(6)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        with connection.short_connection(settings) as conn:
            for table in (jobs_table(settings), f"{settings.collection}__uploads"):
                conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))
    assert not failures, failures
