"""Exceptions raised by the retrieval plane; one tree with `RetrievalError` at its root."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


class RetrievalError(Exception):
    """Base class of every error raised by `retrieval`."""


class ArgumentError(RetrievalError, TypeError):
    """A Python API argument has the wrong type; the message names the parameter.

    Also a `TypeError`, so callers that catch the built-in keep working.
    """


class ConfigError(RetrievalError):
    """A retrieval configuration is invalid (unknown key, bad value, inconsistent settings)."""


class IndexSettingsMismatchError(ConfigError):
    """A caller's config changes an indexing setting (splitter, embedder model, BM25) of a built store."""


class InputError(RetrievalError):
    """Input documents or files cannot be used."""


class UnsupportedFileError(InputError):
    """A file has an extension no converter handles."""


class UnreadableFileError(InputError):
    """A file does not exist, cannot be read or cannot be decoded."""


class NotRegularFileError(UnreadableFileError):
    """A path names a FIFO, device, socket or directory where a regular file is needed: it is never read."""


class FileTooLargeError(UnreadableFileError):
    """A file is larger than the size limit for reading it (checked before reading)."""


class EmptyDocumentError(InputError):
    """A file or document has no text content."""


class OcrUnavailableError(EmptyDocumentError):
    """A file's text is in images (an image file, a scanned PDF) and the optional OCR extra is not installed.

    An `EmptyDocumentError`: without OCR the file has no text, so a folder's image is skipped and listed.
    """


class EmptyCorpusError(InputError):
    """Nothing indexable was given (no files, or every file was empty)."""


class SourceConflictError(InputError):
    """Two different files (or a file and another source) would get the same source id in one tenant."""


class UnknownSourceError(InputError):
    """A source to remove is not in the store."""


class StoreError(RetrievalError):
    """A persisted store is missing, corrupt or cannot be written."""


class StoreNotFoundError(StoreError):
    """The store directory does not exist or holds no index."""


class CorruptStoreError(StoreError):
    """The store directory holds files that cannot be loaded."""


class StoreLockedError(StoreError):
    """Another writer held the store's lock for longer than the lock timeout."""


class StoreConflictError(StoreError):
    """The store was changed on disk by another writer while this copy had unsaved changes."""


class QueryError(RetrievalError):
    """A query cannot be run (empty after cleaning, too long, ...)."""


class ModelUnavailableError(RetrievalError):
    """A model (embedder or reranker) cannot be loaded offline."""


class ScoreScaleError(RetrievalError):
    """Scores are on a scale a component cannot handle (negative, missing, not finite)."""


def describe_value(value: Any) -> str:
    """A wrong argument's type and the start of its repr, for an `ArgumentError` message."""
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'…' if len(text) > 80 else ''}"


@contextmanager
def translated_errors(translate: Callable[[BaseException], StoreError | None]) -> Iterator[None]:
    """Raise ``translate(exc)`` from a failure `exc` of a store's client, when it gives a `StoreError`.

    A failure inside a query pipeline arrives wrapped by the pipeline runner (a `RetrievalError` whose
    cause is the client's exception): its cause is translated. A `StoreError`, and a failure
    `translate` does not know (None), propagate unchanged.
    """
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        cause: BaseException | None = exc.__cause__ if isinstance(exc, RetrievalError) else exc
        translated = translate(cause) if cause is not None else None
        if translated is None:
            raise
        raise translated from exc
