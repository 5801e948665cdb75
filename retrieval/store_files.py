"""The on-disk layout of a store directory: version directories, the `CURRENT` pointer, validation.

::

    <store>/CURRENT                 names the version in force, e.g. "v-3f2a9c0d1e4b"
    <store>/v-3f2a9c0d1e4b/         one complete, never-modified version
        manifest.json               format, document count, embedding dim, store meta (indexing config)
        documents.jsonl             one Haystack document per line, without embeddings
        embeddings.npy              (count, dim) float32, L2-normalized; absent when dim is null
        bm25/                       bm25s index + haygraph_bm25.json (parameters, document frequencies)
    <store>/.lock                   the single-writer lock (`store_lock.py`)
    <store>/.tmp-v-*                a version being written; left behind only by a killed writer

A version is written completely under a temporary name, fsynced and renamed; only then is `CURRENT`
replaced (atomic `os.replace`). Every file is validated when a version is read, and a problem is
reported naming the file and the fix.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import reprlib
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import (
    ArgumentError,
    ConfigError,
    CorruptStoreError,
    StoreError,
    StoreNotFoundError,
)

logger = logging.getLogger(__name__)

FORMAT_VERSION = 1
CURRENT = "CURRENT"
TMP_PREFIX = ".tmp-"
_POINTER_TMP = f".{CURRENT}.tmp"
_VERSION_NAME = re.compile(r"^v-[0-9A-Za-z_-]{1,64}$")


@dataclass
class SavedVersion:
    """The validated content of one version directory."""

    name: str
    documents: list[Document]
    matrix: np.ndarray | None
    meta: dict[str, Any]
    bm25: BM25Index | None


def store_root(path: Any, parameter: str = "store_dir") -> Path:
    """`path` as a Path; raises `ArgumentError` naming `parameter` for a non-path, `StoreError` for a file."""
    if isinstance(path, bool) or not isinstance(path, str | os.PathLike) or str(path).strip() == "":
        raise ArgumentError(
            f"{parameter} must be a directory path (str or Path), but got {reprlib.repr(path)}"
        )
    root = Path(path)
    try:
        is_file = root.exists() and not root.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte: no directory can have it
        reason = getattr(exc, "strerror", None) or str(exc)
        raise StoreNotFoundError(f"store path {reprlib.repr(str(path))} cannot be used: {reason}") from exc
    if is_file:
        raise StoreError(
            f"store path {root} is a file, not a store directory; give the directory that holds the store "
            "(or a new directory to create one)"
        )
    return root


def current_version(root: Path) -> str | None:
    """The version `CURRENT` names; without `CURRENT`, the newest complete version (None when there is none).

    A store whose `CURRENT` file was lost still opens with its newest complete version (logged), so a
    writer never mistakes it for an empty store.
    """
    pointer = root / CURRENT
    try:
        name = pointer.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return _newest_complete(root)
    except (OSError, UnicodeDecodeError) as exc:
        raise _corrupt(root, pointer, f"cannot be read ({exc})") from exc
    if not _VERSION_NAME.match(name):
        raise _corrupt(root, pointer, f"does not name a version directory (holds {name[:40]!r})")
    return name


def _newest_complete(root: Path) -> str | None:
    complete = []
    for directory in root.glob("v-*"):
        try:
            complete.append(((directory / "manifest.json").stat().st_mtime_ns, directory.name))
        except OSError:  # incomplete (no manifest) or removed meanwhile
            continue
    if not complete:
        return None
    newest = max(complete)[1]
    logger.warning("%s has no %s file; using its newest complete version %s", root, CURRENT, newest)
    return newest


def read_version(root: Path, name: str) -> SavedVersion:
    """Read and validate version `name` of the store at `root`; raises `CorruptStoreError` naming the file."""
    directory = root / name
    if not directory.is_dir():
        raise _corrupt(root, root / CURRENT, f"names version {name}, but {directory} does not exist")
    manifest = _read_manifest(root, directory / "manifest.json")
    count, dim = manifest["count"], manifest["dim"]
    documents = _read_documents(root, directory / "documents.jsonl", count)
    matrix = _read_matrix(root, directory / "embeddings.npy", count, dim)
    bm25 = _read_bm25(root, directory / "bm25", count, required=manifest.get("bm25") is True)
    meta = manifest.get("meta") or {}
    config = meta.get("config")
    if config is not None:
        from haygraph.retrieval.config import RetrievalConfig

        try:
            RetrievalConfig.from_dict(config)
        except ConfigError as exc:
            raise _corrupt(root, directory / "manifest.json", f"holds an invalid config: {exc}") from exc
    return SavedVersion(name=name, documents=documents, matrix=matrix, meta=dict(meta), bm25=bm25)


def _read_manifest(root: Path, path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise _corrupt(root, path, "is missing") from exc
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _corrupt(root, path, f"is not valid JSON ({exc})") from exc
    if not isinstance(manifest, dict):
        raise _corrupt(root, path, "is not a JSON object")
    if manifest.get("format") != FORMAT_VERSION:
        raise _corrupt(root, path, f"has unsupported store format {manifest.get('format')!r}")
    count, dim = manifest.get("count"), manifest.get("dim")
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise _corrupt(root, path, f"has no valid document count (got {count!r})")
    if dim is not None and (not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0):
        raise _corrupt(root, path, f"has an invalid embedding dimension {dim!r}")
    if not isinstance(manifest.get("meta", {}), dict):
        raise _corrupt(root, path, "has a 'meta' entry that is not an object")
    return manifest


def _read_documents(root: Path, path: Path, count: int) -> list[Document]:
    documents: list[Document] = []
    seen: set[str] = set()
    try:
        with path.open(encoding="utf-8") as handle:
            for lineno, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    data = json.loads(line)
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                    doc = Document.from_dict(data)
                except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                    raise _corrupt(root, path, f"line {lineno} is not a stored document ({exc})") from exc
                if not isinstance(doc.id, str) or not doc.id or doc.id in seen:
                    raise _corrupt(root, path, f"line {lineno} has a missing or repeated id {doc.id!r}")
                if not isinstance(doc.content, str) or not isinstance(doc.meta, dict):
                    raise _corrupt(root, path, f"line {lineno} has no text content or no meta object")
                seen.add(doc.id)
                documents.append(doc)
    except FileNotFoundError as exc:
        raise _corrupt(root, path, "is missing") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise _corrupt(root, path, f"cannot be read ({exc})") from exc
    if len(documents) != count:
        raise _corrupt(root, path, f"holds {len(documents)} documents, but manifest.json says {count}")
    return documents


def _read_matrix(root: Path, path: Path, count: int, dim: int | None) -> np.ndarray | None:
    if dim is None:
        if path.exists():
            raise _corrupt(root, path, "exists, but manifest.json records no embeddings")
        return None
    try:
        matrix = np.load(path, allow_pickle=False)
    except FileNotFoundError as exc:
        raise _corrupt(
            root, path, f"is missing (manifest.json records {count} embeddings of size {dim})"
        ) from exc
    except Exception as exc:  # truncated (EOFError), not .npy (ValueError), pickled objects, I/O errors
        # numpy's own text (often hundreds of characters of header) stays in the cause: `--debug` shows it
        raise _corrupt(root, path, f"is unreadable or truncated ({type(exc).__name__})") from exc
    if not isinstance(matrix, np.ndarray) or matrix.dtype != np.float32 or matrix.shape != (count, dim):
        raise _corrupt(
            root,
            path,
            f"holds {getattr(matrix, 'dtype', '?')} {getattr(matrix, 'shape', '?')}, "
            f"expected float32 ({count}, {dim}): document and embedding counts disagree",
        )
    if not np.isfinite(matrix).all():
        raise _corrupt(root, path, "holds NaN or infinite values")
    return matrix


def _read_bm25(root: Path, directory: Path, count: int, *, required: bool) -> BM25Index | None:
    meta_file = directory / "haygraph_bm25.json"
    if not directory.exists() and not required:
        return None  # stores saved before the BM25 index was built; it is built on first use
    try:
        index = BM25Index.load(directory)
    except Exception as exc:  # JSON, bm25s arrays (ValueError/EOFError), missing files (OSError)
        raise _corrupt(root, meta_file, f"(BM25 index) is unreadable ({type(exc).__name__}: {exc})") from exc
    if index is None:
        raise _corrupt(root, meta_file, "(BM25 index) is missing")
    if index.num_docs != count:
        raise _corrupt(root, meta_file, f"(BM25 index) covers {index.num_docs} documents, not {count}")
    return index


def _write_matrix(handle: Any, matrix: np.ndarray | Sequence[np.ndarray], block: int = 4096) -> int:
    """Write `matrix` (an array, or its equal-length float32 rows) as one .npy array; return its width."""
    if isinstance(matrix, np.ndarray):
        np.save(handle, matrix)
        return int(matrix.shape[1])
    dim = int(matrix[0].shape[0]) if len(matrix) else 0
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False}
    np.lib.format.write_array_header_1_0(handle, {**header, "shape": (len(matrix), dim)})
    for start in range(0, len(matrix), block):
        handle.write(np.vstack(matrix[start : start + block]).astype(np.float32, copy=False).tobytes())
    return dim


def write_version(
    root: Path,
    documents: list[dict[str, Any]],
    matrix: np.ndarray | Sequence[np.ndarray] | None,
    bm25: list[BM25Index],
    meta: dict[str, Any],
) -> str:
    """Write a complete new version directory (fsynced) and return its name; `CURRENT` is not touched.

    `matrix` is the (count, dim) float32 embedding matrix, or its rows: rows are written to
    ``embeddings.npy`` a block at a time, so saving never needs a second, contiguous copy of them.
    """
    name = f"v-{uuid.uuid4().hex[:12]}"
    tmp = root / f"{TMP_PREFIX}{name}"
    try:
        tmp.mkdir()
        with (tmp / "documents.jsonl").open("w", encoding="utf-8") as handle:
            for data in documents:
                handle.write(json.dumps(data, ensure_ascii=False) + "\n")
        dim = None
        if matrix is not None:
            with (tmp / "embeddings.npy").open("wb") as handle:
                dim = _write_matrix(handle, matrix)
        for index in bm25:  # the most recently built index is the one saved
            index.save(tmp / "bm25")
        manifest = {
            "format": FORMAT_VERSION,
            "count": len(documents),
            "meta": meta,
            "dim": dim,
            "bm25": bool(bm25),
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False), encoding="utf-8")
        _fsync_tree(tmp)
        os.replace(tmp, root / name)
        _fsync_dir(root)
    except BaseException as exc:  # any failure (not only OSError) must leave no half-written version
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise StoreError(f"cannot write store to {root}: {write_failure(root, exc)}") from exc
        raise
    return name


_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _mount_point(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def write_failure(root: Path, exc: OSError) -> str:
    """Why a store write failed; for a full disk or quota: which filesystem, its free space, what to do."""
    reason = exc.strerror or str(exc)
    if exc.errno not in _NO_SPACE:
        return reason
    try:
        free = f"{shutil.disk_usage(root).free / 1e6:.1f} MB free"
    except OSError:
        free = "free space unknown"
    return (
        f"{reason} (the disk at {_mount_point(root)} has {free}); the previous version is intact and "
        "still served — free some space and run the command again"
    )


def commit(root: Path, name: str) -> None:
    """Make version `name` the one in force (atomic pointer swap), then delete the versions it replaces.

    Older versions are deleted only after the new pointer is durable, so the newest good version is
    never lost; readers that are still loading an older one retry with the new pointer.
    """
    pointer = root / _POINTER_TMP
    try:
        with pointer.open("w", encoding="utf-8") as handle:
            handle.write(name)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(pointer, root / CURRENT)
        _fsync_dir(root)
    except OSError as exc:
        pointer.unlink(missing_ok=True)
        raise StoreError(f"cannot write {root / CURRENT}: {write_failure(root, exc)}") from exc
    for old in root.glob("v-*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def remove_leftovers(root: Path) -> list[str]:
    """Delete versions a killed writer left half-written (call only while holding the writer lock)."""
    removed = []
    for leftover in [*root.glob(f"{TMP_PREFIX}v-*"), root / _POINTER_TMP]:
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        elif leftover.exists():
            leftover.unlink(missing_ok=True)
        else:
            continue
        removed.append(leftover.name)
    if removed:
        logger.info("%s: removed leftovers of an interrupted save: %s", root, ", ".join(sorted(removed)))
    return removed


def _fsync_tree(directory: Path) -> None:
    for path in directory.rglob("*"):
        if path.is_file():
            with path.open("rb") as handle:
                os.fsync(handle.fileno())
    for path in [*(p for p in directory.rglob("*") if p.is_dir()), directory]:
        _fsync_dir(path)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _corrupt(root: Path, path: Path, problem: str) -> CorruptStoreError:
    return CorruptStoreError(
        f"store {root} is corrupt: {path} {problem}. Fix: re-index — delete {root} and run "
        f"`haygraph index PATH... --store {root}` again (or index into a new directory)"
    )
