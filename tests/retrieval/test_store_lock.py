import contextlib
import os
import threading
import time

import pytest

from haygraph.retrieval.errors import StoreLockedError
from haygraph.retrieval.store_lock import StoreLock


class TestStoreLock:
    def test_exclusive_with_timeout_naming_the_holder(self, tmp_path):
        with StoreLock(tmp_path) as holder:
            assert holder.held and holder.holder() == str(os.getpid())
            start = time.monotonic()
            with pytest.raises(
                StoreLockedError, match=rf"locked by another writer \(pid {os.getpid()}\).*0\.3 s"
            ):
                StoreLock(tmp_path, timeout=0.3, poll=0.05).acquire()
            assert 0.3 <= time.monotonic() - start < 3
        assert not holder.held and holder.holder() == ""
        with StoreLock(tmp_path, timeout=0):  # free again
            pass

    def test_waiter_logs_once_and_proceeds_when_released(self, tmp_path, caplog):
        holder = StoreLock(tmp_path)
        holder.acquire()
        timer = threading.Timer(0.3, holder.release)
        timer.start()
        waiter = StoreLock(tmp_path, timeout=10, poll=0.05)
        waiter.acquire()
        timer.join()
        assert waiter.held
        waiter.release()
        waits = [r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()]
        assert len(waits) == 1 and "being written by another process" in waits[0]
        assert "the other writer finished" in caplog.text

    def test_waiter_relocks_a_replaced_lock_file(self, tmp_path):
        # the holder created the store and failed: it deletes the lock file (and maybe the directory)
        store = tmp_path / "new"
        store.mkdir()
        holder = StoreLock(store)
        holder.acquire()
        result = {}

        def wait():
            lock = StoreLock(store, timeout=10, poll=0.05)
            lock.acquire()
            result["inode"] = os.fstat(lock._fd).st_ino
            result["path_inode"] = os.stat(lock.path).st_ino
            lock.release()

        thread = threading.Thread(target=wait)
        thread.start()
        time.sleep(0.3)
        holder.release(remove_file=True)
        # as the store does: the waiter may already have made a new lock file there (then rmdir fails)
        with contextlib.suppress(OSError):
            store.rmdir()
        thread.join(10)
        assert result["inode"] == result["path_inode"]  # it holds the lock file that is on disk

    def test_not_reentrant_per_object(self, tmp_path):
        lock = StoreLock(tmp_path)
        with lock, pytest.raises(Exception, match="already held"):
            lock.acquire()

    @pytest.mark.parametrize("timeout", [-1, float("nan"), True, "5"])
    def test_bad_timeout(self, tmp_path, timeout):
        with pytest.raises(ValueError, match="timeout must be"):
            StoreLock(tmp_path, timeout=timeout)
