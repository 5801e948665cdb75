"""Checkpointers for the service's conversation threads: memory, SQLite (one host) or PostgreSQL (many).

The graph runs asynchronously in the service (`ainvoke` / `astream`), so the savers are LangGraph's
async ones: `InMemorySaver`, `AsyncSqliteSaver` (aiosqlite) and `AsyncPostgresSaver` over a psycopg
connection pool (the optional `serve` extra: `langgraph-checkpoint-postgres`, `psycopg[binary]`).
All use the control plane's serializer, which allows our own state types.

When the threads database fails under a running service (PostgreSQL stopped or restarting, a SQLite
file locked by another process), `is_threads_error` recognises the failure: a turn is then answered
without the thread (`turns`: status `degraded`, a note saying threads are unavailable) and a thread read
is 503 `threads_unavailable`. The PostgreSQL pool checks each connection before use and waits at most
`POOL_TIMEOUT_S` for one, so the service recovers by itself when the database is back: a failed
connection is retried for at most `RECONNECT_TIMEOUT_S` (the library's default, 300 s with a doubling
delay, kept the pool waiting up to a minute after a long outage), then the next request starts afresh.
`ping_threads` is the readiness probe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from haygraph.adapters.service.errors import ServiceConfigError, ThreadsUnavailableError
from haygraph.adapters.service.metrics import set_database_up
from haygraph.control import memory_checkpointer
from haygraph.control.graph.checkpointers import state_serializer

logger = logging.getLogger(__name__)

POOL_MAX_SIZE = 8
"""PostgreSQL connections per service process."""
POOL_TIMEOUT_S = 3.0
"""Longest wait for a PostgreSQL connection (the database down: the turn goes on without its thread)."""
CONNECT_TIMEOUT_S = 3
"""Connect timeout of each PostgreSQL connection attempt."""
RECONNECT_TIMEOUT_S = 2.0
"""How long the pool retries one failed connection before giving up (the next request starts afresh)."""
PING_TIMEOUT_S = 2.0
"""Longest wait of the readiness probe for a connection."""


def is_threads_error(exc: BaseException) -> bool:
    """Whether `exc` is a failure of the threads database (not of the turn itself)."""
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        return True
    try:
        import psycopg  # its pool's PoolTimeout is a psycopg.OperationalError
    except ImportError:
        return False
    return isinstance(exc, psycopg.Error)


def describe_threads_db(threads_db: str | None) -> str:
    """A log-safe description of where threads live (a PostgreSQL URL without its password)."""
    if not threads_db:
        return "memory (lost on restart; pass --threads-db to keep them)"
    if threads_db.startswith(("postgresql://", "postgres://")):
        from psycopg.conninfo import conninfo_to_dict

        try:
            info = conninfo_to_dict(threads_db)
        except Exception:
            return "PostgreSQL"
        return f"PostgreSQL database {info.get('dbname', '?')!r} on {info.get('host', 'localhost')}"
    return f"SQLite file {threads_db}"


def check_threads_db(threads_db: str | None) -> None:
    """Fail fast, before the server starts, when the threads database cannot be opened."""
    if not threads_db:
        return
    if threads_db.startswith(("postgresql://", "postgres://")):
        try:
            import psycopg
        except ImportError as exc:
            raise ServiceConfigError(
                "--threads-db postgresql://... needs the `serve` extra: pip install 'haygraph[serve]'"
            ) from exc
        try:
            psycopg.connect(threads_db, connect_timeout=10).close()
        except psycopg.Error as exc:
            raise ServiceConfigError(
                f"cannot connect to the threads database ({describe_threads_db(threads_db)}): "
                f"{' '.join(str(exc).split())}"
            ) from exc
        return
    parent = Path(threads_db).expanduser().resolve().parent
    if not parent.is_dir():
        raise ServiceConfigError(f"--threads-db: directory {str(parent)!r} does not exist")


@contextmanager
def threads_unavailable() -> Iterator[None]:
    """Turn a threads-database failure inside the block into `ThreadsUnavailableError` (503)."""
    try:
        yield
    except Exception as exc:
        if not is_threads_error(exc):
            raise
        logger.warning("threads database failed: %s", " ".join(f"{type(exc).__name__}: {exc}".split()))
        set_database_up("threads", False)
        raise ThreadsUnavailableError(
            "the threads database is unavailable right now; retry shortly (asks without thread_id are "
            "not affected)"
        ) from exc


async def ping_threads(saver: BaseCheckpointSaver[Any]) -> None:
    """Run ``SELECT 1`` on the threads database when it is PostgreSQL (memory and SQLite: nothing to do).

    Raises:
        ThreadsUnavailableError: no connection within `PING_TIMEOUT_S`, or the query failed.

    """
    pool = getattr(saver, "conn", None)
    try:
        from psycopg_pool import AsyncConnectionPool
    except ImportError:
        return
    if not isinstance(pool, AsyncConnectionPool):
        return
    try:
        with threads_unavailable():
            async with asyncio.timeout(PING_TIMEOUT_S + 1.0):  # a black-holed server cannot hang the probe
                async with pool.connection(timeout=PING_TIMEOUT_S) as conn:
                    await conn.execute("SELECT 1")
    except TimeoutError as exc:
        set_database_up("threads", False)
        raise ThreadsUnavailableError(
            f"the threads database did not answer within {PING_TIMEOUT_S + 1.0:g} s; retry shortly (asks "
            "without thread_id are not affected)"
        ) from exc


@asynccontextmanager
async def open_checkpointer(threads_db: str | None) -> AsyncIterator[BaseCheckpointSaver[Any]]:
    """Open the thread store for the life of the server; flushed and closed on exit."""
    if not threads_db:
        yield memory_checkpointer()
        return
    if threads_db.startswith(("postgresql://", "postgres://")):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            threads_db,
            min_size=1,
            max_size=POOL_MAX_SIZE,
            open=False,
            timeout=POOL_TIMEOUT_S,
            check=AsyncConnectionPool.check_connection,  # a connection broken by a restart is replaced
            reconnect_timeout=RECONNECT_TIMEOUT_S,
            kwargs={
                "autocommit": True,
                "prepare_threshold": 0,
                "row_factory": dict_row,
                "connect_timeout": CONNECT_TIMEOUT_S,
            },
        )
        await pool.open(wait=True, timeout=30)
        try:
            saver = AsyncPostgresSaver(conn=pool, serde=state_serializer())  # type: ignore[arg-type]
            await saver.setup()
            yield saver
        finally:
            await pool.close()
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path = Path(threads_db).expanduser()
    async with aiosqlite.connect(str(path)) as conn:
        saver_sqlite = AsyncSqliteSaver(conn, serde=state_serializer())
        await saver_sqlite.setup()
        yield saver_sqlite
        await conn.commit()
