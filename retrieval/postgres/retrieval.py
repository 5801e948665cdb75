"""The retrieval stages of a query pipeline over a PostgreSQL store (called by `build_query_pipeline`).

bm25:   bm25 (PostgresBM25Retriever: the store's postings segments scored in the process)
dense:  [text_embedder] -> dense (PgvectorEmbeddingRetriever) -> dense_scores
hybrid: both, then our `HybridFusion`.

Filters (tenancy included) go to `PgvectorEmbeddingRetriever`, which turns Haystack's filter syntax into
SQL conditions on ``meta``; the BM25 side reads its hits with the same SQL conditions.

`PooledPgvectorStore` is `pgvector-haystack`'s `PgvectorDocumentStore` with one change: a query borrows a
connection from a `psycopg_pool.ConnectionPool` instead of sharing the store's single connection and
cursor. A service answers requests in several threads at once, and the shared cursor is not safe for
that (one thread's `execute` replaces the rows another is fetching); the pool also checks a connection
before lending it, so a server that is down fails the request within the pool's timeout instead of
hanging. The SQL and the conversion of rows to documents are the integration's own.

Recovery after an outage: `psycopg_pool` retries a failed connection with a delay that doubles (1, 2, 4,
... s) until `reconnect_timeout`, and while such retries hold every slot of the pool, requests wait for
them instead of connecting. With the library's default (300 s) a 70 s outage left the pool waiting up to
a minute after the server was back. The pools here give up a retry chain after `RECONNECT_TIMEOUT_S`
(so the delay between attempts never exceeds about 1 s); the next request then starts a fresh chain whose
first attempt is immediate. Requests succeed again within about a second of the server's return, however
long it was away.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any, Literal

import numpy as np
from haystack import Document, Pipeline

from haygraph.retrieval.config import QueryConfig, RetrievalConfig, StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreError
from haygraph.retrieval.pipelines import bm25_settings, hybrid_fusion
from haygraph.retrieval.postgres import connection
from haygraph.retrieval.postgres.bm25 import PostgresBM25Retriever
from haygraph.retrieval.qdrant.scores import RetrieverScores

logger = logging.getLogger(__name__)

POOL_SIZE = 4
"""Connections a process keeps per store for queries (a request holds one for one SQL statement)."""
RECONNECT_TIMEOUT_S = 2.0
"""How long the pool retries one failed connection before giving up (the next request starts afresh)."""
PING_TIMEOUT_S = 2.0
"""Longest wait of a readiness probe (`ping`) for a connection."""


def pgvector_store(settings: StoreConfig, dimension: int, catalog: Any = None) -> Any:
    """The `PgvectorDocumentStore` (pooled) that the dense retriever searches.

    With `catalog` (the `PostgresStore` whose version this process serves), only chunks of that version
    are searched (document numbers below its bound): a chunk written by another process since is found
    once this process has loaded the new version, together with its BM25 side, so one query never mixes
    versions.
    """
    from haystack.utils import Secret
    from haystack_integrations.document_stores.pgvector import PgvectorDocumentStore

    class PooledPgvectorStore(PgvectorDocumentStore):  # type: ignore[misc]
        """`PgvectorDocumentStore` whose embedding queries run on pooled connections (module docstring)."""

        def __init__(self, settings: StoreConfig, dimension: int) -> None:
            super().__init__(
                connection_string=Secret.from_token(connection.conninfo(settings)),
                create_extension=False,
                table_name=settings.collection,
                embedding_dimension=dimension,
                vector_function="cosine_similarity",
                search_strategy="exact_nearest_neighbor",  # the HNSW index is built by the store's writer
                keyword_index_name=f"{settings.collection}_keyword",
            )
            self.settings = settings
            self.catalog = catalog

        def _embedding_retrieval(
            self,
            query_embedding: list[float],
            *,
            filters: dict[str, Any] | None = None,
            top_k: int = 10,
            vector_function: Literal["cosine_similarity", "inner_product", "l2_distance"] | None = None,
        ) -> list[Document]:
            return dense_search(
                self.settings, self.embedding_dimension, query_embedding, filters, top_k, self.catalog
            )

    return PooledPgvectorStore(settings, dimension)


def dense_search(
    settings: StoreConfig,
    dimension: int,
    query_embedding: list[float],
    filters: dict[str, Any] | None,
    top_k: int,
    catalog: Any = None,
) -> list[Document]:
    """The `top_k` chunks nearest to `query_embedding` (cosine) matching `filters`, scored by cosine.

    The SQL is the integration's (its filter translation, ``1 - (embedding <=> q)`` as the score), with
    two changes: the vector column is not fetched (nothing after retrieval reads it, and converting 100
    vectors per query was most of the dense side's time), and exact search orders by the score, which no
    index can serve, so it scans even where an HNSW index exists; `search: hnsw` orders by the distance
    operator, which the index serves.
    """
    from haystack_integrations.document_stores.pgvector.filters import (
        _convert_filters_to_where_clause_and_params,
    )
    from psycopg import sql

    if not query_embedding:
        raise ValueError("query_embedding must be a non-empty list of floats")
    if len(query_embedding) != dimension:
        raise ValueError(
            f"query_embedding dimension ({len(query_embedding)}) does not match the store's embedding "
            f"dimension ({dimension})."
        )
    vector = vector_literal(query_embedding)
    where: Any = sql.SQL("")
    params: tuple[Any, ...] = ()
    if filters:
        where, params = _convert_filters_to_where_clause_and_params(filters, operator="AND")
    bound = catalog.docno_bound() if catalog is not None else None
    order = "embedding <=> %s::vector" if settings.search == "hnsw" else "score DESC"
    query = (
        sql.SQL(
            "SELECT id, content, meta, docno, 1 - (embedding <=> %s::vector) AS score FROM {} WHERE "
        ).format(sql.Identifier(settings.collection))
        + sql.SQL("docno < %s" if bound is not None else "TRUE")
        + where
        + sql.SQL(f" ORDER BY {order} LIMIT %s")
    )
    args = (vector, *((bound,) if bound is not None else ()), *params)
    args = (*args, vector, top_k) if settings.search == "hnsw" else (*args, top_k)
    with pooled_connection(settings) as conn:
        rows = conn.execute(query, args).fetchall()
    docs = [Document(id=r[0], content=r[1], meta=r[2] or {}, score=float(r[4])) for r in rows]
    if catalog is not None:
        catalog.remember_docnos({r[0]: int(r[3]) for r in rows})
    return docs


def vector_literal(values: Any) -> str:
    """A vector as pgvector's text form, ``[0.1,0.2,...]`` (float32 values, written exactly)."""
    return "[" + ",".join(str(x) for x in np.asarray(values, dtype=np.float32).tolist()) + "]"


@contextmanager
def pooled_connection(settings: StoreConfig) -> Iterator[Any]:
    """A connection of the process's query pool for `settings` (waits at most the pool's timeout).

    Raises:
        StoreError: no connection within the wait (the server is down), or a PostgreSQL failure.

    """
    from psycopg_pool import PoolTimeout

    pool = pool_for(settings)
    try:
        with connection.postgres_errors(settings), pool.connection() as conn:
            yield conn
    except PoolTimeout as exc:
        raise StoreError(
            f"{connection.describe(settings)}: no connection to PostgreSQL within {pool.timeout:.0f} s "
            f"({exc}); check that the server is running"
        ) from exc


def pool_for(settings: StoreConfig) -> Any:
    """The process' connection pool for queries on `settings`' store (created on first use, then shared).

    Every version a serving process loads gets a new `PostgresStore`; they share this pool, so reloads
    open no new connections. Connections are set up for the store's search: `hnsw.ef_search` and
    iterative scans for HNSW (exact search needs nothing: it orders by the score, see `dense_search`).
    """
    from psycopg_pool import ConnectionPool

    key = (connection.conninfo(settings), settings.search, settings.hnsw_ef_search, settings.timeout)
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None:
            pool = ConnectionPool(
                key[0],
                min_size=1,
                max_size=POOL_SIZE,
                timeout=min(float(settings.timeout), 3.0),
                configure=partial(_configure, settings),
                check=ConnectionPool.check_connection,
                reconnect_timeout=RECONNECT_TIMEOUT_S,
                open=False,
                name=f"haygraph-{settings.collection}",
            )
            pool.open(wait=False)
            _POOLS[key] = pool
    return pool


def ping(settings: StoreConfig, timeout: float = PING_TIMEOUT_S) -> None:
    """Run ``SELECT 1`` on a connection of the query pool (the readiness probe; `timeout` for a connection).

    Raises:
        StoreError: PostgreSQL cannot be reached (no connection within `timeout`, or the query failed).

    """
    from psycopg_pool import PoolTimeout

    pool = pool_for(settings)
    try:
        with connection.postgres_errors(settings), pool.connection(timeout=timeout) as conn:
            conn.execute("SELECT 1").fetchone()
    except PoolTimeout as exc:
        raise StoreError(
            f"{connection.describe(settings)}: no connection to PostgreSQL within {timeout:g} s; check that "
            "the server is running"
        ) from exc


def pool_stats() -> dict[str, int]:
    """The query pools' counters summed (`psycopg_pool`'s `get_stats` names: connections_num, ...)."""
    totals: dict[str, int] = {}
    with _POOLS_LOCK:
        pools = list(_POOLS.values())
    for pool in pools:
        for name, value in pool.get_stats().items():
            totals[name] = totals.get(name, 0) + int(value)
    return totals


def close_pools() -> None:
    """Close every query pool of this process (tests; a new one opens on the next query)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


def _configure(settings: StoreConfig, conn: Any) -> None:
    conn.autocommit = True  # vectors travel as text ('[...]'::vector), so no type needs registering
    conn.execute(f"SET statement_timeout = {int(settings.timeout * 1000)}")
    if settings.search == "hnsw":
        conn.execute(f"SET hnsw.ef_search = {int(settings.hnsw_ef_search)}")
        # pgvector >= 0.8: keep scanning the graph until a filtered query (a tenant) has its k rows
        conn.execute("SET hnsw.iterative_scan = relaxed_order")


_POOLS: dict[tuple[Any, ...], Any] = {}
_POOLS_LOCK = threading.Lock()
atexit.register(close_pools)


def add_postgres_retrieval(
    pipe: Pipeline, config: RetrievalConfig, store: Any, q: QueryConfig, *, candidates: int, head_k: int
) -> str:
    """Add the retrievers (and the fusion in hybrid mode) to `pipe`; return the last stage's name."""
    from haystack_integrations.components.retrievers.pgvector import PgvectorEmbeddingRetriever

    from haygraph.retrieval.postgres.store import PostgresStore

    if not isinstance(store, PostgresStore):
        raise ConfigError(
            "store.backend is postgres but the pipeline was given another store; open the knowledge base "
            "with the postgres config (KnowledgeBase.open(None, config))"
        )
    if config.bm25.backend != "bm25s" or config.dense.backend != "numpy":
        raise ConfigError(
            "bm25.backend and dense.backend choose the embedded store's retrievers; with store.backend "
            "postgres leave them at their defaults (bm25s, numpy)"
        )
    if q.mode in ("bm25", "hybrid"):
        k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component(
            "bm25", PostgresBM25Retriever(document_store=store, top_k=k, **bm25_settings(config))
        )
    if q.mode in ("dense", "hybrid"):
        k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component("dense", PgvectorEmbeddingRetriever(document_store=store.pgvector(), top_k=k))
        pipe.add_component(
            "dense_scores", RetrieverScores(kind="dense", scale_score=q.mode == "dense" and q.cut.enabled)
        )
        pipe.connect("dense.documents", "dense_scores.documents")
    if q.mode == "bm25":
        return "bm25"
    if q.mode == "dense":
        return "dense_scores"
    pipe.add_component("fusion", hybrid_fusion(config, q, head_k))
    pipe.connect("bm25.documents", "fusion.bm25_documents")
    pipe.connect("dense_scores.documents", "fusion.dense_documents")
    return "fusion"
