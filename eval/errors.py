"""Exceptions raised by the evaluation package; one tree with `EvalError` at its root."""

from __future__ import annotations

from pathlib import Path


class EvalError(Exception):
    """Base class of every error raised by `eval`."""


class DatasetError(EvalError):
    """A BEIR dataset folder or one of its files is missing or malformed.

    The message starts with the file (and, when one line is at fault, its 1-based line number)
    so that the user can open the file at the right place: ``path/corpus.jsonl:17: invalid JSON``.
    The same facts are kept as attributes for callers that want them.
    """

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.line = line
        self.reason = message
        if self.path is not None and line is not None:
            text = f"{self.path}:{line}: {message}"
        elif self.path is not None:
            text = f"{self.path}: {message}"
        else:
            text = message
        super().__init__(text)


class MetricError(EvalError, ValueError):
    """A metric name, cutoff or input cannot be evaluated (unknown metric, k <= 0, non-finite score).

    Also a `ValueError`, so callers that only know the standard exception still catch it.
    """


class ReportError(EvalError, ValueError):
    """A harness results object does not have the shape that reports and plots expect."""
