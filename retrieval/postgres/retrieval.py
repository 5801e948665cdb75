"""The retrieval stages of a query pipeline over a PostgreSQL store (called by `build_query_pipeline`).

bm25:   bm25 (FastBM25Retriever over the in-process catalog: bm25s, jieba for Chinese)
dense:  [text_embedder] -> dense (PgvectorEmbeddingRetriever) -> dense_scores
hybrid: both, then our `HybridFusion`.

Filters (tenancy included) go to `PgvectorEmbeddingRetriever`, which turns Haystack's filter syntax into
SQL conditions on ``meta``; the BM25 side applies the same filters to the catalog.

`PooledPgvectorStore` is `pgvector-haystack`'s `PgvectorDocumentStore` with one change: a query borrows a
connection from a `psycopg_pool.ConnectionPool` instead of sharing the store's single connection and
cursor. A service answers requests in several threads at once, and the shared cursor is not safe for
that (one thread's `execute` replaces the rows another is fetching); the pool also checks a connection
before lending it, so a restarted server is reconnected to by the next request, and a server that is
down fails the request within `pool_timeout` seconds instead of hanging. The SQL and the conversion of
rows to documents are the integration's own.
"""

from __future__ import annotations

import atexit
import logging
import threading
from functools import partial
from typing import Any, Literal

from haystack import Document, Pipeline

from haygraph.retrieval.config import QueryConfig, RetrievalConfig, StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreError
from haygraph.retrieval.pipelines import add_bm25_retriever, hybrid_fusion
from haygraph.retrieval.postgres import connection
from haygraph.retrieval.qdrant.scores import RetrieverScores

logger = logging.getLogger(__name__)

POOL_SIZE = 4
"""Connections a process keeps per store for queries (a request holds one for one SQL statement)."""


def pgvector_store(settings: StoreConfig, dimension: int, catalog: Any = None) -> Any:
    """The `PgvectorDocumentStore` (pooled) that the dense retriever searches.

    With `catalog` (the `PostgresStore` whose version this process serves), rows that are not in that
    version are dropped from the results: a chunk written by another process since is found once this
    process has loaded the new version, together with its BM25 side, so one query never mixes versions.
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

        def pool(self) -> Any:
            return pool_for(self.settings)

        def _embedding_retrieval(
            self,
            query_embedding: list[float],
            *,
            filters: dict[str, Any] | None = None,
            top_k: int = 10,
            vector_function: Literal["cosine_similarity", "inner_product", "l2_distance"] | None = None,
        ) -> list[Document]:
            from haystack_integrations.document_stores.pgvector.converters import (
                _from_pg_to_haystack_documents,
            )
            from psycopg.rows import dict_row
            from psycopg_pool import PoolTimeout

            sql_query, params = self._check_and_build_embedding_retrieval_query(
                query_embedding=query_embedding, vector_function=vector_function, top_k=top_k, filters=filters
            )
            try:
                with self.pool().connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                    records = cur.execute(sql_query, params).fetchall()
            except PoolTimeout as exc:
                raise StoreError(
                    f"{connection.describe(self.settings)}: no connection to PostgreSQL within "
                    f"{self.pool().timeout:.0f} s ({exc}); check that the server is running"
                ) from exc
            docs = list(_from_pg_to_haystack_documents(records))
            if self.catalog is not None:
                docs = [d for d in docs if self.catalog.position(d.id) is not None]
            return docs

    return PooledPgvectorStore(settings, dimension)


def pool_for(settings: StoreConfig) -> Any:
    """The process' connection pool for queries on `settings`' store (created on first use, then shared).

    Every version a serving process loads gets a new `PostgresStore`; they share this pool, so reloads
    open no new connections. Connections are set up for the store's search: `hnsw.ef_search` and
    iterative scans for HNSW, index scans off for exact search.
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
                open=False,
                name=f"haygraph-{settings.collection}",
            )
            pool.open(wait=False)
            _POOLS[key] = pool
    return pool


def close_pools() -> None:
    """Close every query pool of this process (tests; a new one opens on the next query)."""
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.close()
        _POOLS.clear()


def _configure(settings: StoreConfig, conn: Any) -> None:
    from pgvector.psycopg import register_vector

    conn.autocommit = True
    register_vector(conn)
    conn.execute(f"SET statement_timeout = {int(settings.timeout * 1000)}")
    if settings.search == "hnsw":
        conn.execute(f"SET hnsw.ef_search = {int(settings.hnsw_ef_search)}")
        # pgvector >= 0.8: keep scanning the graph until a filtered query (a tenant) has its k rows
        conn.execute("SET hnsw.iterative_scan = relaxed_order")
    else:
        conn.execute("SET enable_indexscan = off")  # exact: never the HNSW index, even if built


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
        add_bm25_retriever(pipe, config, store, candidates if q.mode == "hybrid" else head_k)
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
