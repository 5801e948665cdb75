"""Indexing jobs and uploaded files of `haygraph serve` kept in the store's PostgreSQL database.

With `store.backend: postgres` several `serve` processes share one store behind any load balancer, so
what one process accepted must be visible to all:

- **Jobs** are rows of ``<collection>__jobs`` (state, phase, progress, report, error, tenant): a job
  started through one process is polled through any other (`GET /v1/jobs/{id}`), and only by its own
  tenant. The process running a job writes its progress at most every `PROGRESS_EVERY_S` seconds and
  beats a heartbeat every `HEARTBEAT_S`; a queued or running job whose heartbeat is older than `STALE_S`
  (its process was stopped or killed) is reported failed (`INTERRUPTED`) by whichever process reads it.
- **Uploaded files** are rows of ``<collection>__uploads`` (``bytea``, one per tenant and file name, as
  long as the source is in the store), so any process can re-index or remove a document uploaded
  through another. The process that indexes a file writes it to
  ``$HAYGRAPH_CACHE_DIR/uploads/<store key>/<tenant folder>/<name>`` first: the same path in every
  process that shares the cache folder's path (the default ``~/.cache/haygraph``), which matters because
  a source remembers its file's path (`meta.file_path`) as its identity.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haygraph.retrieval.config import StoreConfig

logger = logging.getLogger(__name__)

HEARTBEAT_S = 5.0
"""How often a process marks its unfinished jobs alive."""
STALE_S = 30.0
"""A queued or running job not marked alive for this long is reported interrupted."""
PROGRESS_EVERY_S = 1.0
"""How often a running job's progress is written (other processes see it that fresh)."""
KEPT_DAYS = 7
"""Finished jobs older than this are deleted when a new job is added."""

_JOBS = """
CREATE TABLE IF NOT EXISTS {jobs} (
id TEXT PRIMARY KEY,
tenant TEXT,
state TEXT NOT NULL,
record JSONB NOT NULL,
owner TEXT NOT NULL,
heartbeat TIMESTAMPTZ NOT NULL DEFAULT now(),
created TIMESTAMPTZ NOT NULL DEFAULT now())
"""
_UPLOADS = """
CREATE TABLE IF NOT EXISTS {uploads} (
folder TEXT NOT NULL,
name TEXT NOT NULL,
tenant TEXT,
data BYTEA NOT NULL,
bytes BIGINT NOT NULL,
sha256 TEXT NOT NULL,
uploaded TIMESTAMPTZ NOT NULL DEFAULT now(),
PRIMARY KEY (folder, name))
"""


def jobs_table(settings: StoreConfig) -> str:
    """The table of the store's indexing jobs."""
    return f"{settings.collection}__jobs"


def uploads_table(settings: StoreConfig) -> str:
    """The table of the store's uploaded files."""
    return f"{settings.collection}__uploads"


_DDL_KEY = 0x5DD1
"""Mixed into the store's writer-lock key: the key of the lock that serialises creating these tables."""


def ensure_tables(settings: StoreConfig) -> None:
    """Create the jobs and uploads tables if missing."""
    from psycopg import sql

    from haygraph.retrieval.postgres import connection

    with connection.short_connection(settings) as conn, conn.transaction():
        # processes starting together would race on CREATE TABLE IF NOT EXISTS ("relation already
        # exists"): the first takes this lock for its transaction, the others then find the tables
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (connection.lock_key(settings) ^ _DDL_KEY,))
        connection.ensure_extension(conn, settings)  # the store's first upload needs it anyway
        conn.execute(sql.SQL(_JOBS).format(jobs=sql.Identifier(jobs_table(settings))))
        uploads = sql.Identifier(uploads_table(settings))
        conn.execute(sql.SQL(_UPLOADS).format(uploads=uploads))
        conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN data SET STORAGE EXTERNAL").format(uploads))


def upload_root(settings: StoreConfig) -> Path:
    """Where processes serving this store write uploaded files before indexing them (module docstring)."""
    from haygraph.retrieval.embedding_cache import default_cache_dir
    from haygraph.retrieval.postgres.connection import describe

    key = hashlib.sha256(describe(settings).encode("utf-8")).hexdigest()[:20]
    return default_cache_dir() / "uploads" / f"pg-{key}"


class PostgresJobBook:
    """Indexing jobs in the database (module docstring); `records` are `IndexJob.record()` dicts."""

    def __init__(self, settings: StoreConfig, clock: Callable[[], float] = time.monotonic) -> None:
        """Start the heartbeat of this process's jobs; `clock` times the progress throttle (tests)."""
        self.settings = settings
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self._last_progress: dict[str, float] = {}
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="haygraph-job-heartbeat", daemon=True)
        self._beat.start()

    def close(self) -> None:
        """Stop the heartbeat (this process's unfinished jobs are reported interrupted after `STALE_S`)."""
        self._stop.set()

    def put(self, record: dict[str, Any], *, progress: bool = False) -> None:
        """Write a job's state (`progress`: a progress update, written at most every `PROGRESS_EVERY_S`)."""
        from psycopg import sql
        from psycopg.types.json import Jsonb

        job_id = record["id"]
        now = self.clock()
        if progress and now - self._last_progress.get(job_id, float("-inf")) < PROGRESS_EVERY_S:
            return
        self._last_progress[job_id] = now
        if record.get("finished") is not None:
            self._last_progress.pop(job_id, None)
        jobs = sql.Identifier(jobs_table(self.settings))
        with self._connection() as conn:
            if record["state"] == "queued":
                conn.execute(
                    sql.SQL(
                        "DELETE FROM {} WHERE state IN ('done', 'failed') "
                        "AND created < now() - %s * interval '1 day'"
                    ).format(jobs),
                    (KEPT_DAYS,),
                )
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (id, tenant, state, record, owner) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, record = EXCLUDED.record, "
                    "heartbeat = now()"
                ).format(jobs),
                (job_id, record.get("tenant"), record["state"], Jsonb(record), self.owner),
            )

    def get(self, job_id: str, interrupted: str) -> dict[str, Any] | None:
        """A job's record, or None; an unfinished one whose process stopped beating is failed first."""
        from psycopg import sql
        from psycopg.types.json import Jsonb

        jobs = sql.Identifier(jobs_table(self.settings))
        with self._connection() as conn:
            row = conn.execute(
                sql.SQL(
                    "SELECT record, state IN ('queued', 'running') "
                    "AND heartbeat < now() - %s * interval '1 second' "
                    "FROM {} WHERE id = %s"
                ).format(jobs),
                (STALE_S, job_id),
            ).fetchone()
            if row is None:
                return None
            record, stale = dict(row[0]), bool(row[1])
            if stale:
                record.update(state="failed", phase="failed", error=interrupted, finished=time.time())
                conn.execute(
                    sql.SQL("UPDATE {} SET state = 'failed', record = %s WHERE id = %s").format(jobs),
                    (Jsonb(record), job_id),
                )
        return record

    def _heartbeat(self) -> None:
        from psycopg import sql

        jobs = sql.Identifier(jobs_table(self.settings))
        while not self._stop.wait(HEARTBEAT_S):
            try:
                with self._connection() as conn:
                    conn.execute(
                        sql.SQL(
                            "UPDATE {} SET heartbeat = now() "
                            "WHERE owner = %s AND state IN ('queued', 'running')"
                        ).format(jobs),
                        (self.owner,),
                    )
            except Exception as exc:  # the database is down: the jobs are not lost, only not marked alive
                logger.debug("job heartbeat failed: %s", exc)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        from haygraph.retrieval.postgres.retrieval import pooled_connection

        with pooled_connection(self.settings) as conn:
            yield conn


class PostgresUploads:
    """Uploaded files in the database, written to a local folder when a process indexes them."""

    def __init__(self, settings: StoreConfig) -> None:
        self.settings = settings
        self.root = upload_root(settings)

    def put(self, folder: str, name: str, tenant: str | None, path: Path) -> None:
        """Store the checked upload at `path` (replacing an earlier upload of that name)."""
        from psycopg import sql

        data = path.read_bytes()
        query = sql.SQL(
            "INSERT INTO {} (folder, name, tenant, data, bytes, sha256) VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (folder, name) DO UPDATE SET data = EXCLUDED.data, bytes = EXCLUDED.bytes, "
            "sha256 = EXCLUDED.sha256, uploaded = now()"
        ).format(sql.Identifier(uploads_table(self.settings)))
        with self._connection() as conn:
            conn.execute(query, (folder, name, tenant, data, len(data), hashlib.sha256(data).hexdigest()))

    def fetch(self, folder: str, name: str, target: Path) -> bool:
        """Write the stored upload to `target` unless it is there, the same; False when none is stored."""
        from psycopg import sql

        table = sql.Identifier(uploads_table(self.settings))
        with self._connection() as conn:
            row = conn.execute(
                sql.SQL("SELECT sha256 FROM {} WHERE folder = %s AND name = %s").format(table), (folder, name)
            ).fetchone()
            if row is None:
                return False
            if target.is_file() and _digest(target) == row[0]:
                return True
            with conn.cursor(binary=True) as cur:
                data = cur.execute(
                    sql.SQL("SELECT data FROM {} WHERE folder = %s AND name = %s").format(table),
                    (folder, name),
                ).fetchone()
        if data is None:
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".fetch-{secrets.token_hex(8)}{target.suffix}")
        try:
            tmp.write_bytes(bytes(data[0]))
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        return True

    def sizes(self, folder: str) -> dict[str, int]:
        """{file name: bytes} of a tenant folder's stored uploads."""
        from psycopg import sql

        query = sql.SQL("SELECT name, bytes FROM {} WHERE folder = %s").format(
            sql.Identifier(uploads_table(self.settings))
        )
        with self._connection() as conn:
            return {row[0]: int(row[1]) for row in conn.execute(query, (folder,)).fetchall()}

    def delete(self, folder: str, name: str) -> None:
        """Forget a stored upload."""
        from psycopg import sql

        query = sql.SQL("DELETE FROM {} WHERE folder = %s AND name = %s").format(
            sql.Identifier(uploads_table(self.settings))
        )
        with self._connection() as conn:
            conn.execute(query, (folder, name))

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        from haygraph.retrieval.postgres.retrieval import pooled_connection

        with pooled_connection(self.settings) as conn:
            yield conn


def _digest(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()
