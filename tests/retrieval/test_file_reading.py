"""Regular files only, size checked before reading: a FIFO or /dev/zero never hangs or exhausts memory.

A regression would hang (FIFO) or read without end (/dev/zero), so those calls run bounded
(`tests.bounded_calls`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from haygraph.retrieval.errors import FileTooLargeError, NotRegularFileError, UnreadableFileError
from haygraph.retrieval.file_reading import check_regular_file, read_regular_file
from tests.bounded_calls import TIMEOUT, run_bounded, within


class TestReadRegularFile:
    def test_reads_a_regular_file(self, tmp_path: Path) -> None:
        path = tmp_path / "a.md"
        path.write_bytes(b"# A\n\ntext")
        assert read_regular_file(path) == b"# A\n\ntext"
        assert check_regular_file(path) == 9

    def test_fifo_is_refused_without_blocking(self, fifo: Path) -> None:
        for call in (lambda: read_regular_file(fifo), lambda: check_regular_file(fifo)):
            with pytest.raises(
                NotRegularFileError, match=r"notes\.md: is a FIFO \(named pipe\), not a regular"
            ):
                within(TIMEOUT, call)

    def test_dev_zero_is_refused_before_reading(self) -> None:
        with pytest.raises(NotRegularFileError, match=r"/dev/zero: is a device, not a regular file"):
            within(TIMEOUT, lambda: check_regular_file("/dev/zero"))
        proc = run_bounded(
            "from haygraph.retrieval.file_reading import read_regular_file\n"
            "try:\n    read_regular_file('/dev/zero', limit=None)\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
        )
        assert proc.stdout.strip() == (
            "NotRegularFileError /dev/zero: is a device, not a regular file; only regular files are read"
        ), proc.stderr

    def test_directory_is_refused(self, tmp_path: Path) -> None:
        with pytest.raises(NotRegularFileError, match="is a directory"):
            read_regular_file(tmp_path)

    def test_size_limit_is_checked_before_reading(self, tmp_path: Path) -> None:
        path = tmp_path / "big.txt"
        path.write_bytes(b"x" * 11)
        assert read_regular_file(path, limit=11) == b"x" * 11
        with pytest.raises(
            FileTooLargeError, match=r"big\.txt: file is 11 bytes, larger than the limit of 10"
        ):
            read_regular_file(path, limit=10)
        with pytest.raises(FileTooLargeError):
            check_regular_file(path, limit=10)

    def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(UnreadableFileError, match=r"nope\.md: file does not exist"):
            read_regular_file(tmp_path / "nope.md")
