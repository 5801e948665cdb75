"""The write side of a knowledge base: index files and documents, sync directories, remove, save.

`KnowledgeWriter` changes the store of a `KnowledgeReader` (`haygraph.retrieval.kb_reader`) and drops
that reader's query pipelines after every change. Every change runs inside `writing()`: the store's
writer lock is held and the newest saved version is loaded first, so concurrent writers (other
processes, other KnowledgeBase objects) never lose each other's updates. Copying a store to another
backend is `haygraph.retrieval.store_copy`.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from haystack import Document, Pipeline

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import (
    ArgumentError,
    EmptyCorpusError,
    InputError,
    RetrievalError,
    describe_value,
)
from haygraph.retrieval.index_checks import adopted_encoder, check_compatible, check_saveable
from haygraph.retrieval.kb_reader import KnowledgeReader
from haygraph.retrieval.pipelines import build_indexing_pipeline
from haygraph.retrieval.sources import (
    SourceKey,
    check_extra_meta,
    known_hashes,
    known_sources,
    match_sources,
    source_key,
    sources_under,
)
from haygraph.retrieval.store import EmbeddedDocumentStore, check_storable

if TYPE_CHECKING:
    from haygraph.retrieval.web_sources import CrawlSettings, PageEvent, PageState

logger = logging.getLogger(__name__)


@dataclass
class IndexReport:
    """Counts from one indexing run.

    `removed_stale` counts chunks of re-indexed sources that are no longer produced (edited text);
    `removed_sources` lists the sources removed because their files are gone from an indexed directory;
    `skipped` lists the files that were not indexed, as ``"path: reason"``; `unchanged` counts the
    sources skipped before conversion because their file and meta hash (``meta["source_hash"]``) is
    the stored one (they are not in `sources` or `chunks`).
    """

    sources: int
    chunks: int
    embedded: int
    from_cache: int
    removed_stale: int
    total_documents: int
    seconds: float
    removed_sources: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unchanged: int = 0
    embedder: str = ""
    """The store's embedding model and backend, e.g. ``multilingual-e5-small (e5-multilingual)``."""


@dataclass
class SiteReport:
    """What `KnowledgeBase.index_site` did to each page of a site.

    `new`, `changed`, `unchanged` and `removed` are source ids (canonical URLs); `removed` maps each
    vanished page to why (HTTP 404/410, gone from the sitemap, disallowed by robots.txt); `skipped` and
    `failed` are ``"url: reason"`` lines (a failed page that was stored before is kept); `unchecked`
    are stored pages the page limit left unvisited (kept). `index` is the indexing run of the new and
    changed pages (None when there were none).
    """

    site: str
    new: list[str]
    changed: list[str]
    unchanged: list[str]
    removed: dict[str, str]
    skipped: list[str]
    failed: list[str]
    unchecked: list[str]
    requests: int
    not_modified: int
    crawl_seconds: float
    seconds: float
    total_documents: int
    index: IndexReport | None = None


@dataclass
class RemovalReport:
    """What `KnowledgeBase.remove_sources` removed."""

    sources: list[str]
    chunks: int
    total_documents: int


class KnowledgeWriter:
    """Indexes into, and removes from, the store of `reader`; saves it atomically."""

    def __init__(self, reader: KnowledgeReader) -> None:
        self.reader = reader

    @property
    def config(self) -> RetrievalConfig:
        """The reader's settings (indexing may settle its encoder: `backend: auto`)."""
        return self.reader.config

    @config.setter
    def config(self, value: RetrievalConfig) -> None:
        self.reader.config = value
        self.reader.forget_pipelines()

    @property
    def store(self) -> EmbeddedDocumentStore:
        """The reader's store."""
        return self.reader.store

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold the store's writer lock (re-entrant); on entry the newest saved version is loaded."""
        with self.store.writing():
            yield

    def _prepare(self) -> None:
        """Settle the encoder and check the settings against the store (called under the lock)."""
        adopted = adopted_encoder(self.config, self.store)
        if adopted is not None:
            self.config = adopted
        check_compatible(self.config, self.store)
        check_saveable(self.config, self.store)

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
        """See `KnowledgeBase.index`."""
        sources = _as_paths(paths)
        extra = check_extra_meta(meta)
        tenant = extra.get("tenant")
        with self.writing():
            self._prepare()
            pipe = build_indexing_pipeline(self.config, self.store, from_files=True, progress_bar=progress)
            embedder = pipe.get_component("embedder")
            assert isinstance(embedder, CachedDocumentEmbedder)
            embedder.on_progress = on_progress
            stored = self.store.source_documents(tenant)
            data = {
                "converter": {
                    "sources": [str(p) for p in sources],
                    "meta": extra,
                    "known_sources": known_sources(stored, tenant),
                    "known_hashes": known_hashes(stored, tenant),
                    "skip_unreadable": skip_unreadable,
                }
            }
            del stored
            # a folder's and an archive's sources are mirrored: those no longer in it are removed
            directories = [
                Path(p).expanduser()
                for p in sources
                if Path(p).expanduser().is_dir()
                or (Path(p).suffix.lower() == ".zip" and Path(p).expanduser().is_file())
            ]
            sync = (directories, tenant) if delete_missing and directories else None
            return self._run_indexing(pipe, [data], save, sync=sync)

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
        """See `KnowledgeBase.index_site`."""
        from haygraph.retrieval.web_sources import crawl_site, normalize_url

        if not isinstance(url, str):
            raise ArgumentError(f"url must be a string, but got {describe_value(url)}")
        extra = check_extra_meta(meta)
        tenant = extra.get("tenant")
        site = normalize_url(url) if url.strip() else url
        start = time.perf_counter()
        with self.writing():  # the stored state of the site's pages, read under the lock
            known = _known_pages(self.store.source_documents(tenant), tenant, site)
        # the crawl runs without the lock (it may take minutes); its changes are applied under it
        crawl = crawl_site(url, settings, known, extra, on_page)
        gone = {(tenant, source_id) for source_id in crawl.vanished}
        report: IndexReport | None = None
        with self.writing():
            self._prepare()
            removed = self.store.delete_sources(gone) if gone else 0
            if crawl.documents:
                pipe = build_indexing_pipeline(
                    self.config, self.store, from_files=False, progress_bar=progress
                )
                report = self._run_indexing(pipe, [{"cleaner": {"documents": crawl.documents}}], save)
            elif removed:
                self._build_bm25()
                if self.store.path and (save or _saves_always(self.store)):
                    self.store.save()
                self.reader.forget_pipelines()
            if removed:
                logger.info("removed %d vanished page(s) of %s: %s", len(gone), site, sorted(crawl.vanished))
            total = self.store.count_documents()
        return SiteReport(
            site=crawl.site,
            new=crawl.new,
            changed=crawl.changed,
            unchanged=crawl.unchanged,
            removed=dict(sorted(crawl.vanished.items())),
            skipped=crawl.skipped,
            failed=crawl.failed,
            unchecked=crawl.unchecked,
            requests=crawl.requests,
            not_modified=crawl.not_modified,
            crawl_seconds=crawl.seconds,
            seconds=time.perf_counter() - start,
            total_documents=total,
            index=report,
        )

    def index_documents(
        self, documents: Iterable[Document], *, progress: bool = False, save: bool = True
    ) -> IndexReport:
        """Index Haystack documents you built yourself (documented on `KnowledgeBase.index_documents`).

        A store that streams its writes (PostgreSQL) takes any iterable and runs the pipeline on
        `STREAM_BATCH` documents at a time, so the job never holds all of them; others take a list.
        """
        streams = getattr(self.store, "streams_writes", False)
        if isinstance(documents, list | tuple) or not streams:
            if not isinstance(documents, list | tuple) or not all(isinstance(d, Document) for d in documents):
                raise ArgumentError(
                    "documents must be a list of haystack Document objects, but got "
                    f"{describe_value(documents)}"
                )
            if not documents:
                raise EmptyCorpusError("no documents given to index")
            for doc in documents:
                check_storable(doc)
        elif isinstance(documents, str | bytes) or not isinstance(documents, Iterable):
            raise ArgumentError(
                f"documents must be haystack Document objects (a list or an iterable), but got "
                f"{describe_value(documents)}"
            )
        with self.writing():
            self._prepare()
            pipe = build_indexing_pipeline(self.config, self.store, from_files=False, progress_bar=progress)
            if not streams:
                return self._run_indexing(pipe, [{"cleaner": {"documents": list(documents)}}], save)
            runs = ({"cleaner": {"documents": batch}} for batch in _checked_batches(documents))
            return self._run_indexing(pipe, runs, save)

    def index_beir(
        self,
        corpus_path: str | Path,
        *,
        progress: bool = False,
        save: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> IndexReport:
        """See `KnowledgeBase.index_beir`."""
        if isinstance(corpus_path, bool) or not isinstance(corpus_path, str | os.PathLike):
            raise ArgumentError(f"corpus_path must be a file path, but got {describe_value(corpus_path)}")
        extra = check_extra_meta(meta)
        documents = read_beir_corpus(corpus_path)
        if extra:
            documents = [replace(d, meta={**extra, **d.meta}) for d in documents]
        return self.index_documents(documents, progress=progress, save=save)

    def _run_indexing(
        self,
        pipe: Pipeline,
        runs: Iterable[dict[str, Any]],
        save: bool,
        sync: tuple[list[Path], str | None] | None = None,
    ) -> IndexReport:
        """Run the indexing pipeline once per input in `runs` (one, or a stream of batches), then save."""
        start = time.perf_counter()
        embedder = pipe.get_component("embedder")
        assert isinstance(embedder, CachedDocumentEmbedder)
        chunks = 0
        sources: set[SourceKey] = set()
        fresh: set[str] = set()
        skipped: list[str] = []
        unchanged: list[str] = []
        stats = {"embedded": 0, "cached": 0}
        tenant = None
        for data in runs:
            outputs = {"dedup", "cleaner"} | ({"converter"} if "converter" in data else set())
            result = run_pipeline(pipe, data, include_outputs_from=outputs)
            produced: list[Document] = result["dedup"]["documents"]
            skipped += result.get("converter", {}).get("skipped", [])
            unchanged += result.get("converter", {}).get("unchanged", [])
            tenant = ((data.get("converter") or {}).get("meta") or {}).get("tenant")
            chunks += len(produced)
            sources |= {source_key(c) for c in produced}
            fresh |= {c.id for c in produced}
            for key in stats:
                stats[key] += embedder.stats[key]
        if not chunks and not unchanged:
            raise EmptyCorpusError("nothing to index: every input was empty")
        removed = self.store.drop_stale(sources, fresh) if sources else 0
        produced_keys = sources | {(tenant, source_id) for source_id in unchanged}
        gone = self._remove_missing(*sync, produced=produced_keys) if sync else []
        if self.config.embedder.backend == "auto" and embedder.backend != "auto":
            # the first documents chose the encoder (`choose_backend`); the store records the choice
            self.config = self.config.with_overrides(embedder={"backend": embedder.backend})
        config = self.config.model_dump(mode="json")
        changed = bool(chunks or removed or gone) or self.store.dirty or not self.store.path
        if changed or self.store.meta.get("config") != config:
            # The whole config is persisted: what shaped the index, and the store's default query settings.
            self.store.meta["config"] = config
            self._build_bm25()
            if self.store.path and (save or _saves_always(self.store)):
                self.store.save()
        self.reader.forget_pipelines()
        return IndexReport(
            sources=len(sources),
            chunks=chunks,
            embedded=stats["embedded"],
            from_cache=stats["cached"],
            removed_stale=removed,
            total_documents=self.store.count_documents(),
            seconds=time.perf_counter() - start,
            removed_sources=gone,
            skipped=skipped,
            unchanged=len(unchanged),
            embedder=f"{self.config.embedder.model} ({self.config.embedder.backend})",
        )

    def _remove_missing(
        self, directories: list[Path], tenant: str | None, produced: set[SourceKey]
    ) -> list[str]:
        """Drop the sources of `tenant` under `directories` that this run did not produce (files gone)."""
        gone = sources_under(self.store.source_documents(tenant), directories, tenant) - produced
        self.store.delete_sources(gone)
        if gone:
            logger.info(
                "removed %d source(s) whose files are gone: %s", len(gone), sorted(k[1] for k in gone)
            )
        return sorted(k[1] for k in gone)

    def remove_sources(
        self, sources: str | Sequence[str], *, tenant: str | None = None, save: bool = True
    ) -> RemovalReport:
        """See `KnowledgeBase.remove_sources`."""
        names = [sources] if isinstance(sources, str | os.PathLike) else sources
        if not isinstance(names, list | tuple) or not all(isinstance(n, str | os.PathLike) for n in names):
            raise ArgumentError(f"sources must be source ids or paths, but got {describe_value(sources)}")
        if not names:
            raise InputError("no sources given to remove")
        if tenant is not None and not isinstance(tenant, str):
            raise ArgumentError(f"tenant must be a string or None, but got {describe_value(tenant)}")
        with self.writing():
            keys = match_sources(
                self.store.source_documents(), [str(n) for n in names], tenant, str(self.store.path)
            )
            removed = self.store.delete_sources(keys)
            self._build_bm25()
            if self.store.path and (save or _saves_always(self.store)):
                self.store.save()
        self.reader.forget_pipelines()
        return RemovalReport(
            sources=sorted(k[1] for k in keys), chunks=removed, total_documents=self.store.count_documents()
        )

    def clear(self) -> None:
        """See `KnowledgeBase.clear`."""
        self.store.clear()
        self.reader.forget_pipelines()

    def _build_bm25(self) -> None:
        """Build (and so persist with the store) the BM25 index; relevance scoring needs it in every mode."""
        self.store.persist_bm25(BM25Index.from_config(self.config.bm25))

    def save(self) -> None:
        """See `KnowledgeBase.save`."""
        self.store.save()


STREAM_BATCH = 2000
"""Documents per pipeline run when `index_documents` streams into a PostgreSQL store."""


def _checked_batches(documents: Iterable[Any]) -> Iterator[list[Document]]:
    """`documents` in lists of `STREAM_BATCH`, each document checked; an empty input is an error."""
    batch: list[Document] = []
    seen = False
    for doc in documents:
        if not isinstance(doc, Document):
            raise ArgumentError(
                f"documents must be haystack Document objects, but one is {describe_value(doc)}"
            )
        check_storable(doc)
        batch.append(doc)
        seen = True
        if len(batch) >= STREAM_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch
    if not seen:
        raise EmptyCorpusError("no documents given to index")


def _known_pages(documents: Iterable[Document], tenant: str | None, site: str) -> dict[str, PageState]:
    """The stored pages of the crawl of `site` for `tenant`: ``{source id: PageState}``."""
    from haygraph.retrieval.web_sources import PageState

    pages: dict[str, PageState] = {}
    for doc in documents:
        key = source_key(doc)
        if key[0] != tenant or key[1] in pages or doc.meta.get("site") != site:
            continue
        pages[key[1]] = PageState(
            etag=_text_or_none(doc.meta.get("etag")),
            last_modified=_text_or_none(doc.meta.get("last_modified")),
            source_hash=_text_or_none(doc.meta.get("source_hash")),
        )
    return pages


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _saves_always(store: EmbeddedDocumentStore) -> bool:
    """A Qdrant collection is the store itself: every change is pushed (`save=False` only skips disk)."""
    return getattr(store, "settings", None) is not None


def _as_paths(paths: Any) -> list[str | os.PathLike[str]]:
    """`index`'s `paths` as a list: one path (str or PathLike) is one path, never iterated per character."""
    if isinstance(paths, str | os.PathLike):
        return [paths]
    if not isinstance(paths, list | tuple) or not all(
        isinstance(p, str | os.PathLike) and not isinstance(p, bool) for p in paths
    ):
        raise ArgumentError(f"paths must be a path or a list of paths, but got {describe_value(paths)}")
    if not paths or any(str(p).strip() == "" for p in paths):
        raise EmptyCorpusError("no files or directories given to index (empty path list or an empty path)")
    return list(paths)


def run_pipeline(pipe: Pipeline, data: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    """Run a Haystack pipeline, re-raising our own errors that Haystack wrapped in PipelineRuntimeError."""
    try:
        return pipe.run(data, **kwargs)
    except RetrievalError:
        raise
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, RetrievalError):
            cause = cause.__cause__
        if cause is not None:
            raise cause from exc
        raise RetrievalError(f"pipeline failed: {exc}") from exc
