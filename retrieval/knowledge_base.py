"""`KnowledgeBase`: the Python API over a store and its two pipelines (index, search, save, reopen).

A thin façade over the two sides users see:

- the read side, `haygraph.retrieval.kb_reader`: open a saved store version, build and cache its
  query pipelines, search (`Hit` and `SearchResult` are in `haygraph.retrieval.search_result`);
- the write side, `haygraph.retrieval.kb_writer`: index files, documents and BEIR corpora, mirror
  directories, remove sources, save — every change under the store's writer lock.

Both sides share one store and one config; the write side drops the read side's pipelines after every
change. The names other modules import from here (`Hit`, `SearchResult`, `IndexReport`,
`RemovalReport`, `QueryRunner`, `run_pipeline`, `validate_query`, `to_hit`) stay importable from here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haystack import Document

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.errors import ArgumentError, describe_value
from haygraph.retrieval.kb_reader import KnowledgeReader, QueryRunner, new_store, open_store
from haygraph.retrieval.kb_writer import (
    IndexReport,
    KnowledgeWriter,
    RemovalReport,
    SiteReport,
    run_pipeline,
)
from haygraph.retrieval.search_result import (
    MAX_QUERY_CHARS,
    Hit,
    SearchResult,
    to_hit,
    validate_query,
)
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.store_files import store_root

if TYPE_CHECKING:  # web_sources (urllib3) loads when a site is indexed, not with every search
    from haygraph.retrieval.web_sources import CrawlSettings, PageEvent

__all__ = [
    "MAX_QUERY_CHARS",
    "Hit",
    "IndexReport",
    "KnowledgeBase",
    "QueryRunner",
    "RemovalReport",
    "SearchResult",
    "SiteReport",
    "run_pipeline",
    "to_hit",
    "validate_query",
]


class KnowledgeBase:
    """A document store with its retrieval config: index files or documents, search, save, reopen.

    >>> kb = KnowledgeBase(store_dir="kb")
    >>> kb.index(["handbook/"])
    >>> kb.search("How many days of annual leave?").hits[0].id
    """

    def __init__(self, config: RetrievalConfig | None = None, store_dir: str | Path | None = None) -> None:
        if config is not None and not isinstance(config, RetrievalConfig):
            raise ArgumentError(f"config must be a RetrievalConfig or None, but got {describe_value(config)}")
        if store_dir is not None and store_dir != "":
            store_root(store_dir)
        config = config or RetrievalConfig()
        self._reader = KnowledgeReader(config, new_store(config, store_dir))
        self._writer = KnowledgeWriter(self._reader)

    @property
    def config(self) -> RetrievalConfig:
        """The settings the store is indexed and searched with."""
        return self._reader.config

    @property
    def store(self) -> EmbeddedDocumentStore:
        """The document store (embedded, or a Qdrant collection)."""
        return self._reader.store

    @store.setter
    def store(self, store: EmbeddedDocumentStore) -> None:
        self._reader.store = store
        self._reader.forget_pipelines()

    def share_query_models(self, models: dict[tuple[str, str, str | None], Any]) -> None:
        """Keep loaded query models in `models`, shared with other knowledge bases (see `KnowledgeReader`)."""
        self._reader.share_query_models(models)

    @classmethod
    def open(cls, store_dir: str | Path | None, config: RetrievalConfig | None = None) -> KnowledgeBase:
        """Open a saved store with the settings it was indexed with, including its default query settings.

        With ``config.store.backend == "qdrant"`` the store is the Qdrant collection the config names and
        `store_dir` is ignored (pass None).

        The keys `config` sets explicitly override the store's query settings, retriever backends and
        runtime knobs; indexing settings it sets must equal the store's (`IndexSettingsMismatchError`
        names the key otherwise). See `haygraph.retrieval.store_config` for the precedence.

        Raises:
            ArgumentError: `store_dir` is not a path.
            StoreNotFoundError / CorruptStoreError: the store is missing, empty or damaged (the message
                names the file and the fix).
            ConfigError: the persisted config is invalid (the message names the store file).
            IndexSettingsMismatchError: `config` changes an indexing setting.

        """
        merged, store = open_store(store_dir, config)
        kb = cls(merged)
        kb.store = store
        return kb

    # -- the write side (`kb_writer`) ---------------------------------------------------------------
    @contextmanager
    def writing(self) -> Iterator[KnowledgeBase]:
        """Hold the store's writer lock across several calls (index, remove, save); re-entrant.

        On entry the newest saved version is loaded (see `EmbeddedDocumentStore.writing`); a second
        writer waits up to `store.lock_timeout` seconds, then gets `StoreLockedError`.
        """
        with self._writer.writing():
            yield self

    def index(
        self,
        paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        progress: bool = False,
        save: bool = True,
        meta: dict[str, Any] | None = None,
        delete_missing: bool = True,
        on_progress: Callable[[int, int], None] | None = None,
        skip_unreadable: bool = False,
    ) -> IndexReport:
        """Convert, split, embed and store files or directories (.md .txt .html .pdf); then save atomically.

        :param paths: One path or a list of paths. Source ids are relative to the directory given (or the
            file name for a file); a file already in the store keeps its id.
        :param meta: Extra metadata for every document, e.g. ``{"tenant": "acme"}``.
        :param delete_missing: Remove the sources (of the same tenant) under a given directory whose
            files are gone, so the store mirrors the directory; False keeps them.
        :param on_progress: Called with (chunks embedded or found in the cache, chunks to embed) while
            the chunks are embedded (the service's indexing jobs report it).
        :param skip_unreadable: A file named in `paths` that cannot be read (corrupt, locked) or holds no
            text is skipped and listed in the report, as a file found in a directory always is; by
            default it raises (`UnreadableFileError`, `EmptyDocumentError`) and nothing is indexed.
        :returns: An `IndexReport`, including the files skipped (with reasons) and the sources removed.
        """
        return self._writer.index(
            paths,
            progress=progress,
            save=save,
            meta=meta,
            delete_missing=delete_missing,
            on_progress=on_progress,
            skip_unreadable=skip_unreadable,
        )

    def index_site(
        self,
        url: str,
        *,
        settings: CrawlSettings | None = None,
        meta: dict[str, Any] | None = None,
        progress: bool = False,
        save: bool = True,
        on_page: Callable[[PageEvent], None] | None = None,
    ) -> SiteReport:
        """Crawl a website (a page, a sitemap or a site root) and index its pages, or re-sync them.

        Each page's source id is its canonical URL; robots.txt, the page and depth limits, the delay
        between requests and the safety limits are `settings` (`haygraph.retrieval.web_sources`).
        Indexing the same URL again re-syncs it: pages are asked for with their ETag/Last-Modified, a
        304 or an equal content hash leaves a page alone, a changed page is re-indexed, and a page that
        is gone (404/410, gone from the sitemap, now disallowed) is removed. A page that fails is listed
        and a stored copy of it kept. The crawl runs without the writer lock; its changes are applied
        under it.

        :param url: ``http://`` or ``https://`` URL.
        :param meta: Extra metadata for every page, e.g. ``{"tenant": "acme"}``.
        :param on_page: Called with a `PageEvent` after each page (progress).
        :raises UrlRefusedError: Not an http(s) URL, or a loopback/private host not allowed.
        :raises WebSourceError: The site's robots.txt cannot be read (5xx, no answer).
        """
        return self._writer.index_site(
            url, settings=settings, meta=meta, progress=progress, save=save, on_page=on_page
        )

    def index_documents(
        self, documents: list[Document], *, progress: bool = False, save: bool = True
    ) -> IndexReport:
        """Index Haystack documents you built yourself.

        `meta["source_id"]` groups chunks into sources and `meta["tenant"]` (optional) keeps each
        tenant's copy separate; every meta value must be JSON-serializable (checked before anything is
        changed).
        """
        return self._writer.index_documents(documents, progress=progress, save=save)

    def index_beir(
        self,
        corpus_path: str | Path,
        *,
        progress: bool = False,
        save: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> IndexReport:
        """Index a BEIR `corpus.jsonl` (one document per line: _id, title, text); `meta` is added to each."""
        return self._writer.index_beir(corpus_path, progress=progress, save=save, meta=meta)

    def remove_sources(
        self, sources: str | Sequence[str], *, tenant: str | None = None, save: bool = True
    ) -> RemovalReport:
        """Remove sources (all their chunks) from the store, then save atomically.

        :param sources: Source ids (as search hits show them in `source`) or paths of indexed files.
        :param tenant: Only this tenant's sources; None matches any tenant, but a name found in several
            tenants is refused.
        :raises UnknownSourceError: A name matches no source; nothing is removed then.
        """
        return self._writer.remove_sources(sources, tenant=tenant, save=save)

    def clear(self) -> None:
        """Drop every document; the next index/save replaces the saved store with the new content.

        Use it to rebuild a store from scratch (e.g. with other indexing settings). It works on a damaged
        store too, since the old content is not loaded.
        """
        self._writer.clear()

    def save(self) -> None:
        """Save the store to its directory atomically (refused if another writer saved in between)."""
        self._writer.save()

    # -- the read side (`kb_reader`) ----------------------------------------------------------------
    def runner(self, query: QueryConfig | None = None) -> QueryRunner:
        """The (cached) query pipeline for `query` (default: the KB's config).

        A query config holding one encoder family's default relevance weights gets this store's
        (`relevance_for_backend`): a fresh ``QueryConfig(mode="dense")`` carries MiniLM's, which
        call every chunk of a multilingual-e5-small store relevant.
        """
        return self._reader.runner(query)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        config: QueryConfig | RetrievalConfig | str | None = None,
    ) -> SearchResult:
        """Ranked chunks for `query`, each with a calibrated `relevance` whatever the query mode.

        `config` is a `QueryConfig`, a `RetrievalConfig` (its `query` section is used), a mode name
        ('hybrid', 'bm25', 'dense': the KB's query settings in that mode) or None (the KB's). `top_k` (an
        int >= 1; default: the config's) is how many results the ranking returns; the score-cliff cut, when
        enabled, may keep fewer. Empty or overlong queries and a bad `top_k` raise `QueryError`;
        symbol-only queries find nothing; arguments of the wrong type raise `ArgumentError` naming the
        parameter.
        """
        return self._reader.search(query, top_k=top_k, filters=filters, config=config)
