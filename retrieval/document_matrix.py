"""`DocumentMatrix`: documents, their L2-normalized float32 embedding matrix and BM25 indexes, in memory.

It implements the in-memory half of Haystack's DocumentStore protocol (count/filter/write/delete) and
gives our fast retrievers the contiguous matrix and the BM25 index. Saving, loading and the writer lock
are `EmbeddedDocumentStore`'s (`store.py`), which extends it.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import InputError, StoreError
from haygraph.retrieval.sources import ANY_TENANT, SourceKey, source_key

logger = logging.getLogger(__name__)


class DocumentMatrix:
    """Documents with an exact-cosine matrix and bm25s indexes.

    Documents keep their embeddings in one L2-normalized float32 matrix (row i = document i), so
    cosine similarity of a normalized query is a single matrix-vector product.
    """

    def __init__(self) -> None:
        self._docs: list[Document] = []
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray | None] = []
        self._matrix: np.ndarray | None = None
        self._bm25: dict[str, BM25Index] = {}
        self.meta: dict[str, Any] = {}
        """The store meta (its indexing config); saved with the documents."""
        self.revision = 0
        """Incremented on every change of the documents; lets derived copies detect staleness."""
        self.dirty = False
        """True when documents changed since the last load or save."""

    # -- Haystack DocumentStore protocol (in memory) -------------------------------------------------
    def count_documents(self) -> int:
        """Number of documents stored."""
        return len(self._docs)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents matching Haystack-syntax `filters` (all when None), with their embeddings."""
        return [self._with_embedding(i) for i in self.matching_indices(filters)]

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Add documents; duplicates by id are skipped (NONE/SKIP), overwritten, or raise (FAIL).

        Every document is checked first (a Haystack `Document` whose meta can be saved as JSON, see
        `check_storable`), so a bad one changes nothing.
        """
        for doc in documents:
            if not isinstance(doc, Document):
                raise StoreError(f"write_documents expects Haystack Documents, got {type(doc).__name__}")
            check_storable(doc)
        written = 0
        for doc in documents:
            existing = self._index.get(doc.id)
            if existing is not None:
                if policy == DuplicatePolicy.FAIL:
                    raise StoreError(f"document {doc.id!r} already exists")
                if policy != DuplicatePolicy.OVERWRITE:
                    continue
                self._docs[existing] = replace(doc, embedding=None, score=None)
                self._rows[existing] = _normalized(doc.embedding)
            else:
                self._index[doc.id] = len(self._docs)
                self._docs.append(replace(doc, embedding=None, score=None))
                self._rows.append(_normalized(doc.embedding))
            written += 1
        if written:
            self._changed()
        return written

    def delete_documents(self, document_ids: list[str]) -> None:
        """Remove documents by id (unknown ids are ignored)."""
        drop = {self._index[i] for i in document_ids if i in self._index}
        if not drop:
            return
        keep = [i for i in range(len(self._docs)) if i not in drop]
        self._docs = [self._docs[i] for i in keep]
        self._rows = [self._row(i) for i in keep]
        self._index = {d.id: i for i, d in enumerate(self._docs)}
        self._changed()

    # -- fast access for our retrievers ---------------------------------------------------------
    @property
    def documents(self) -> list[Document]:
        """The stored documents (without embeddings), position i = matrix row i."""
        return self._docs

    def document(self, position: int) -> Document:
        """The document at `position`."""
        return self._docs[position]

    def position(self, document_id: str) -> int | None:
        """Matrix row of the document with id `document_id`, or None."""
        return self._index.get(document_id)

    def get(self, document_id: str) -> Document | None:
        """The document with id `document_id`, or None."""
        pos = self._index.get(document_id)
        return None if pos is None else self._docs[pos]

    def matrix(self) -> np.ndarray | None:
        """The (n, dim) L2-normalized float32 embedding matrix; None if no document has an embedding."""
        if self._matrix is None and self._rows:
            rows = self._embedding_rows()
            if rows is None:
                return None
            self._matrix = np.vstack(rows).astype(np.float32, copy=False)
            # the rows become views of the matrix, so the separate row arrays are freed: at 100k chunks
            # keeping both held a second 154 MB copy of every vector
            self._rows = list(self._matrix)
        return self._matrix

    def _embedding_rows(self) -> list[np.ndarray] | None:
        """Every document's row (checked: all present, one width), or None when no document has one."""
        dims = {r.shape[0] for r in self._rows if r is not None}
        if not dims:
            return None
        if len(dims) > 1 or any(r is None for r in self._rows):
            raise StoreError("some documents have no embedding or embeddings of different sizes")
        return self._rows  # type: ignore[return-value]

    def matching_indices(self, filters: dict[str, Any] | None) -> list[int]:
        """Positions of the documents matching `filters` (Haystack filter syntax)."""
        if not filters:
            return list(range(len(self._docs)))
        try:
            return [i for i, d in enumerate(self._docs) if document_matches_filter(filters, d)]
        except Exception as exc:  # Haystack raises FilterError/ValueError on malformed filters
            raise StoreError(f"invalid filters {filters!r}: {exc}") from exc

    def bm25_index(self, template: BM25Index) -> BM25Index:
        """The BM25 index for `template`'s parameters: cached (a saved one comes with `load`) or built now."""
        key = json.dumps(template.params(), sort_keys=True)
        index = self._bm25.get(key)
        if index is None:
            logger.info("building BM25 index over %d documents", len(self._docs))
            index = BM25Index(template.tokenizer, template.k1, template.b, template.method)
            index.build([d.content or "" for d in self._docs])
        self._bm25[key] = index
        return index

    # -- what every store backend answers (a server-backed store with SQL or API calls) ------------
    def has_embeddings(self) -> bool:
        """Whether the documents carry embeddings (dense search and the cosine relevance signal work)."""
        return self.matrix() is not None

    def embedding_dimension(self) -> int | None:
        """The embedding size (None without embeddings)."""
        matrix = self.matrix()
        return None if matrix is None else int(matrix.shape[1])

    def positions(self, document_ids: list[str]) -> list[int | None]:
        """Each document's position (its BM25 score's index), None for an unknown id."""
        return [self._index.get(i) for i in document_ids]

    def dense_scores(self, document_ids: list[str], unit: np.ndarray) -> dict[str, float]:
        """Cosine of each stored document with the L2-normalized query vector `unit`."""
        matrix = self.matrix()
        if matrix is None:
            return {}
        out = {}
        for doc_id in document_ids:
            pos = self._index.get(doc_id)
            if pos is not None:
                out[doc_id] = float(matrix[pos] @ unit)
        return out

    def persist_bm25(self, template: BM25Index) -> None:
        """Build the BM25 index `save` writes with the documents."""
        self.bm25_index(template)

    def source_documents(self, tenant: Any = ANY_TENANT) -> list[Document]:
        """Documents carrying the meta of the sources (the `sources` helpers read it): here all of them."""
        return self._docs

    def delete_sources(self, keys: set[SourceKey]) -> int:
        """Remove every document of these (tenant, source id) sources; returns how many."""
        ids = [d.id for d in self._docs if source_key(d) in keys]
        self.delete_documents(ids)
        return len(ids)

    def drop_stale(self, sources: set[SourceKey], fresh: set[str]) -> int:
        """Remove the documents of `sources` whose ids are not in `fresh` (text edited away); how many."""
        stale = [d.id for d in self._docs if source_key(d) in sources and d.id not in fresh]
        self.delete_documents(stale)
        return len(stale)

    def source_summaries(self, filters: dict[str, Any] | None) -> list[dict[str, Any]]:
        """Per source of the documents matching `filters`: id, tenant, title, chunks, chars, site...

        Also its name, file, when it was indexed; `site` is the crawl a web page came from.
        """
        rows: dict[SourceKey, dict[str, Any]] = {}
        for i in self.matching_indices(filters):
            doc = self._docs[i]
            key = source_key(doc)
            row = rows.get(key)
            if row is None:
                row = rows[key] = {
                    "tenant": doc.meta.get("tenant"),
                    "source_id": key[1],
                    "source": doc.meta.get("source"),
                    "title": doc.meta.get("title"),
                    "file_path": doc.meta.get("file_path"),
                    "chunks": 0,
                    "chars": 0,
                    "indexed_at": doc.meta.get("indexed_at"),
                    "site": doc.meta.get("site"),
                }
            row["chunks"] += 1
            row["chars"] += len(doc.content or "")
        return list(rows.values())

    def tenant_counts(self) -> dict[str | None, int]:
        """Documents per `meta.tenant` (None: without one)."""
        counts: dict[str | None, int] = {}
        for doc in self._docs:
            tenant = doc.meta.get("tenant")
            name = tenant if isinstance(tenant, str) else None  # as the service counts them
            counts[name] = counts.get(name, 0) + 1
        return counts

    # -- internals -------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.revision += 1
        self.dirty = True
        self._matrix = None
        self._bm25.clear()

    def _reset(self) -> None:
        self._docs, self._index, self._rows, self.meta = [], {}, [], {}
        self._changed()

    def _row(self, i: int) -> np.ndarray | None:
        return self._rows[i]

    def _with_embedding(self, i: int) -> Document:
        row = self._rows[i]
        return replace(self._docs[i], embedding=None if row is None else row.tolist())


def _normalized(embedding: list[float] | np.ndarray | None) -> np.ndarray | None:
    """`embedding` as an L2-normalized float32 row.

    A float32 array that is already unit length (what `CachedDocumentEmbedder` emits) is kept as it is,
    not copied: the write path then holds each vector once (at 100k chunks a copy is 154 MB).
    """
    if embedding is None:
        return None
    vec = np.asarray(embedding, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    if norm == 0 or abs(norm - 1.0) < 1e-6:
        return vec
    return vec / norm


def check_storable(doc: Document) -> None:
    """Raise `InputError` naming the document and key when `doc.meta` cannot be saved as JSON."""
    if not isinstance(doc.meta, dict):
        raise InputError(f"document {doc.id!r}: meta must be a dict, got {type(doc.meta).__name__}")
    for key, value in doc.meta.items():
        if not isinstance(key, str):
            raise InputError(f"document {_doc_name(doc)}: meta key {key!r} is not a string")
        try:
            json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InputError(
                f"document {_doc_name(doc)}: meta[{key!r}] holds a {type(value).__name__} value that cannot "
                f"be saved as JSON ({exc}); use strings, numbers, booleans, None, or lists/dicts of them"
            ) from exc


def _doc_name(doc: Document) -> str:
    source = doc.meta.get("source_id") if isinstance(doc.meta, dict) else None
    return f"{doc.id!r} (source {source!r})" if source is not None else repr(doc.id)
