"""`PostgresStore`: the store of a PostgreSQL-backed `KnowledgeBase` — a pgvector table plus a local catalog.

Dense retrieval (exact or HNSW, filters and tenancy as SQL conditions) runs in PostgreSQL through
`pgvector-haystack`'s `PgvectorEmbeddingRetriever` over the `PgvectorDocumentStore` that `pgvector()`
returns. The process keeps a catalog of the documents (the `CatalogStore` this class extends): the
lifecycle code of `KnowledgeBase` reads it, and BM25 runs on it in the process (bm25s, jieba for
Chinese), built from the table's text when a version is loaded — the same index as the embedded store's,
so keyword ranking is unchanged (see the README's PostgreSQL section for the measurement that chose it).

Writers: `writing()` takes the store's advisory lock on its own connection and loads the newest version
first; `save()` writes the pending documents, deletions and the manifest row in one transaction and
bumps the version. Readers (`open`) read the manifest and the rows in one repeatable-read transaction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from haygraph.retrieval.catalog_store import CatalogStore
from haygraph.retrieval.config import BM25Config, StoreConfig
from haygraph.retrieval.errors import StoreConflictError, StoreError, StoreLockedError, StoreNotFoundError
from haygraph.retrieval.postgres import connection
from haygraph.retrieval.store import EmbeddedDocumentStore

logger = logging.getLogger(__name__)

_WRITE_BATCH = 500
_READ_BATCH = 5000


class PostgresStore(CatalogStore):
    """A pgvector table (`pgvector()`) with the process-local catalog `KnowledgeBase` reads."""

    def __init__(self, settings: StoreConfig, bm25: BM25Config | None = None) -> None:
        """Describe the target; nothing connects until `open`, `writing`, `save` or `pgvector` is called."""
        super().__init__()
        self.settings = settings
        self.bm25 = bm25 or BM25Config()
        self.path = connection.describe(settings)
        self._pgvector: Any = None
        self._conn: Any = None
        self._replace = False

    # -- writing -----------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[EmbeddedDocumentStore]:
        """Hold the store's writer lock (a PostgreSQL advisory lock); on entry, load the newest version.

        Re-entrant. A second writer waits up to `lock_timeout` seconds (logged), then `StoreLockedError`.
        This copy holding unsaved changes made on an older version gets `StoreConflictError`.
        """
        if self._lock_depth:
            self._lock_depth += 1
            try:
                yield self
            finally:
                self._lock_depth -= 1
            return
        conn = connection.connect(self.settings)
        try:
            with connection.postgres_errors(self.settings):
                self._take_lock(conn)
                self._conn, self._lock_depth = conn, 1
                self._catch_up(conn)
            yield self
        finally:
            self._conn, self._lock_depth = None, 0
            conn.close()  # ends the session: the advisory lock goes with it

    def _take_lock(self, conn: Any) -> None:
        import psycopg

        key = connection.lock_key(self.settings)
        if conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()[0]:
            return
        unsigned = key & 0xFFFFFFFFFFFFFFFF
        holder = conn.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 "
            "AND classid = %s::bigint::oid AND objid = %s::bigint::oid LIMIT 1",
            (unsigned >> 32, unsigned & 0xFFFFFFFF),
        ).fetchone()
        logger.warning(
            "store %s is being written by another process (server pid %s); waiting up to %.0f s",
            self.path,
            holder[0] if holder else "?",
            self.lock_timeout,
        )
        conn.execute(f"SET lock_timeout = {int(self.lock_timeout * 1000)}")
        try:
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreLockedError(
                f"store {self.path} is still being written by another process after "
                f"{self.lock_timeout:.0f} s; "
                "try again when it has finished (or raise store.lock_timeout)"
            ) from exc
        conn.execute("SET lock_timeout = 0")

    def _catch_up(self, conn: Any) -> None:
        saved = connection.read_manifest(conn, self.settings)
        if saved is None or str(saved[0]) == self.version or self._replace:
            return
        if self.dirty:
            raise StoreConflictError(
                f"store {self.path} was saved by another writer (version {saved[0]}) after this copy was "
                f"loaded (version {self.version or 'none'}); its unsaved changes were not written. Fix: "
                "open the store again (KnowledgeBase.open) and repeat the changes, or clear() it to replace "
                "it"
            )
        self._adopt(PostgresStore.open(self.settings, self.bm25))
        logger.info("store %s: loaded version %s saved by another writer", self.path, saved[0])

    def clear(self) -> None:
        """Forget every document; the next `save` replaces the table's content with this copy's."""
        super().clear()
        self._replace = True
        self.dirty = True

    def save(self, path: str | Path | None = None) -> Path:
        """Write the pending documents and deletions and the manifest in one transaction; bump the version."""
        if path is not None:
            raise StoreError("a PostgreSQL-backed store is saved to its table; it takes no path")
        with self.writing():
            written, deleted = self.pending()
            matrix = self.matrix()
            dimension = int(matrix.shape[1]) if matrix is not None else self.meta.get("dimension")
            if dimension is None:
                raise StoreError(f"{self.path}: the store has no embeddings to learn the vector size from")
            start = time.perf_counter()
            with connection.postgres_errors(self.settings):
                version = self._commit(self._conn, written, deleted, int(dimension))
            logger.info(
                "%s: version %d: wrote %d, deleted %d documents in %.1f s",
                self.path,
                version,
                len(written),
                len(deleted),
                time.perf_counter() - start,
            )
            self.meta["dimension"] = int(dimension)
            self.version, self._replace = str(version), False
            self._saved()
            self.revision += 1
        return Path(self.path or "")

    def _commit(self, conn: Any, written: list[Document], deleted: list[str], dimension: int) -> int:
        from psycopg import sql
        from psycopg.types.json import Jsonb

        table = sql.Identifier(self.settings.collection)
        manifest = sql.Identifier(connection.manifest_table(self.settings))
        connection.ensure_extension(conn, self.settings)
        with conn.transaction():
            connection.ensure_tables(conn, self.settings, dimension)
            row = conn.execute(
                sql.SQL("SELECT version FROM {} WHERE id = 1 FOR UPDATE").format(manifest)
            ).fetchone()
            current = None if row is None else str(row[0])
            if current is not None and current != self.version and not self._replace:
                raise StoreConflictError(
                    f"store {self.path} moved to version {current} while this copy (version "
                    f"{self.version or 'none'}) was being written; nothing was saved — run the command again"
                )
            if self._replace:
                conn.execute(sql.SQL("DELETE FROM {}").format(table))
            insert = sql.SQL(
                "INSERT INTO {} (id, embedding, content, meta) VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO "
                "UPDATE SET embedding = EXCLUDED.embedding, content = EXCLUDED.content, meta = EXCLUDED.meta"
            ).format(table)
            with conn.cursor() as cur:
                for start in range(0, len(written), _WRITE_BATCH):
                    batch = written[start : start + _WRITE_BATCH]
                    cur.executemany(insert, [_row(d) for d in batch])
            if deleted and not self._replace:
                conn.execute(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(table), (deleted,))
            meta = {**self.meta, "dimension": dimension}
            version = conn.execute(
                sql.SQL(
                    "INSERT INTO {} (id, version, meta) VALUES (1, 1, %s) ON CONFLICT (id) DO UPDATE SET "
                    "version = {}.version + 1, meta = EXCLUDED.meta, updated_at = now() RETURNING version"
                ).format(manifest, manifest),
                (Jsonb(meta),),
            ).fetchone()[0]
            connection.ensure_hnsw(conn, self.settings)
        return int(version)

    # -- PostgreSQL --------------------------------------------------------------------------------
    def pgvector(self) -> Any:
        """The `PgvectorDocumentStore` over the table (its own connection, reopened after a failure)."""
        if self._pgvector is None:
            from haygraph.retrieval.postgres.retrieval import pgvector_store

            self._pgvector = pgvector_store(self.settings, int(self.meta.get("dimension") or 384), self)
        return self._pgvector

    def query_errors(self) -> AbstractContextManager[None]:
        """Translate PostgreSQL failures during a query (unreachable, restarted) into `StoreError`s."""
        return connection.postgres_errors(self.settings)

    @classmethod
    def open(cls, settings: StoreConfig, bm25: BM25Config | None = None) -> PostgresStore:
        """Load the catalog and manifest of an existing store (one consistent snapshot of both).

        Raises:
            StoreNotFoundError: the database holds no such store.
            StoreError: the server is unreachable, refuses the password, or lacks pgvector.

        """
        from psycopg import sql

        store = cls(settings, bm25)
        conn = connection.connect(settings, autocommit=False)
        try:
            with connection.postgres_errors(settings):
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                saved = connection.read_manifest(conn, settings)
                if saved is None:
                    raise StoreNotFoundError(
                        f"{store.path}: no haygraph store there; create it with `haygraph index --config "
                        "CONFIG PATHS` or `haygraph store copy --from STORE --to CONFIG`"
                    )
                store._load_rows(conn, sql.Identifier(settings.collection))
                conn.commit()
        finally:
            conn.close()
        store.meta = saved[1]
        store.version, store.dirty = str(saved[0]), False
        if settings.search == "hnsw":
            store._build_hnsw_if_missing()
        return store

    def _build_hnsw_if_missing(self) -> None:
        """A store switched to `search: hnsw` gets its index now, not only at the next write (logged)."""
        conn = connection.connect(self.settings)
        try:
            with connection.postgres_errors(self.settings):
                name = f"{self.settings.collection}_hnsw"
                if conn.execute("SELECT to_regclass(%s)", (f'"{name}"',)).fetchone()[0] is not None:
                    return
                logger.warning(
                    "%s: building the HNSW index over %d chunks (store.search is hnsw); this takes a while",
                    self.path,
                    self.count_documents(),
                )
                start = time.perf_counter()
                connection.ensure_hnsw(conn, self.settings)
                logger.info("%s: HNSW index built in %.1f s", self.path, time.perf_counter() - start)
        finally:
            conn.close()

    def _load_rows(self, conn: Any, table: Any) -> None:
        from psycopg import sql

        docs: list[Document] = []
        rows: list[np.ndarray | None] = []
        with conn.cursor(name="haygraph_catalog") as cur:  # server-side: rows arrive in batches
            cur.itersize = _READ_BATCH
            cur.execute(sql.SQL("SELECT id, content, meta, embedding FROM {} ORDER BY id").format(table))
            for doc_id, content, meta, embedding in cur:
                docs.append(Document(id=doc_id, content=content, meta=meta or {}))
                rows.append(
                    None if embedding is None else embedding.to_numpy().astype(np.float32, copy=False)
                )
        self._docs, self._rows = docs, rows
        self._index = {d.id: i for i, d in enumerate(docs)}
        self._matrix = None
        self._bm25.clear()
        self.revision += 1

    def use_bm25(self, bm25: BM25Config) -> None:
        """Adopt the BM25 settings of the (merged) config (the index is built in the process)."""
        self.bm25 = bm25


def _vector(value: Any) -> np.ndarray:
    """A pgvector `Vector` as a float32 row."""
    return np.asarray(value.to_numpy(), dtype=np.float32)


def _row(doc: Document) -> tuple[Any, ...]:
    from psycopg.types.json import Jsonb

    embedding = None if doc.embedding is None else np.asarray(doc.embedding, dtype=np.float32)
    content = (doc.content or "").replace("\x00", "")  # PostgreSQL text holds no NUL
    return (doc.id, embedding, content, Jsonb(doc.meta))
