"""The embedded document store: documents, a float32 embedding matrix and a BM25 index, persisted.

It implements Haystack's DocumentStore protocol (count/filter/write/delete, to_dict/from_dict) so stock
components such as DocumentWriter work with it, and it exposes the contiguous matrix and BM25 index
that our fast retrievers need. Saving is atomic: a new version directory is written completely, then
a `CURRENT` pointer file is replaced with `os.replace`, so a crash mid-write leaves the previous index
intact.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import CorruptStoreError, StoreError, StoreNotFoundError

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
_CURRENT = "CURRENT"
_DESERIALIZED: dict[tuple[str, str], EmbeddedDocumentStore] = {}


class EmbeddedDocumentStore:
    """In-process document store with an exact-cosine matrix and a bm25s index, saved to a directory.

    Documents keep their embeddings in one L2-normalized float32 matrix (row i = document i), so
    cosine similarity of a normalized query is a single matrix-vector product.
    """

    def __init__(self, path: str | None = None) -> None:
        """Create an empty store; `path` is where `save()` writes and what `to_dict()` records."""
        self.path = path
        self._docs: list[Document] = []
        self._index: dict[str, int] = {}
        self._rows: list[np.ndarray | None] = []
        self._matrix: np.ndarray | None = None
        self._bm25: dict[str, BM25Index] = {}
        self._saved_bm25_dir: Path | None = None
        self.meta: dict[str, Any] = {}
        self.version_dir: Path | None = None
        """The version directory last saved or loaded (its manifest.json holds `meta`); None in memory."""
        self.revision = 0
        """Incremented on every change of the documents; lets derived copies detect staleness."""

    # -- Haystack DocumentStore protocol -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Serialize as a reference to the store directory."""
        return default_to_dict(self, path=self.path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedDocumentStore:
        """Load the store saved at the serialized path (an empty store if there is none yet)."""
        path = data.get("init_parameters", {}).get("path")
        if path and (Path(path) / _CURRENT).is_file():
            key = (str(Path(path).resolve()), (Path(path) / _CURRENT).read_text(encoding="utf-8").strip())
            if key not in _DESERIALIZED:  # several components of one pipeline share one loaded store
                _DESERIALIZED[key] = cls.load(path)
            return _DESERIALIZED[key]
        return default_from_dict(cls, data)

    def count_documents(self) -> int:
        """Number of documents stored."""
        return len(self._docs)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Documents matching Haystack-syntax `filters` (all when None), with their embeddings."""
        return [self._with_embedding(i) for i in self.matching_indices(filters)]

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Add documents; duplicates by id are skipped (NONE/SKIP), overwritten, or raise (FAIL)."""
        written = 0
        for doc in documents:
            if not isinstance(doc, Document):
                raise StoreError(f"write_documents expects Haystack Documents, got {type(doc).__name__}")
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
            dims = {r.shape[0] for r in self._rows if r is not None}
            if not dims:
                return None
            if len(dims) > 1 or any(r is None for r in self._rows):
                raise StoreError("some documents have no embedding or embeddings of different sizes")
            self._matrix = np.vstack(self._rows).astype(np.float32, copy=False)  # type: ignore[arg-type]
        return self._matrix

    def matching_indices(self, filters: dict[str, Any] | None) -> list[int]:
        """Positions of the documents matching `filters` (Haystack filter syntax)."""
        if not filters:
            return list(range(len(self._docs)))
        try:
            return [i for i, d in enumerate(self._docs) if document_matches_filter(filters, d)]
        except Exception as exc:  # Haystack raises FilterError/ValueError on malformed filters
            raise StoreError(f"invalid filters {filters!r}: {exc}") from exc

    def bm25_index(self, template: BM25Index) -> BM25Index:
        """The BM25 index for `template`'s parameters: cached, loaded from disk, or built now."""
        key = json.dumps(template.params(), sort_keys=True)
        index = self._bm25.get(key)
        if index is None and self._saved_bm25_dir is not None:
            try:
                index = BM25Index.load(self._saved_bm25_dir, template.params())
            except Exception as exc:  # a damaged saved index is only a cache: rebuild it from the documents
                logger.warning("saved BM25 index %s unreadable (%s); rebuilding", self._saved_bm25_dir, exc)
                index = None
            if index is not None and index.num_docs != len(self._docs):
                index = None
        if index is None:
            logger.info("building BM25 index over %d documents", len(self._docs))
            index = BM25Index(template.tokenizer, template.k1, template.b, template.method)
            index.build([d.content or "" for d in self._docs])
        self._bm25[key] = index
        return index

    # -- persistence -----------------------------------------------------------------------------
    def save(self, path: str | Path | None = None) -> Path:
        """Write the store to `path` (or its own path) atomically and return the directory."""
        if not (path or self.path):  # Path("") is ".": never write into the working directory by accident
            raise StoreError("no path given to save the store to")
        target = Path(path or self.path or "")
        target.mkdir(parents=True, exist_ok=True)
        version = f"v-{uuid.uuid4().hex[:12]}"
        tmp = target / f".tmp-{version}"
        try:
            tmp.mkdir()
            with (tmp / "documents.jsonl").open("w", encoding="utf-8") as fh:
                for doc in self._docs:
                    fh.write(json.dumps(_doc_to_json(doc), ensure_ascii=False) + "\n")
            matrix = self.matrix()
            if matrix is not None:
                np.save(tmp / "embeddings.npy", matrix)
            for index in self._bm25.values():  # the most recently used index is saved
                index.save(tmp / "bm25")
            manifest = {
                "format": FORMAT_VERSION,
                "count": len(self._docs),
                "meta": self.meta,
                "dim": None if matrix is None else int(matrix.shape[1]),
            }
            (tmp / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
            os.replace(tmp, target / version)
            pointer = target / f".{_CURRENT}.tmp"
            pointer.write_text(version, encoding="utf-8")
            with pointer.open("rb") as fh:
                os.fsync(fh.fileno())
            os.replace(pointer, target / _CURRENT)
        except BaseException as exc:  # any failure (not only OSError) must leave no half-written version
            shutil.rmtree(tmp, ignore_errors=True)
            if isinstance(exc, OSError):
                raise StoreError(f"cannot write store to {target}: {exc.strerror or exc}") from exc
            raise
        for old in target.glob("v-*"):
            if old.name != version:
                shutil.rmtree(old, ignore_errors=True)
        self.path = str(target)
        self.version_dir = target / version
        self._saved_bm25_dir = target / version / "bm25"
        return target

    @classmethod
    def load(cls, path: str | Path) -> EmbeddedDocumentStore:
        """Load a store saved with `save()`; missing or corrupt directories raise clear errors."""
        root = Path(path)
        if not root.is_dir():
            raise StoreNotFoundError(
                f"store directory {root} does not exist (create it with `haygraph index`)"
            )
        pointer = root / _CURRENT
        if not pointer.is_file():
            raise StoreNotFoundError(f"{root} holds no haygraph index (no {_CURRENT} file)")
        version_dir = root / pointer.read_text(encoding="utf-8").strip()
        store = cls(path=str(root))
        try:
            manifest = json.loads((version_dir / "manifest.json").read_text(encoding="utf-8"))
            if not isinstance(manifest, dict):
                raise CorruptStoreError(f"store at {root} is corrupt: manifest.json is not a JSON object")
            if manifest.get("format") != FORMAT_VERSION:
                raise CorruptStoreError(f"{root}: unsupported store format {manifest.get('format')!r}")
            with (version_dir / "documents.jsonl").open(encoding="utf-8") as fh:
                docs = [Document.from_dict(json.loads(line)) for line in fh if line.strip()]
            emb_file = version_dir / "embeddings.npy"
            matrix = np.load(emb_file) if emb_file.is_file() else None
        except CorruptStoreError:
            raise
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # AttributeError: no dict
            raise CorruptStoreError(f"store at {root} is corrupt or incomplete: {exc}") from exc
        bad_matrix = matrix is not None and (matrix.ndim != 2 or matrix.shape[0] != len(docs))
        if len(docs) != manifest.get("count") or bad_matrix:
            raise CorruptStoreError(f"store at {root} is corrupt: document and embedding counts disagree")
        store._docs = docs
        store._index = {d.id: i for i, d in enumerate(docs)}
        store._rows = list(matrix) if matrix is not None else [None] * len(docs)
        store._matrix = matrix
        store.meta = dict(manifest.get("meta") or {})
        store.version_dir = version_dir
        store._saved_bm25_dir = version_dir / "bm25"
        return store

    # -- internals -------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.revision += 1
        self._matrix = None
        self._bm25.clear()
        self._saved_bm25_dir = None

    def _row(self, i: int) -> np.ndarray | None:
        return self._rows[i]

    def _with_embedding(self, i: int) -> Document:
        row = self._rows[i]
        return replace(self._docs[i], embedding=None if row is None else row.tolist())


def _normalized(embedding: list[float] | None) -> np.ndarray | None:
    if embedding is None:
        return None
    vec = np.asarray(embedding, dtype=np.float32)
    norm = float(np.linalg.norm(vec))
    return vec / norm if norm > 0 else vec


def _doc_to_json(doc: Document) -> dict[str, Any]:
    data = doc.to_dict(flatten=False)
    data.pop("embedding", None)
    data.pop("sparse_embedding", None)
    data.pop("blob", None)
    data.pop("score", None)
    return data
