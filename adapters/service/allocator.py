"""How a `haygraph serve` process hands memory back to the system (glibc's allocator).

A serving process frees most of what each request allocates: BM25 score arrays (4-8 MB each at a
million chunks), postings, the reader's windows, the rows of a result. glibc keeps freed memory for
reuse unless told otherwise, and under concurrent requests it keeps it in several places, so the
resident size of a process climbs with load and never comes down. Measured with 4 requests at a time
on a 1M-chunk PostgreSQL store (``benchmarks/bench_serve_memory.py``; figures in docs/stores.md),
three settings keep it near its size after start:

- `give_back_large_blocks`: blocks of 128 KB and more are mapped apart and unmapped when freed;
- `limit_arenas`: at most `ARENAS` malloc arenas (glibc's default is 8 per core, one more per thread
  that finds the others locked, each keeping what its threads freed);
- `MemoryTrimmer`: every few seconds, `malloc_trim(0)` returns the free pages inside the heaps.

`serve` applies all three to its own process (a process of its own: its allocator is ours to set); an
operator's ``MALLOC_MMAP_THRESHOLD_`` / ``MALLOC_ARENA_MAX`` stay in force. Elsewhere than glibc each
does nothing and says so (False).
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
from typing import Any

logger = logging.getLogger(__name__)

MMAP_THRESHOLD = 128 * 1024
"""Blocks of at least this many bytes are mapped apart by glibc, and given back when freed."""
ARENAS = 2
"""malloc arenas a serve process may have: one for the event loop's thread, one the workers share."""
TRIM_INTERVAL_S = 5.0
"""Seconds between two `malloc_trim` calls of a `MemoryTrimmer`."""

_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def give_back_large_blocks() -> bool:
    """Fix glibc's mmap threshold at `MMAP_THRESHOLD` for this process; False where not done.

    By default glibc raises the threshold to the size of each mapped block freed (up to 32 MB), so
    after the first large numpy array of a query (BM25 scores over a million chunks are 4-8 MB each)
    later ones come from the heap and stay there when freed. Fixed, they are mapped and unmapped:
    measured with `benchmarks.bench_postgres`'s serve process on a 1M-chunk PostgreSQL store, 711 MB
    instead of 766 MB after 100 queries (658 instead of 679 after start), p50 unchanged.
    """
    libc = _libc()
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def limit_arenas() -> bool:
    """Allow this process at most `ARENAS` malloc arenas; False where not done.

    Call it before the threads that serve requests exist: arenas already made stay.
    """
    libc = _libc()
    if os.environ.get("MALLOC_ARENA_MAX") or libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_ARENA_MAX, ARENAS))


def trim() -> bool:
    """Return the free pages of every malloc heap to the system now; False where nothing could be."""
    libc = _libc()
    if libc is None or not hasattr(libc, "malloc_trim"):
        return False
    return bool(libc.malloc_trim(0))


class MemoryTrimmer:
    """A daemon thread that calls `trim` every `interval_s` seconds until `stop`.

    One call walks the heaps' free chunks (a few milliseconds for a few hundred MB of heap, holding
    each arena's lock meanwhile); where the C library has no `malloc_trim` the thread never starts.
    """

    def __init__(self, interval_s: float = TRIM_INTERVAL_S) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, but got {interval_s}")
        self.interval_s = interval_s
        self.trims = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> bool:
        """Start the thread (once); False where `malloc_trim` is not available."""
        libc = _libc()
        if libc is None or not hasattr(libc, "malloc_trim"):
            return False
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="haygraph-malloc-trim", daemon=True)
            self._thread.start()
        return True

    def stop(self) -> None:
        """Stop the thread and wait for it; idempotent."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                trim()
                self.trims += 1
            except Exception:  # never let the trimmer take the process down
                logger.exception("malloc_trim failed; the trimmer stops")
                return
