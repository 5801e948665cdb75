"""Reading an input file safely: regular files only, with a size limit checked before reading.

A path can name something that is not a file with an end: a FIFO blocks its reader until a writer
appears (forever, for `haygraph index`), and a device such as ``/dev/zero`` never ends (one run read
23.8 GB before the kernel killed it). So every file indexing or a config load reads is first opened
without blocking (``O_NONBLOCK``: no effect on a regular file, and opening a FIFO returns at once), then
checked on that same descriptor (``fstat``: no window between the check and the read for the path to be
swapped) to be a regular file no larger than the limit, and read for at most limit + 1 bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from haygraph.retrieval.errors import FileTooLargeError, NotRegularFileError, UnreadableFileError

__all__ = ["MAX_FILE_BYTES", "check_regular_file", "read_regular_file"]

MAX_FILE_BYTES = 200 * 1024 * 1024
"""Largest file indexing reads (200 MiB): a bigger one is skipped in a folder, refused when given by name."""


def _kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _unreadable(path: Path, exc: OSError) -> UnreadableFileError:
    if isinstance(exc, FileNotFoundError):
        return UnreadableFileError(f"{path}: file does not exist")
    return UnreadableFileError(f"{path}: cannot read file: {exc.strerror or exc}")


def _check(path: Path, status: os.stat_result, limit: int | None) -> int:
    if not stat.S_ISREG(status.st_mode):
        raise NotRegularFileError(
            f"{path}: is {_kind(status.st_mode)}, not a regular file; only regular files are read"
        )
    if limit is not None and status.st_size > limit:
        raise FileTooLargeError(
            f"{path}: file is {status.st_size:,} bytes, larger than the limit of {limit:,} bytes; "
            "split it into smaller files"
        )
    return status.st_size


def check_regular_file(path: str | Path, limit: int | None = MAX_FILE_BYTES) -> int:
    """Return the size of `path` if it is a regular file of at most `limit` bytes (None: no limit).

    For readers that open the path themselves (PDF and office libraries, a streamed corpus).

    Raises:
        UnreadableFileError: the path does not exist or cannot be examined.
        NotRegularFileError: it is a FIFO, device, socket or directory.
        FileTooLargeError: it is larger than `limit`.

    """
    path = Path(path)
    try:
        status = path.stat()
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    return _check(path, status, limit)


def read_regular_file(path: str | Path, limit: int | None = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; raises as `check_regular_file`.

    The check and the read use one descriptor, and at most ``limit + 1`` bytes are read: a file that
    grows past the limit while it is read is refused too.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    try:
        size = _check(path, os.fstat(fd), limit)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            want = size + 1 if limit is None else min(size, limit) + 1  # no buffer of `limit` bytes
            data = handle.read(want)
            if len(data) == want:  # it grew since fstat (or reports size 0, as /proc files): read on
                data += handle.read() if limit is None else handle.read(limit + 1 - len(data))
    except OSError as exc:
        raise _unreadable(path, exc) from exc
    finally:
        os.close(fd)
    if limit is not None and len(data) > limit:
        raise FileTooLargeError(
            f"{path}: file grew past the limit of {limit:,} bytes while it was read (it was {size:,})"
        )
    return data
