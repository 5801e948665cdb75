"""The embedded document store: a `DocumentMatrix` saved to a directory as versions, one writer at a time.

The store's modules, one concern each:

- `document_matrix.py`: the documents, their float32 embedding matrix and BM25 indexes in memory,
  with Haystack's DocumentStore protocol (count/filter/write/delete) so stock components such as
  DocumentWriter work with it;
- `store.py` (this module): saved versions — `save`, `load`, `writing()`, `to_dict`/`from_dict`;
- `store_files.py`: the directory layout (version directories, the `CURRENT` pointer, validation);
- `store_lock.py`: the single-writer lock.

Saving is atomic: a new version directory is written completely, then a `CURRENT` pointer file is
replaced with `os.replace`, so a crash mid-write leaves the previous index intact. Writers are
serialized by the lock file and never lose each other's updates: `writing()` takes the lock and brings
this copy up to the newest saved version before anything is changed, and `save()` refuses
(`StoreConflictError`) to overwrite a version it has not seen.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from haystack import Document, default_from_dict, default_to_dict

from haygraph.retrieval import store_files
from haygraph.retrieval.document_matrix import DocumentMatrix, check_storable
from haygraph.retrieval.errors import (
    CorruptStoreError,
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


class EmbeddedDocumentStore(DocumentMatrix):
    """In-process document store with an exact-cosine matrix and a bm25s index, saved to a directory.

    The documents, matrix and BM25 indexes are `DocumentMatrix`'s; this class saves them as versions
    (`store_files.py`), loads the newest, and serializes writers (`store_lock.py`).
    """

    def __init__(self, path: str | None = None) -> None:
        """Create an empty store; `path` is where `save()` writes and what `to_dict()` records."""
        super().__init__()
        self.path = path
        self.version_dir: Path | None = None
        """The version directory last saved or loaded (its manifest.json holds `meta`); None in memory."""
        self.version: str | None = None
        """The saved version this content was loaded from or last saved as (None: never saved)."""
        self.lock_timeout = DEFAULT_LOCK_TIMEOUT
        """Seconds `writing()` waits for another writer of the same directory before `StoreLockedError`."""
        self._lock: StoreLock | None = None
        self._lock_depth = 0

    # -- Haystack DocumentStore protocol (serialization) ---------------------------------------
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

    def _adopt(self, other: EmbeddedDocumentStore) -> None:
        """Take over `other`'s content in place (pipelines keep their reference to this object)."""
        self._docs, self._index, self._rows = other._docs, other._index, other._rows
        self._matrix, self._bm25, self.meta = other._matrix, other._bm25, other.meta
        self.version, self.dirty = other.version, False
        self.version_dir = other.version_dir
        self.revision += 1


def _doc_to_json(doc: Document) -> dict[str, Any]:
    data = doc.to_dict(flatten=False)
    data.pop("embedding", None)
    data.pop("sparse_embedding", None)
    data.pop("blob", None)
    data.pop("score", None)
    return data


def store_exists(path: str | Path) -> bool:
    """Whether `path` is a directory holding a saved store (`CURRENT`, or at least one complete version)."""
    root = store_root(path)
    return root.is_dir() and store_files.current_version(root) is not None
