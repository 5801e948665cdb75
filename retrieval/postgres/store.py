"""`PostgresStore`: the store of a PostgreSQL-backed `KnowledgeBase`; the corpus stays in the database.

Dense retrieval (exact or HNSW, filters and tenancy as SQL conditions) runs in PostgreSQL through
`pgvector-haystack`'s `PgvectorEmbeddingRetriever` (`retrieval.py`). BM25 runs in the process over the
postings segments each indexing job writes (`postings.py`), loaded when a query first needs them; a
query's hits are then read from the table by document number. Whatever else the lifecycle code and the
service ask of a store — a chunk by id, the sources of a tenant, chunk counts, the cosine of a few
chunks with the query — is a SQL query. A serving process therefore holds no chunk text and no vector:
its memory does not grow with the corpus beyond about 30 bytes per chunk (docs/stores.md, Scale).

Writers: `writing()` takes the store's advisory lock on its own connection and reads the manifest; the
first change opens the job's transaction. Chunks go to the server in batches of `WRITE_BATCH` (binary
COPY into a temporary table, then one upsert; a replaced chunk leaves a tombstone) and their postings
into the job's segment (a new one every `postings.SEGMENT_DOCS` chunks), so a job of a million chunks
holds one batch and one segment's postings in memory, never the whole job. `save()` writes the last
segment, merges small segments, bumps the manifest and commits: readers see the old version or the new
one. A failure, a dropped connection or `kill -9` before the commit leaves the previous version whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import BM25Config, StoreConfig
from haygraph.retrieval.document_matrix import check_storable
from haygraph.retrieval.errors import StoreConflictError, StoreError, StoreLockedError, StoreNotFoundError
from haygraph.retrieval.postgres import connection, postings
from haygraph.retrieval.sources import ANY_TENANT, SourceKey
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.tokenize import BM25Tokenizer

logger = logging.getLogger(__name__)

WRITE_BATCH = 2000
"""Chunks sent to the server per round trip while a job writes."""
_SMALL_SEGMENT = postings.SEGMENT_DOCS // 10
_REMEMBERED_IDS = 50_000


@dataclass
class _Job:
    """The open transaction of one indexing job (inside `writing()`)."""

    version: int
    store_id: str
    next_docno: int
    next_segment: int
    documents: int
    dimension: int | None
    builder: postings.SegmentBuilder
    tables: bool = False
    written: int = 0
    deleted: int = 0
    segments: list[int] = field(default_factory=list)


class PostgresStore(EmbeddedDocumentStore):
    """A store whose chunks, vectors and BM25 postings live in PostgreSQL (module docstring).

    It answers the `EmbeddedDocumentStore` calls the rest of haygraph makes with SQL; the in-memory
    matrix and catalog of the embedded store are never filled (`matrix()` raises).
    """

    streams_writes = True
    """`KnowledgeBase.index_documents` feeds this store in batches (it never needs the whole job at once)."""

    def __init__(self, settings: StoreConfig, bm25: BM25Config | None = None) -> None:
        """Describe the target; nothing connects until a method needs the server."""
        super().__init__()
        self.settings = settings
        self.bm25 = bm25 or BM25Config()
        self.path = connection.describe(settings)
        self.store_id: str | None = None
        self._count = 0
        self._bound = 0  # document numbers of the loaded version are below it
        self._pgvector: Any = None
        self._conn: Any = None
        self._job: _Job | None = None
        self._pending: dict[str, tuple[Document, DuplicatePolicy]] = {}
        self._pending_deletes: set[str] = set()
        self._replace = False
        self._lost = False
        self._indexes: dict[str, postings.SegmentIndex] = {}
        self._index_lock = threading.Lock()
        self._docnos: dict[str, int] = {}

    # -- reading -----------------------------------------------------------------------------------
    @classmethod
    def open(cls, settings: StoreConfig, bm25: BM25Config | None = None) -> PostgresStore:
        """Read the store's manifest (the corpus is read lazily: BM25 segments at the first query).

        Raises:
            StoreNotFoundError: the database holds no such store.
            StoreError: the server is unreachable, refuses the password, or lacks pgvector.

        """
        store = cls(settings, bm25)
        with connection.short_connection(settings) as conn:
            saved = connection.read_manifest(conn, settings)
        if saved is None:
            raise StoreNotFoundError(
                f"{store.path}: no haygraph store there; create it with `haygraph index --config "
                "CONFIG PATHS` or `haygraph store copy --from STORE --to CONFIG`"
            )
        store._adopt_manifest(saved)
        if settings.search == "hnsw":
            store._build_hnsw_if_missing()
        return store

    def _adopt_manifest(self, saved: connection.Manifest) -> None:
        self.version, self.meta, self.store_id = str(saved.version), dict(saved.meta), saved.store_id
        self._count, self._bound = saved.documents, saved.next_docno
        self.dirty = False
        self._indexes = {}
        self.revision += 1

    def _build_hnsw_if_missing(self) -> None:
        """A store switched to `search: hnsw` gets its index now, not only at the next write (logged)."""
        with connection.short_connection(self.settings) as conn:
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

    def count_documents(self) -> int:
        """Chunks in the loaded version (with this job's changes while one is open)."""
        if self._job is not None:
            return self._job.documents + sum(1 for _ in self._pending)
        return self._count + len(self._pending)

    @property
    def documents(self) -> list[Document]:
        """Every chunk of the table (without vectors), in the order they were written. One SQL query."""
        return self._select("", (), embeddings=False)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """The chunks matching Haystack-syntax `filters` (all when None), with their vectors."""
        where, params = _where(filters)
        return self._select(where, params, embeddings=True)

    def get(self, document_id: str) -> Document | None:
        """The chunk with id `document_id` (one indexed lookup), or None."""
        found = self._select(" AND id = %s", (document_id,), embeddings=False)
        return found[0] if found else None

    def _select(self, where: str | Any, params: Sequence[Any], *, embeddings: bool) -> list[Document]:
        from psycopg import sql

        if not self._has_table():
            return []
        columns = "id, content, meta, docno" + (", embedding::real[]" if embeddings else "")
        query = sql.SQL("SELECT " + columns + " FROM {} WHERE TRUE").format(self._table())
        query = query + (sql.SQL(where) if isinstance(where, str) else where) + sql.SQL(" ORDER BY docno")
        with self._reading() as conn:
            rows = conn.execute(query, tuple(params)).fetchall()
        docs = []
        for row in rows:
            embedding = [float(x) for x in row[4]] if embeddings and row[4] is not None else None
            docs.append(Document(id=row[0], content=row[1], meta=row[2] or {}, embedding=embedding))
        return docs

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """The writer's connection inside a job (its own uncommitted rows visible), else a pooled one."""
        if self._conn is not None:
            with connection.postgres_errors(self.settings):
                yield self._conn
            return
        from haygraph.retrieval.postgres.retrieval import pooled_connection

        with pooled_connection(self.settings) as conn:
            yield conn

    def matrix(self) -> np.ndarray | None:
        """Not available: the vectors stay in the database (use `dense_scores`)."""
        raise StoreError(f"{self.path}: a PostgreSQL store keeps its vectors in the database")

    def has_embeddings(self) -> bool:
        """Whether the store holds vectors (every chunk of a PostgreSQL store has one)."""
        return self.meta.get("dimension") is not None and self.count_documents() > 0

    def embedding_dimension(self) -> int | None:
        """The vector size recorded in the manifest."""
        dimension = self.meta.get("dimension")
        return int(dimension) if dimension is not None else None

    def dense_scores(self, document_ids: Sequence[str], unit: np.ndarray) -> dict[str, float]:
        """Cosine of each chunk with the unit query vector `unit`, computed by the server (one query)."""
        from psycopg import sql

        if not document_ids:
            return {}
        from haygraph.retrieval.postgres.retrieval import vector_literal

        query = sql.SQL("SELECT id, 1 - (embedding <=> %s::vector) FROM {} WHERE id = ANY(%s)").format(
            self._table()
        )
        with self._reading() as conn:
            rows = conn.execute(query, (vector_literal(unit), list(document_ids))).fetchall()
        return {row[0]: float(row[1]) for row in rows}

    def positions(self, document_ids: Sequence[str]) -> list[int | None]:
        """Each chunk's position in the loaded BM25 index (None: not in this version)."""
        index = self._any_index()
        if index is None:
            return [None] * len(document_ids)
        missing = [i for i in document_ids if i not in self._docnos]
        if missing:
            self.remember_docnos(self._docnos_of(missing))
        docnos = [self._docnos.get(i, -1) for i in document_ids]
        return index.position_of(docnos)

    def position(self, document_id: str) -> int | None:
        """The chunk's position in the loaded BM25 index (None: not in this version)."""
        return self.positions([document_id])[0]

    def _docnos_of(self, document_ids: Sequence[str]) -> dict[str, int]:
        from psycopg import sql

        query = sql.SQL("SELECT id, docno FROM {} WHERE id = ANY(%s)").format(self._table())
        with self._reading() as conn:
            return {row[0]: int(row[1]) for row in conn.execute(query, (list(document_ids),)).fetchall()}

    def remember_docnos(self, docnos: dict[str, int]) -> None:
        """Note the document numbers of chunks a retriever returned (the relevance stage looks them up)."""
        if len(self._docnos) + len(docnos) > _REMEMBERED_IDS:
            self._docnos = {}
        self._docnos.update(docnos)

    def fetch(self, docnos: Sequence[int], filters: dict[str, Any] | None = None) -> dict[int, Document]:
        """The chunks with these document numbers that match `filters`, by document number (one query)."""
        from psycopg import sql

        if not docnos:
            return {}
        where, params = _where(filters)
        query = sql.SQL("SELECT id, content, meta, docno FROM {} WHERE docno = ANY(%s)").format(
            self._table()
        ) + (sql.SQL(where) if isinstance(where, str) else where)
        with self._reading() as conn:
            rows = conn.execute(query, (list(docnos), *params)).fetchall()
        found = {int(r[3]): Document(id=r[0], content=r[1], meta=r[2] or {}) for r in rows}
        self.remember_docnos({d.id: n for n, d in found.items()})
        return found

    def matching_docnos(self, filters: dict[str, Any]) -> np.ndarray:
        """Document numbers of every chunk matching `filters` (one scan; for very selective filters)."""
        from psycopg import sql

        where, params = _where(filters)
        query = sql.SQL("SELECT docno FROM {} WHERE TRUE").format(self._table()) + (
            sql.SQL(where) if isinstance(where, str) else where
        )
        with self._reading() as conn:
            rows = conn.execute(query, tuple(params)).fetchall()
        return np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))

    def bm25_index(self, template: BM25Index) -> Any:
        """The BM25 index of `template`'s settings over the newest version's segments (loaded once).

        Loading adopts the newest version of the store (the one the segments belong to).
        """
        key = repr(sorted(template.params().items()))
        index = self._indexes.get(key)
        if index is not None:
            return index
        with self._index_lock:
            index = self._indexes.get(key)
            if index is None:
                segments, dead, saved = self._load_segments()
                index = postings.SegmentIndex(
                    segments, dead, template.tokenizer, template.k1, template.b, template.method
                )
                if saved is not None and str(saved.version) != self.version:
                    self._adopt_manifest(saved)
                self._indexes[key] = index
        return index

    def persist_bm25(self, template: BM25Index) -> None:
        """Nothing to build: each job writes its postings (`save`)."""

    def _any_index(self) -> postings.SegmentIndex | None:
        return next(iter(self._indexes.values()), None)

    def _load_segments(self) -> tuple[list[postings.Segment], np.ndarray, connection.Manifest | None]:
        """The segments (copied to the local cache when new) and tombstones of the newest version."""
        from psycopg import sql

        start = time.perf_counter()
        conn = connection.connect(self.settings, autocommit=False)
        copied = 0
        try:
            with connection.postgres_errors(self.settings):
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                saved = connection.read_manifest(conn, self.settings)
                if saved is None or connection.table_dimension(conn, self.settings) is None:
                    conn.commit()
                    return [], np.empty(0, np.int64), saved
                segs = sql.Identifier(connection.segments_table(self.settings))
                listed = conn.execute(
                    sql.SQL("SELECT seg, bytes, sha256 FROM {} ORDER BY seg").format(segs)
                ).fetchall()
                dead_rows = conn.execute(
                    sql.SQL("SELECT docno FROM {}").format(
                        sql.Identifier(connection.dead_table(self.settings))
                    )
                ).fetchall()
                folder = postings.segment_cache_dir(saved.store_id)
                for seg, size, digest in listed:
                    path = folder / f"{seg}.seg"
                    if _cached(path, int(size), digest, saved.store_id, int(seg)):
                        continue
                    with conn.cursor(binary=True) as cur:
                        data = cur.execute(sql.SQL("SELECT data FROM {} WHERE seg = %s").format(segs), (seg,))
                        postings.write_cached(path, bytes(data.fetchone()[0]), digest)
                    copied += int(size)
                conn.commit()
        finally:
            conn.close()
        keep = {int(row[0]) for row in listed}
        postings.forget_segments(saved.store_id, keep)
        _remove_stale_files(folder, keep)
        segments = [postings.open_segment(saved.store_id, int(s), folder / f"{s}.seg") for s, _, _ in listed]
        dead = np.fromiter((r[0] for r in dead_rows), dtype=np.int64, count=len(dead_rows))
        logger.info(
            "%s version %d: BM25 over %d segments (%.1f MB copied from the database) in %.1f s",
            self.path,
            saved.version,
            len(segments),
            copied / 1e6,
            time.perf_counter() - start,
        )
        return segments, dead, saved

    # -- writing -----------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[EmbeddedDocumentStore]:
        """Hold the store's writer lock (a PostgreSQL advisory lock); on entry, read the newest manifest.

        Re-entrant. A second writer waits up to `lock_timeout` seconds (logged), then `StoreLockedError`.
        This copy holding unsaved changes made on an older version gets `StoreConflictError`. Changes
        not saved when the outermost block ends are rolled back (and this copy can no longer be saved).
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
            job, self._job = self._job, None
            self._conn, self._lock_depth = None, 0
            if job is not None:  # not saved: the server rolls the transaction back with the session
                self._lost = True
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
        if saved is None or str(saved.version) == self.version or self._replace:
            if saved is not None and not self._replace:
                self.store_id = saved.store_id
            return
        if self.dirty:
            raise StoreConflictError(
                f"store {self.path} was saved by another writer (version {saved.version}) after this copy "
                "was "
                f"loaded (version {self.version or 'none'}); its unsaved changes were not written. Fix: "
                "open the store again (KnowledgeBase.open) and repeat the changes, or clear() it to replace "
                "it"
            )
        self._adopt_manifest(saved)
        logger.info("store %s: loaded version %s saved by another writer", self.path, saved.version)

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Queue chunks for the next `save` (sent in batches while a job is open); returns how many.

        With `DuplicatePolicy.OVERWRITE` a chunk replaces the stored one of the same id; otherwise a
        stored id is skipped (NONE, SKIP) or an error (FAIL), as on the embedded store.
        """
        for doc in documents:
            if not isinstance(doc, Document):
                raise StoreError(f"write_documents expects Haystack Documents, got {type(doc).__name__}")
            check_storable(doc)
        if not documents:
            return 0
        if policy != DuplicatePolicy.OVERWRITE:
            stored = set(self._docnos_of([d.id for d in documents])) if self._has_table() else set()
            stored |= {d.id for d in documents if d.id in self._pending}
            if stored and policy == DuplicatePolicy.FAIL:
                raise StoreError(f"document {sorted(stored)[0]!r} already exists")
            documents = [d for d in documents if d.id not in stored]
        for doc in documents:
            self._pending.pop(doc.id, None)  # the newest write of an id wins
            self._pending[doc.id] = (doc, policy)
        self.dirty = self.dirty or bool(documents)
        if self._conn is not None and len(self._pending) >= WRITE_BATCH:
            self._flush()
        return len(documents)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete chunks by id (unknown ids are ignored), at once inside a job, else at the next `save`."""
        for doc_id in document_ids:
            self._pending.pop(doc_id, None)
        self._pending_deletes.update(document_ids)
        self.dirty = True
        if self._conn is not None:
            self._flush()

    def delete_sources(self, keys: set[SourceKey]) -> int:
        """Delete every chunk of these (tenant, source id) sources; returns how many (inside `writing()`)."""
        return self._delete_sources(keys, keep_version=None)

    def drop_stale(self, sources: set[SourceKey], fresh: set[str]) -> int:
        """Delete the chunks of `sources` that this job did not write (edited or removed text).

        `fresh` is not needed here: a chunk this job wrote carries its version.
        """
        job = self._ensure_job()
        return self._delete_sources(sources, keep_version=job.version)

    def _delete_sources(self, keys: set[SourceKey], keep_version: int | None) -> int:
        from psycopg import sql

        if not keys:
            return 0
        self._flush()
        job = self._ensure_job()
        if not job.tables:
            return 0
        by_tenant: dict[str | None, list[str]] = {}
        for tenant, source_id in keys:
            by_tenant.setdefault(tenant, []).append(source_id)
        removed = 0
        for tenant, sources in by_tenant.items():
            condition = "meta->>'source_id' = ANY(%s) AND " + (
                "meta->>'tenant' IS NULL" if tenant is None else "meta->>'tenant' = %s"
            )
            params: list[Any] = [sources] + ([] if tenant is None else [tenant])
            if keep_version is not None:
                condition += " AND version <> %s"
                params.append(keep_version)
            removed += self._delete_where(sql.SQL(condition), params)
        return removed

    def _delete_where(self, condition: Any, params: Sequence[Any]) -> int:
        from psycopg import sql

        job = self._ensure_job()
        query = sql.SQL(
            "WITH gone AS (DELETE FROM {} WHERE {} RETURNING docno) "
            "INSERT INTO {} (docno, version) SELECT docno, %s FROM gone"
        ).format(self._table(), condition, sql.Identifier(connection.dead_table(self.settings)))
        with connection.postgres_errors(self.settings):
            count = self._conn.execute(query, (*params, job.version)).rowcount
        job.documents -= count
        job.deleted += count
        self.dirty = True
        return int(count)

    def source_documents(self, tenant: Any = ANY_TENANT) -> list[Document]:
        """One chunk's meta per source (tenant, source id, file path, hash) of `tenant` or every tenant."""
        from psycopg import sql

        if not self._has_table():
            return []
        condition, params = "TRUE", []
        if tenant is not ANY_TENANT:
            condition = "meta->>'tenant' IS NULL" if tenant is None else "meta->>'tenant' = %s"
            params = [] if tenant is None else [tenant]
        query = sql.SQL(
            "SELECT DISTINCT ON (meta->>'tenant', meta->>'source_id') id, meta->'tenant', "
            "meta->>'source_id', meta->>'file_path', meta->>'source_hash', meta->>'source', meta->>'title', "
            "meta->>'site', meta->>'etag', meta->>'last_modified' "
            "FROM {} WHERE " + condition + " ORDER BY meta->>'tenant', meta->>'source_id', docno"
        ).format(self._table())
        with self._reading() as conn:
            rows = conn.execute(query, tuple(params)).fetchall()
        docs = []
        for doc_id, tenant_value, source_id, file_path, digest, source, title, site, etag, modified in rows:
            meta: dict[str, Any] = {"source_id": source_id}
            for key, value in (
                ("tenant", tenant_value),
                ("file_path", file_path),
                ("source_hash", digest),
                ("source", source),
                ("title", title),
                ("site", site),  # a web page: the crawl it came from, and its conditional-request headers
                ("etag", etag),
                ("last_modified", modified),
            ):
                if value is not None:
                    meta[key] = value
            docs.append(Document(id=doc_id, content="", meta=meta))
        return docs

    def source_summaries(self, filters: dict[str, Any] | None) -> list[dict[str, Any]]:
        """Per source of the chunks matching `filters`: id, tenant, title, chunks, characters, site...

        Also its name, file, when it was indexed; `site` is the crawl a web page came from.
        """
        from psycopg import sql

        if self.version is None:
            return []
        where, params = _where(filters)
        query = (
            sql.SQL(
                "SELECT meta->'tenant', meta->>'source_id', min(meta->>'source'), min(meta->>'title'), "
                "min(meta->>'file_path'), count(*), sum(length(content)), min(meta->>'indexed_at'), "
                "min(meta->>'site') "
                "FROM {} WHERE TRUE"
            ).format(self._table())
            + (sql.SQL(where) if isinstance(where, str) else where)
            + sql.SQL(" GROUP BY 1, 2")
        )
        with self._reading() as conn:
            rows = conn.execute(query, tuple(params)).fetchall()
        return [
            {
                "tenant": tenant,
                "source_id": source_id or "",
                "source": source,
                "title": title,
                "file_path": file_path,
                "chunks": int(chunks),
                "chars": int(chars or 0),
                "indexed_at": indexed_at,
                "site": site,
            }
            for tenant, source_id, source, title, file_path, chunks, chars, indexed_at, site in rows
        ]

    def tenant_counts(self) -> dict[str | None, int]:
        """Chunks per `meta.tenant` (None: without one), one grouped query."""
        from psycopg import sql

        if self.version is None:
            return {}
        query = sql.SQL("SELECT meta->'tenant', count(*) FROM {} GROUP BY 1").format(self._table())
        with self._reading() as conn:
            rows = conn.execute(query).fetchall()
        counts: dict[str | None, int] = {}
        for tenant, count in rows:
            name = tenant if isinstance(tenant, str) else None  # as the service counts them
            counts[name] = counts.get(name, 0) + int(count)
        return counts

    def clear(self) -> None:
        """Forget every chunk; the next `save` replaces the table's content with this copy's."""
        self._pending.clear()
        self._pending_deletes.clear()
        self.meta = {}
        self._count = 0
        self._replace = True
        self.dirty = True

    def save(self, path: str | Path | None = None) -> Path:
        """Send what is pending, write the job's segment, bump the version and commit (one transaction)."""
        if path is not None:
            raise StoreError("a PostgreSQL-backed store is saved to its table; it takes no path")
        if self._lost:
            raise StoreError(
                f"{self.path}: an earlier job on this copy was rolled back; open the store again "
                "(KnowledgeBase.open) and repeat the changes"
            )
        with self.writing():
            start = time.perf_counter()
            with connection.postgres_errors(self.settings):
                self._flush()
                job = self._ensure_job()
                dimension = job.dimension or self.embedding_dimension()
                if not job.tables:
                    if dimension is None:
                        raise StoreError(
                            f"{self.path}: the store has no embeddings to learn the vector size from"
                        )
                    self._create_tables(job, dimension)
                if len(job.builder):
                    self._write_segment(job)
                merged = self._merge_small_segments(job)
                meta = {**self.meta, "dimension": int(job.dimension or dimension or 0)}
                self._write_manifest(job, meta)
                connection.ensure_hnsw(self._conn, self.settings)
                self._conn.execute("COMMIT")
            self._job = None
            logger.info(
                "%s: version %d: wrote %d, deleted %d chunks (%d segment(s) written, %d merged) in %.1f s",
                self.path,
                job.version,
                job.written,
                job.deleted,
                len(job.segments),
                merged,
                time.perf_counter() - start,
            )
            self.meta, self.version, self.store_id = meta, str(job.version), job.store_id
            self._count, self._bound = job.documents, job.next_docno
            self._replace, self.dirty = False, False
            self._indexes = {}
            self.revision += 1
        return Path(self.path or "")

    def _ensure_job(self) -> _Job:
        """The open job; the first call inside `writing()` begins its transaction."""
        if self._job is not None:
            return self._job
        if self._conn is None:
            raise StoreError(f"{self.path}: changes are written inside writing() (KnowledgeBase.writing)")
        conn = self._conn
        with connection.postgres_errors(self.settings):
            connection.ensure_extension(conn, self.settings)
            conn.execute("BEGIN")
            saved = connection.read_manifest(conn, self.settings, for_update=True)
            if saved is not None and str(saved.version) != self.version and not self._replace:
                raise StoreConflictError(
                    f"store {self.path} moved to version {saved.version} while this copy (version "
                    f"{self.version or 'none'}) was being written; nothing was saved — run the command again"
                )
            dimension = connection.table_dimension(conn, self.settings)
            job = _Job(
                version=(saved.version if saved else 0) + 1,
                store_id=saved.store_id if saved else uuid.uuid4().hex,
                next_docno=saved.next_docno if saved else 1,
                next_segment=saved.next_segment if saved else 1,
                documents=saved.documents if saved else 0,
                dimension=dimension,
                builder=postings.SegmentBuilder(self._tokenizer()),
            )
            self._job = job
            if dimension is not None:
                self._create_tables(job, dimension)
            if self._replace and job.tables:
                for name in (connection.segments_table(self.settings), connection.dead_table(self.settings)):
                    conn.execute(f'DELETE FROM "{name}"')  # not TRUNCATE: readers keep their snapshot
                conn.execute(f'DELETE FROM "{self.settings.collection}"')
                job.documents = 0
        return job

    def _tokenizer(self) -> BM25Tokenizer:
        b = self.bm25
        return BM25Tokenizer(b.language, b.stemming, b.stopwords)

    def _create_tables(self, job: _Job, dimension: int) -> None:
        connection.ensure_tables(self._conn, self.settings, dimension)
        self._conn.execute(
            "CREATE TEMP TABLE IF NOT EXISTS haygraph_staging "
            "(id TEXT, embedding vector, content TEXT, meta JSONB, docno BIGINT)"
        )
        job.tables, job.dimension = True, dimension

    def _flush(self) -> None:
        """Send the pending deletions, then the pending chunks, into the open job."""
        if not self._pending and not self._pending_deletes:
            return
        from psycopg import sql

        job = self._ensure_job()
        if self._pending_deletes:
            ids, self._pending_deletes = sorted(self._pending_deletes), set()
            if job.tables:
                self._delete_where(sql.SQL("id = ANY(%s)"), [ids])
        if not self._pending:
            return
        batch = [doc for doc, _ in self._pending.values()]
        self._pending.clear()
        for start in range(0, len(batch), WRITE_BATCH):
            self._send(job, batch[start : start + WRITE_BATCH])

    def _send(self, job: _Job, batch: list[Document]) -> None:
        """One batch: binary COPY into the staging table, tombstones for replaced chunks, one upsert."""
        from psycopg import sql

        sizes = {len(d.embedding) for d in batch if d.embedding is not None}
        missing = any(d.embedding is None for d in batch)
        if missing or len(sizes) != 1:
            raise StoreError(
                f"{self.path}: every chunk written to a PostgreSQL store needs an embedding of one size "
                f"(got sizes {sorted(sizes)}{' and chunks without one' if missing else ''})"
            )
        dimension = sizes.pop()
        if not job.tables:
            self._create_tables(job, dimension)
        if dimension != job.dimension:
            raise StoreError(
                f"{connection.describe(self.settings)}: the table holds {job.dimension}-d vectors, this "
                f"store's embedder makes {dimension}-d ones; use another store.collection or the embedder it "
                "was built with"
            )
        conn = self._conn
        with conn.cursor() as cur:
            with cur.copy(
                "COPY haygraph_staging (id, embedding, content, meta, docno) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["text", "vector", "text", "jsonb", "int8"])
                for doc in batch:
                    content = (doc.content or "").replace("\x00", "")  # PostgreSQL text holds no NUL
                    tenant = doc.meta.get("tenant")
                    job.builder.add(job.next_docno, content, None if tenant is None else str(tenant))
                    copy.write_row(
                        (doc.id, _vector(doc.embedding), content, _jsonb(doc.meta), job.next_docno)
                    )
                    job.next_docno += 1
            table, dead = self._table(), sql.Identifier(connection.dead_table(self.settings))
            replaced = cur.execute(
                sql.SQL(
                    "INSERT INTO {} (docno, version) SELECT t.docno, %s FROM {} t JOIN haygraph_staging s "
                    "ON s.id = t.id"
                ).format(dead, table),
                (job.version,),
            ).rowcount
            cur.execute(
                sql.SQL(
                    "INSERT INTO {} (id, embedding, content, meta, docno, version) SELECT id, embedding, "
                    "content, meta, docno, %s FROM haygraph_staging ON CONFLICT (id) DO UPDATE SET "
                    "embedding = EXCLUDED.embedding, content = EXCLUDED.content, meta = EXCLUDED.meta, "
                    "docno = EXCLUDED.docno, version = EXCLUDED.version"
                ).format(table),
                (job.version,),
            )
            cur.execute("TRUNCATE haygraph_staging")
        job.documents += len(batch) - int(replaced)
        job.written += len(batch)
        if len(job.builder) >= postings.SEGMENT_DOCS:
            self._write_segment(job)

    def _write_segment(self, job: _Job) -> None:
        """Store the job's collected postings as a new segment."""
        docs, blob = len(job.builder), job.builder.build()
        job.builder = postings.SegmentBuilder(self._tokenizer())
        self._insert_segment(job, blob, docs)

    def _insert_segment(self, job: _Job, blob: bytes, docs: int) -> None:
        from psycopg import sql

        seg = job.next_segment
        job.next_segment += 1
        self._conn.execute(
            sql.SQL(
                "INSERT INTO {} (seg, version, docs, bytes, sha256, data) VALUES (%s, %s, %s, %s, %s, %s)"
            ).format(sql.Identifier(connection.segments_table(self.settings))),
            (seg, job.version, docs, len(blob), hashlib.sha256(blob).hexdigest(), blob),
        )
        job.segments.append(seg)

    def _merge_small_segments(self, job: _Job) -> int:
        """Merge the segments of fewer than `_SMALL_SEGMENT` chunks once there are `MERGE_AT` of them."""
        from psycopg import sql

        segs = sql.Identifier(connection.segments_table(self.settings))
        dead = sql.Identifier(connection.dead_table(self.settings))
        small = [
            int(r[0])
            for r in self._conn.execute(
                sql.SQL("SELECT seg FROM {} WHERE docs < %s ORDER BY seg").format(segs), (_SMALL_SEGMENT,)
            ).fetchall()
        ]
        if len(small) < postings.MERGE_AT:
            return 0
        blobs = [
            bytes(r[0])
            for r in self._conn.execute(
                sql.SQL("SELECT data FROM {} WHERE seg = ANY(%s) ORDER BY seg").format(segs), (small,)
            ).fetchall()
        ]
        gone = []
        for blob in blobs:
            docnos = postings.segment_docnos(blob)
            rows = self._conn.execute(
                sql.SQL("SELECT docno FROM {} WHERE docno = ANY(%s)").format(dead), (docnos.tolist(),)
            ).fetchall()
            gone.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        merged, docs = postings.merge(blobs, gone)
        self._conn.execute(sql.SQL("DELETE FROM {} WHERE seg = ANY(%s)").format(segs), (small,))
        all_gone = np.concatenate(gone).tolist() if gone else []
        if all_gone:
            self._conn.execute(sql.SQL("DELETE FROM {} WHERE docno = ANY(%s)").format(dead), (all_gone,))
        self._insert_segment(job, merged, docs)
        return len(small)

    def _write_manifest(self, job: _Job, meta: dict[str, Any]) -> None:
        from psycopg import sql
        from psycopg.types.json import Jsonb

        manifest = sql.Identifier(connection.manifest_table(self.settings))
        self._conn.execute(
            sql.SQL(
                "INSERT INTO {} (id, version, meta, store_id, next_docno, next_segment, documents) "
                "VALUES (1, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "version = EXCLUDED.version, meta = EXCLUDED.meta, next_docno = EXCLUDED.next_docno, "
                "next_segment = EXCLUDED.next_segment, "
                "documents = EXCLUDED.documents, updated_at = now()"
            ).format(manifest),
            (job.version, Jsonb(meta), job.store_id, job.next_docno, job.next_segment, job.documents),
        )

    def _has_table(self) -> bool:
        """Whether the documents table exists (a saved version, or this job created it)."""
        return self.version is not None or (self._job is not None and self._job.tables)

    def _table(self) -> Any:
        from psycopg import sql

        return sql.Identifier(self.settings.collection)

    # -- PostgreSQL --------------------------------------------------------------------------------
    def pgvector(self) -> Any:
        """The `PgvectorDocumentStore` over the table that the dense retriever searches (pooled)."""
        if self._pgvector is None:
            from haygraph.retrieval.postgres.retrieval import pgvector_store

            self._pgvector = pgvector_store(self.settings, int(self.meta.get("dimension") or 384), self)
        return self._pgvector

    def docno_bound(self) -> int:
        """Document numbers of the loaded version are below this (later writes are not seen yet)."""
        return self._bound

    def query_errors(self) -> AbstractContextManager[None]:
        """Translate PostgreSQL failures during a query (unreachable, restarted) into `StoreError`s."""
        return connection.postgres_errors(self.settings)

    def use_bm25(self, bm25: BM25Config) -> None:
        """Adopt the BM25 settings of the (merged) config (the tokenizer the writer uses for postings)."""
        self.bm25 = bm25


def _where(filters: dict[str, Any] | None) -> tuple[Any, tuple[Any, ...]]:
    """Haystack `filters` as `pgvector-haystack`'s SQL condition (`" AND ..."`) and its parameters."""
    if not filters:
        return "", ()
    from haystack_integrations.document_stores.pgvector.filters import (
        _convert_filters_to_where_clause_and_params,
    )

    try:
        return _convert_filters_to_where_clause_and_params(filters, operator="AND")
    except Exception as exc:  # FilterError, ValueError, TypeError on malformed filters
        raise StoreError(f"invalid filters {filters!r}: {exc}") from exc


def _cached(path: Path, size: int, digest: str, store_id: str, seg: int) -> bool:
    """Whether the local copy of a segment is there and whole (its digest checked once per process)."""
    try:
        if path.stat().st_size != size:
            return False
    except OSError:
        return False
    if postings.is_open(store_id, seg):
        return True
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest() == digest


def _remove_stale_files(folder: Path, keep: Iterable[int]) -> None:
    """Delete the cached segments that the newest version no longer has (merged away)."""
    names = {f"{seg}.seg" for seg in keep}
    with contextlib.suppress(OSError):
        for path in folder.glob("*.seg"):
            if path.name not in names:
                path.unlink(missing_ok=True)


def _vector(embedding: Any) -> np.ndarray:
    return np.asarray(embedding, dtype=np.float32)


def _jsonb(meta: dict[str, Any]) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(meta)
