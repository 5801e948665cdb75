"""`LiveKnowledgeBase`: the store loaded once, warmed up, and swapped atomically when a new version lands.

`haygraph index` saves a store by writing a new version directory and replacing the `CURRENT`
pointer file (`EmbeddedDocumentStore.save`). The service reads that small file every
`reload_interval_s` seconds; when it names another version, the new store is opened and warmed up in
a worker thread while requests keep using the old one, then one reference assignment swaps them.

Thread safety: a loaded `KnowledgeBase` is only read by requests. Everything it builds lazily
(query pipelines for the top-k values the agent uses, the BM25 index, the embedding matrix, the
embedding model) is built by `warm_up` before the snapshot is published; a pipeline for an unusual
`top_k`/`mode` is built on demand, where a race at worst builds it twice. Reloads are serialized by
a lock; readers never take it.

Readers without an event loop to run `watch` on (the MCP server of `haygraph serve-mcp`) call
`fresh_retriever()` per request instead: it checks `CURRENT` at most every `check_interval_s`.

On a PostgreSQL store (`store.backend: postgres`) the version is the manifest row's counter instead of
`CURRENT` (one short query per check), so every process serving the same database sees a write of any
other within one check interval plus the time to load the new version.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haygraph.adapters.haystack_retriever import CROSS_LANGUAGE, HaystackRetriever
from haygraph.adapters.service.errors import NotReadyError
from haygraph.retrieval import KnowledgeBase, RetrievalConfig, SearchResult

logger = logging.getLogger(__name__)

POINTER = "CURRENT"
WARM_QUERY = "warm up"


@dataclass(frozen=True)
class Snapshot:
    """One loaded store version, ready to serve."""

    version: str
    kb: KnowledgeBase
    retriever: HaystackRetriever
    documents: int
    loaded_at: float


def read_pointer(store_dir: Path) -> str | None:
    """The store version named by `<store_dir>/CURRENT` (None when absent or unreadable)."""
    try:
        return (store_dir / POINTER).read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


class LiveKnowledgeBase:
    """The current knowledge-base snapshot of a store directory, reloaded when the store changes."""

    def __init__(
        self,
        store_dir: str | Path,
        *,
        config: RetrievalConfig | None = None,
        warm_top_ks: Sequence[int] = (3, 5),
        check_interval_s: float = 2.0,
        on_reload: Callable[[], None] | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.config = config
        self.warm_top_ks = tuple(warm_top_ks)
        self._current: Snapshot | None = None
        self._reload_lock = threading.Lock()
        self.check_interval_s = check_interval_s
        self._checked_at = float("-inf")
        self.reloads = 0
        """Number of versions swapped in after the first load."""
        self.on_reload = on_reload
        """Called (in the reloading thread) after a new version replaced the previous one."""
        self._query_models: dict[tuple[str, str, str | None], Any] = {}
        """The query models every version's knowledge base shares (loaded once, not once per reload)."""

    @property
    def current(self) -> Snapshot:
        """The snapshot serving requests now; `NotReadyError` before the first load."""
        snap = self._current
        if snap is None:
            raise NotReadyError("the knowledge base is still loading")
        return snap

    @property
    def ready(self) -> bool:
        """Whether a snapshot is loaded."""
        return self._current is not None

    def retriever(self) -> HaystackRetriever:
        """The current snapshot's retriever (for `ScopedRetriever`)."""
        return self.current.retriever

    def fresh_retriever(self) -> HaystackRetriever:
        """The current retriever, after checking for a new store version at most every `check_interval_s`.

        The check is one small file read; a new version is opened and warmed up in the calling thread
        while concurrent callers keep using the old one; a failed reload keeps the old version (logged).
        """
        now = time.monotonic()
        if now - self._checked_at >= self.check_interval_s:
            self._checked_at = now
            try:
                self.reload_if_changed()
            except Exception as exc:  # a half-written or corrupt version: keep serving the old one
                logger.warning("store reload failed, still serving the previous version: %s", exc)
        return self.current.retriever

    def store_version(self) -> str | None:
        """The store's newest saved version: `CURRENT`, or the PostgreSQL manifest's counter (None: none)."""
        config = self.config
        if config is not None and config.store.backend == "postgres":
            from haygraph.retrieval.postgres.connection import store_version

            version = store_version(config.store)
            return None if version is None else str(version)
        return read_pointer(self.store_dir)

    def load(self) -> Snapshot:
        """Open, warm up and publish the store's current version (raises the store's own errors)."""
        with self._reload_lock:
            return self._load_locked()

    def _load_locked(self) -> Snapshot:
        version = self.store_version() or "?"
        start = time.perf_counter()
        kb = KnowledgeBase.open(self.store_dir, config=self.config)
        kb.share_query_models(self._query_models)
        retriever = HaystackRetriever(kb, cross_language=CROSS_LANGUAGE)
        retriever.warm_up()
        for top_k in self.warm_top_ks:  # builds each pipeline, the BM25 index and the matrix now
            retriever.retrieve(WARM_QUERY, top_k=top_k)
        if self.config is not None and self.config.store.backend == "postgres":
            version = kb.store.version or version  # the version its BM25 segments were read at
        snap = Snapshot(version, kb, retriever, kb.store.count_documents(), time.time())
        replaced = self._current
        self._current = snap  # one reference assignment: requests see the old or the new snapshot
        if replaced is not None:
            self.reloads += 1
            if self.on_reload is not None:
                self.on_reload()
        logger.info(
            "store %s version %s loaded: %d chunks in %.1f s",
            self.store_dir,
            version,
            snap.documents,
            time.perf_counter() - start,
        )
        return snap

    def reload_if_changed(self) -> bool:
        """Load the store again if `CURRENT` names another version; True when a new one was swapped in."""
        pointer = self.store_version()
        snap = self._current
        if pointer is None or (snap is not None and pointer == snap.version):
            return False
        if not self._reload_lock.acquire(blocking=False):
            return False  # a reload is already under way
        try:
            if self._current is not None and self.store_version() == self._current.version:
                return False
            self._load_locked()
            return True
        finally:
            self._reload_lock.release()

    async def watch(self, interval_s: float) -> None:
        """Poll `CURRENT` every `interval_s` s until cancelled; a failed reload keeps the old version."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await asyncio.to_thread(self.reload_if_changed)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a half-written or corrupt version: keep serving the old one
                logger.warning("store reload failed, still serving the previous version: %s", exc)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        mode: str | None = None,
        filters: dict[str, Any] | None = None,
    ) -> SearchResult:
        """Search the current snapshot like `haygraph search` (`top_k` also caps the score-cliff cut)."""
        kb = self.current.kb
        updates: dict[str, Any] = {}
        if mode:
            updates["mode"] = mode
        if top_k:
            updates.update(top_k=top_k, cut={"max_keep": top_k})
        config = kb.config.with_overrides(query=updates).query if updates else None
        return kb.search(query, filters=filters, config=config)
