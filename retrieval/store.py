"""The embedded document store: documents, a float32 embedding matrix and a BM25 index, persisted.

It implements Haystack's DocumentStore protocol (count/filter/write/delete, to_dict/from_dict) so stock
components such as DocumentWriter work with it, and it exposes the contiguous matrix and BM25 index
that our fast retrievers need. Saving is atomic: a new version directory is written completely, then
a `CURRENT` pointer file is replaced with `os.replace`, so a crash mid-write leaves the previous index
intact (layout and validation: `store_files.py`).

Writers are serialized by a lock file (`store_lock.py`) and never lose each other's updates: `writing()`
takes the lock and brings this copy up to the newest saved version before anything is changed, and
`save()` refuses (`StoreConflictError`) to overwrite a version it has not seen.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.types import DuplicatePolicy
from haystack.utils.filters import document_matches_filter

from haygraph.retrieval import store_files
from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import (
    CorruptStoreError,
    InputError,
    StoreConflictError,
    StoreError,
    StoreNotFoundError,
)
from haygraph.retrieval.store_files import FORMAT_VERSION, store_root
from haygraph.retrieval.store_lock import DEFAULT_LOCK_TIMEOUT, StoreLock

__all__ = ["FORMAT_VERSION", "EmbeddedDocumentStore", "check_storable", "store_exists"]

logger = logging.getLogger(__name__)

_LOAD_ATTEMPTS = 3
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
        self.meta: dict[str, Any] = {}
        self.version_dir: Path | None = None
        """The version directory last saved or loaded (its manifest.json holds `meta`); None in memory."""
        self.revision = 0
        """Incremented on every change of the documents; lets derived copies detect staleness."""
        self.version: str | None = None
        """The saved version this content was loaded from or last saved as (None: never saved)."""
        self.dirty = False
        """True when documents changed since the last load or save."""
        self.lock_timeout = DEFAULT_LOCK_TIMEOUT
        """Seconds `writing()` waits for another writer of the same directory before `StoreLockedError`."""
        self._lock: StoreLock | None = None
        self._lock_depth = 0

    # -- Haystack DocumentStore protocol -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Serialize as a reference to the store directory."""
        return default_to_dict(self, path=self.path)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EmbeddedDocumentStore:
        """Load the store saved at the serialized path (an empty store if there is none yet)."""
        path = data.get("init_parameters", {}).get("path")
        version = store_files.current_version(Path(path)) if path and Path(path).is_dir() else None
        if path and version:
            key = (str(Path(path).resolve()), version)
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

    # -- persistence -----------------------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[EmbeddedDocumentStore]:
        """Hold the store directory's writer lock; on entry, bring this copy up to the newest saved version.

        Re-entrant. Use it around read-modify-write sequences (`KnowledgeBase.index` does): another
        process's update saved since this copy was loaded is loaded first, so it is never lost. If this copy
        has unsaved changes and the directory moved on, `StoreConflictError` is raised instead. A second
        writer waits up to `lock_timeout` seconds (logged), then `StoreLockedError`. Half-written versions
        left by a killed writer are removed. An in-memory store (no `path`) needs no lock.
        """
        if self.path is None or self._lock_depth:
            self._lock_depth += 1
            try:
                yield self
            finally:
                self._lock_depth -= 1
            return
        root = store_root(self.path, "path")
        created = not root.exists()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create store directory {root}: {exc.strerror or exc}") from exc
        lock = StoreLock(root, timeout=self.lock_timeout)
        lock.acquire()
        self._lock, self._lock_depth = lock, 1
        try:
            store_files.remove_leftovers(root)
            self._catch_up(root)
            yield self
        finally:
            self._lock, self._lock_depth = None, 0
            # A first index that failed leaves no empty store directory behind.
            unused = created and store_files.current_version(root) is None
            lock.release(remove_file=unused)
            if unused:
                with contextlib.suppress(OSError):  # something else was put there meanwhile: leave it
                    root.rmdir()

    def _catch_up(self, root: Path) -> None:
        """Load the newest saved version unless this copy already is it (called under the lock)."""
        latest = store_files.current_version(root)
        if latest is None or latest == self.version:
            return  # nothing saved yet (or the saved versions were deleted: this copy is all there is)
        if self.dirty:
            raise StoreConflictError(
                f"store {root} was saved by another writer (version {latest}) after this copy was loaded "
                f"(version {self.version or 'none'}); its unsaved changes were not written. Fix: open the "
                "store again (KnowledgeBase.open) and repeat the changes, or clear() it to replace it"
            )
        self._adopt(self.load(root))
        logger.info("store %s: loaded version %s saved by another writer", root, latest)

    def clear(self) -> None:
        """Remove every document and the store meta; the next `save()` replaces the saved content.

        Takes the writer lock to learn the newest saved version without loading it, so the replacement
        is deliberate (not a lost update) and also works over a damaged store.
        """
        if self.path is None:
            self._reset()
            return
        with self._locked_without_catch_up() as root:
            latest = store_files.current_version(root) if root.is_dir() else None
            self._reset()
            self.version = latest
            self.dirty = True

    @contextmanager
    def _locked_without_catch_up(self) -> Iterator[Path]:
        root = store_root(self.path, "path")
        if self._lock is not None and self._lock.directory == root:
            yield root  # already held by `writing()`
            return
        root.mkdir(parents=True, exist_ok=True)
        with StoreLock(root, timeout=self.lock_timeout):
            store_files.remove_leftovers(root)
            yield root

    def save(self, path: str | Path | None = None) -> Path:
        """Write the store to `path` (or its own path) atomically and return the directory.

        Saving under the own path holds the writer lock and refuses to overwrite a version saved by
        another writer since this copy was loaded (`StoreConflictError`). Saving to another `path`
        replaces whatever is there with this content (and makes `path` the store's path).
        """
        if not (path or self.path):  # Path("") is ".": never write into the working directory by accident
            raise StoreError("no path given to save the store to")
        if path is not None and (self.path is None or Path(path) != Path(self.path)):
            store_root(path, "path")
            self.path, self.version, self.dirty = str(path), None, True
            with self._locked_without_catch_up() as root:
                self.version = store_files.current_version(root)  # replaced deliberately
                return self._write(root)
        with self.writing():
            return self._write(Path(self.path or ""))

    def _write(self, root: Path) -> Path:
        documents = [_doc_to_json(doc) for doc in self._docs]
        rows = self._matrix if self._matrix is not None else self._embedding_rows()
        name = store_files.write_version(root, documents, rows, list(self._bm25.values()), self.meta)
        store_files.commit(root, name)
        self.version, self.dirty = name, False
        self.version_dir = root / name
        return root

    @classmethod
    def load(cls, path: str | Path) -> EmbeddedDocumentStore:
        """Load a store saved with `save()`; every file is validated, and problems raise clear errors.

        Raises `ArgumentError` (not a path), `StoreNotFoundError` (no directory or no saved version),
        `StoreError` (a file, not a directory) or `CorruptStoreError` (naming the damaged file and the fix).
        A version replaced by a concurrent writer while it was being read is retried with the new one.
        """
        root = store_root(path)
        if not root.is_dir():
            raise StoreNotFoundError(
                f"store directory {root} does not exist (create it with `haygraph index`)"
            )
        for attempt in range(_LOAD_ATTEMPTS):
            name = store_files.current_version(root)
            if name is None:
                raise StoreNotFoundError(
                    f"{root} holds no haygraph index (no {store_files.CURRENT} file and no saved version)"
                )
            try:
                saved = store_files.read_version(root, name)
                break
            except CorruptStoreError:
                if attempt + 1 < _LOAD_ATTEMPTS and store_files.current_version(root) != name:
                    continue  # a writer committed a new version and removed this one while we read it
                raise
        store = cls(path=str(root))
        store._docs = saved.documents
        store._index = {d.id: i for i, d in enumerate(saved.documents)}
        store._rows = list(saved.matrix) if saved.matrix is not None else [None] * len(saved.documents)
        store._matrix = saved.matrix
        store.meta = saved.meta
        if saved.bm25 is not None:
            store._bm25[json.dumps(saved.bm25.params(), sort_keys=True)] = saved.bm25
        store.version = saved.name
        store.version_dir = root / saved.name
        return store

    # -- internals -------------------------------------------------------------------------------
    def _changed(self) -> None:
        self.revision += 1
        self.dirty = True
        self._matrix = None
        self._bm25.clear()

    def _reset(self) -> None:
        self._docs, self._index, self._rows, self.meta = [], {}, [], {}
        self._changed()

    def _adopt(self, other: EmbeddedDocumentStore) -> None:
        """Take over `other`'s content in place (pipelines keep their reference to this object)."""
        self._docs, self._index, self._rows = other._docs, other._index, other._rows
        self._matrix, self._bm25, self.meta = other._matrix, other._bm25, other.meta
        self.version, self.dirty = other.version, False
        self.version_dir = other.version_dir
        self.revision += 1

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


def _doc_to_json(doc: Document) -> dict[str, Any]:
    data = doc.to_dict(flatten=False)
    data.pop("embedding", None)
    data.pop("sparse_embedding", None)
    data.pop("blob", None)
    data.pop("score", None)
    return data


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


def store_exists(path: str | Path) -> bool:
    """Whether `path` is a directory holding a saved store (`CURRENT`, or at least one complete version)."""
    root = store_root(path)
    return root.is_dir() and store_files.current_version(root) is not None
