"""The single-writer lock of a store directory: `fcntl.flock` on ``<store>/.lock``.

One writer at a time may change a store (index, remove, save). A second writer waits — it logs once
that it is waiting and for which process — and gives up with `StoreLockedError` after `timeout`
seconds. Readers never take the lock: a saved version directory is never changed, and `CURRENT` is
swapped atomically.

The kernel releases a `flock` lock when its holder dies, even by ``kill -9``, so a crashed writer never
leaves a stale lock behind. The lock file is only deleted by a writer that created the store directory
and failed before anything was saved; a process that was waiting on the deleted file notices (the path
no longer names the file it locked) and locks the new one instead.

Standard library only (POSIX: Linux, macOS); the `filelock` package would add Windows at the cost of a
dependency for a few lines of code.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from pathlib import Path
from types import TracebackType

from haygraph.retrieval.errors import StoreError, StoreLockedError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

LOCK_FILE = ".lock"
DEFAULT_LOCK_TIMEOUT = 600.0
"""Seconds a writer waits for another writer of the same store before it gives up."""


class StoreLock:
    """Exclusive, non-reentrant writer lock on ``directory/.lock``.

    >>> with StoreLock(Path("kb"), timeout=30):
    ...     pass  # only this process writes to kb/ here
    """

    def __init__(
        self, directory: str | Path, timeout: float = DEFAULT_LOCK_TIMEOUT, poll: float = 0.1
    ) -> None:
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or math.isnan(timeout)
            or timeout < 0
        ):
            raise ValueError(f"timeout must be a number of seconds >= 0, but got {timeout!r}")
        if isinstance(poll, bool) or not isinstance(poll, int | float) or not 0 < poll <= 10:
            raise ValueError(f"poll must be in (0, 10] seconds, but got {poll!r}")
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.timeout = float(timeout)
        self.poll = float(poll)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def holder(self) -> str:
        """The process id written by the current holder ('' when unknown)."""
        try:
            return self.path.read_text(encoding="ascii", errors="replace").strip()
        except OSError:
            return ""

    def acquire(self) -> None:
        """Take the lock, waiting up to `timeout` seconds; raises `StoreLockedError` when it stays taken."""
        if fcntl is None:  # pragma: no cover - Windows
            raise StoreError("store locking needs fcntl (Linux or macOS)")
        if self._fd is not None:
            raise StoreError(f"lock {self.path} is already held by this object")
        deadline = time.monotonic() + self.timeout
        waiting = False
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except FileNotFoundError:  # the directory was removed (a failed first index): make it again
                self.directory.mkdir(parents=True, exist_ok=True)
                continue
            except OSError as exc:
                raise StoreError(f"cannot create lock file {self.path}: {exc.strerror or exc}") from exc
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if not waiting:
                    waiting = True
                    logger.warning(
                        "store %s is being written by another process%s; waiting up to %g s",
                        self.directory,
                        _pid_note(self.holder()),
                        self.timeout,
                    )
                if time.monotonic() >= deadline:
                    raise StoreLockedError(
                        f"store {self.directory} is locked by another writer{_pid_note(self.holder())} "
                        f"and stayed locked for {self.timeout:g} s; let that process finish (or stop it) "
                        "and try again"
                    ) from None
                time.sleep(self.poll)
                continue
            if not _same_file(fd, self.path):  # the file was removed while we waited: lock the new one
                os.close(fd)
                continue
            try:  # the holder's pid is only a courtesy to a waiting writer: a full disk may refuse it
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
            except OSError as exc:
                logger.debug("store %s: lock held, its pid not recorded: %s", self.directory, exc)
            self._fd = fd
            if waiting:
                logger.warning("store %s: the other writer finished; continuing", self.directory)
            return

    def release(self, *, remove_file: bool = False) -> None:
        """Release the lock (idempotent); `remove_file` deletes the lock file first (while still held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            if remove_file:
                self.path.unlink()
            else:
                os.ftruncate(fd, 0)
        try:
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)


def _pid_note(pid: str) -> str:
    return f" (pid {pid})" if pid.isdigit() else ""
