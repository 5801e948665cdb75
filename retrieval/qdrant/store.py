"""`QdrantStore`: the store of a Qdrant-backed `KnowledgeBase` — a Qdrant collection plus a local catalog.

Retrieval (BM25 as IDF-weighted sparse vectors, dense vectors, filters, tenancy) runs in Qdrant through
`qdrant-haystack`'s retrievers. The process also keeps a catalog of the documents (the
`CatalogStore` this class extends, never written to disk): the lifecycle code of
`KnowledgeBase` (incremental indexing, removal by source, tenant-aware deduplication) and the
relevance stage (its BM25 coverage signals and the cosine of BM25-only hits) read it. It is loaded from
the collection by `open` and kept in step by `save`, which pushes the documents written and deleted since
the last save to Qdrant and then the manifest (the config, the BM25 statistics and the sparse vocabulary).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack import Document

from haygraph.retrieval.catalog_store import CatalogStore
from haygraph.retrieval.config import BM25Config, StoreConfig
from haygraph.retrieval.errors import StoreError, StoreNotFoundError
from haygraph.retrieval.qdrant import connection
from haygraph.retrieval.qdrant.sparse import SPARSE_VOCABULARY, BM25SparseDocumentEmbedder, average_length
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.tokenize import BM25Tokenizer

logger = logging.getLogger(__name__)

_WRITE_BATCH = 256


class QdrantStore(CatalogStore):
    """A Qdrant collection (`qdrant`) with the process-local catalog `KnowledgeBase` reads."""

    def __init__(self, settings: StoreConfig, bm25: BM25Config | None = None) -> None:
        """Describe the target; nothing is connected until `open`, `save` or `qdrant` is called."""
        super().__init__()
        self.settings = settings
        self.bm25 = bm25 or BM25Config()
        self.path = connection.describe(settings)
        self._qdrant: Any = None

    # -- the catalog -------------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[EmbeddedDocumentStore]:
        """Before the first change, load the collection's existing content (as the embedded store catches up).

        There is no lock: Qdrant applies each write per point; run one writer per collection.
        """
        if self.version is None and not self.dirty and connection.collection_exists(self.settings):
            opened = QdrantStore.open(self.settings, self.bm25)
            self._adopt(opened)
            self._qdrant = opened._qdrant
        yield self

    # -- Qdrant ------------------------------------------------------------------------------------
    def qdrant(self) -> Any:
        """The `QdrantDocumentStore` over the collection (sharing the process' client for the target)."""
        if self._qdrant is None:
            from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

            matrix = self.matrix()
            store = QdrantDocumentStore(
                index=self.settings.collection,
                location=":memory:",  # never used: the shared client is set below
                embedding_dim=int(matrix.shape[1]) if matrix is not None else 384,
                use_sparse_embeddings=True,
                sparse_idf=True,
                similarity="cosine",
                progress_bar=False,
                write_batch_size=_WRITE_BATCH,
                timeout=self.settings.timeout,
            )
            # The collection is set up (and checked) by `connection.ensure_collection`; giving the store the
            # shared client skips its own set-up, which would not add the payload indexes.
            store._client = connection.client_for(self.settings)
            self._qdrant = store
        return self._qdrant

    def query_errors(self) -> AbstractContextManager[None]:
        """Translate Qdrant failures during a query (unreachable, key refused) into `StoreError`s."""
        return connection.qdrant_errors(self.settings)

    def save(self, path: str | Path | None = None) -> Path:
        """Push the documents written and deleted since the last save, then the manifest."""
        if path is not None:
            raise StoreError("a Qdrant-backed store is saved to its collection; it takes no path")
        matrix = self.matrix()
        dimension = int(matrix.shape[1]) if matrix is not None else self.meta.get("dimension")
        connection.ensure_collection(self.settings, dimension)
        sparse = self._sparse_settings()
        embedder = BM25SparseDocumentEmbedder(
            avgdl=sparse["avgdl"],
            language=self.bm25.language,
            stemming=self.bm25.stemming,
            stopwords=self.bm25.stopwords,
            k1=self.bm25.k1,
            b=self.bm25.b,
        )
        qdrant = self.qdrant()
        written, deleted = self.pending()
        with connection.qdrant_errors(self.settings):
            for start in range(0, len(written), _WRITE_BATCH):
                batch = embedder.run(written[start : start + _WRITE_BATCH])["documents"]
                qdrant._client.upsert(self.settings.collection, points=to_points(batch), wait=True)
            if deleted:
                qdrant.delete_documents(deleted)
        self.meta["sparse"] = sparse
        if dimension is not None:
            self.meta["dimension"] = dimension
        connection.write_manifest(self.settings, self.meta)
        logger.info("%s: wrote %d, deleted %d documents", self.path, len(written), len(deleted))
        self._saved()
        return Path(self.path or "")

    def _sparse_settings(self) -> dict[str, Any]:
        """The collection's BM25 statistics and vocabulary: the saved ones, or new ones from the catalog."""
        saved = self.meta.get("sparse")
        wanted = self._sparse_params()
        if saved:
            check_sparse(saved, wanted, self.path or "")
            return dict(saved)
        tokenizer = BM25Tokenizer(self.bm25.language, self.bm25.stemming, self.bm25.stopwords)
        return {**wanted, "avgdl": average_length(tokenizer, [d.content or "" for d in self._docs])}

    def _sparse_params(self) -> dict[str, Any]:
        b = self.bm25
        return {
            "vocabulary": SPARSE_VOCABULARY,
            "language": b.language,
            "stemming": b.stemming,
            "stopwords": b.stopwords,
            "k1": b.k1,
            "b": b.b,
        }

    @classmethod
    def open(cls, settings: StoreConfig, bm25: BM25Config | None = None) -> QdrantStore:
        """Load the catalog and manifest of an existing collection.

        Raises:
            StoreNotFoundError: no such collection (or no haygraph manifest in it).
            StoreError: the target is unreachable, refuses the API key, or the collection does not fit.

        """
        if not connection.collection_exists(settings):
            raise StoreNotFoundError(
                f"{connection.describe(settings)}: no haygraph collection there; create it with "
                "`haygraph index --config CONFIG PATHS` or `haygraph store copy --from DIR --to CONFIG`"
            )
        store = cls(settings, bm25)
        store.meta = connection.read_manifest(settings)
        connection.check_collection(settings, store.meta.get("dimension"))
        with connection.qdrant_errors(settings):
            docs = store.qdrant().filter_documents()
        EmbeddedDocumentStore.write_documents(store, [replace(d, score=None) for d in docs])
        store.version, store.dirty = "qdrant", False
        return store

    def use_bm25(self, bm25: BM25Config) -> None:
        """Adopt the BM25 settings of the (merged) config; they must match the collection's sparse vectors."""
        self.bm25 = bm25
        saved = self.meta.get("sparse")
        if saved:
            check_sparse(saved, self._sparse_params(), self.path or "")


def check_sparse(saved: dict[str, Any], wanted: dict[str, Any], where: str) -> None:
    """Raise `StoreError` when the sparse vectors were made with another vocabulary or BM25 setting."""
    for key, value in wanted.items():
        if saved.get(key) != value:
            raise StoreError(
                f"{where}: the collection's sparse vectors were made with {key}={saved.get(key)!r}, "
                f"this config uses {value!r}; use the bm25 settings it was built with, or copy the store "
                "into a new store.collection"
            )


def to_points(documents: list[Document]) -> list[Any]:
    """Qdrant points for `documents`, exactly as `QdrantDocumentStore.write_documents` makes them, faster.

    qdrant-haystack converts each document with `Document.to_dict`, whose `dataclasses.asdict` copies
    every float of the dense and sparse vectors one by one: 45% of the time of pushing 2,000 SciFact
    documents to local mode (measured with cProfile). Here the payload comes from the same converter
    applied to the document without its vectors, and the vectors are attached as they are.
    """
    from haystack_integrations.document_stores.qdrant.converters import (
        convert_haystack_documents_to_qdrant_points,
    )
    from qdrant_client import models

    bare = [replace(d, embedding=None, sparse_embedding=None) for d in documents]
    points = convert_haystack_documents_to_qdrant_points(bare, use_sparse_embeddings=True)
    for point, doc in zip(points, documents, strict=True):
        vector: dict[str, Any] = {}
        if doc.embedding is not None:
            vector[connection.DENSE] = list(doc.embedding)
        if doc.sparse_embedding is not None:
            sparse = doc.sparse_embedding
            vector[connection.SPARSE] = models.SparseVector(
                indices=list(sparse.indices), values=list(sparse.values)
            )
        point.vector = vector
    return points
