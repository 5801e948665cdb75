"""`KnowledgeBase`: the Python API over the store and the two pipelines (build, index, search, save)."""

from __future__ import annotations

import logging
import os
import re
import reprlib
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import (
    BUNDLED_MODEL,
    QueryConfig,
    RetrievalConfig,
    relevance_for_backend,
    saved_encoder,
)
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder, cache_model_key
from haygraph.retrieval.errors import (
    ArgumentError,
    ConfigError,
    EmptyCorpusError,
    InputError,
    ModelUnavailableError,
    QueryError,
    RetrievalError,
)
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import (
    QueryPipelineInfo,
    build_indexing_pipeline,
    build_query_pipeline,
    check_reranker,
    check_top_k,
    query_inputs,
)
from haygraph.retrieval.query_embedder import QueryEmbedder, QueryMemo
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
from haygraph.retrieval.store_config import merge_store_config
from haygraph.retrieval.store_files import store_root

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 4000
_HAS_WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Hit:
    """One ranked chunk."""

    id: str
    content: str
    score: float
    source: str
    heading_path: list[str]
    meta: dict[str, Any]

    @property
    def relevance(self) -> float | None:
        """Absolute relevance in (0, 1) from the pipeline's `RelevanceScorer` (calibrated per query mode)."""
        value = self.meta.get("relevance")
        return None if value is None else float(value)

    @property
    def page(self) -> int | None:
        """1-based page (PDF page, slide or sheet) where the chunk starts, when the source has pages."""
        return _int_meta(self.meta, "page")

    @property
    def char_start(self) -> int | None:
        """Offset of the chunk's first character in its source text (see `ChunkLocator`), when known."""
        return _int_meta(self.meta, "char_start")

    @property
    def char_end(self) -> int | None:
        """Offset just past the chunk's last character in its source text, when known."""
        return _int_meta(self.meta, "char_end")

    @property
    def cosine(self) -> float | None:
        """The chunk's dense cosine similarity with the query, when known."""
        value = self.meta.get("dense_score")
        return None if value is None else float(value)


def _int_meta(meta: dict[str, Any], key: str) -> int | None:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class SearchResult:
    """Ranked hits plus what happened on the way (reranked or not, timings)."""

    query: str
    hits: list[Hit]
    reranked: bool | None = None
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `haygraph search --json` and the service's `/v1/search` (ranks from 1)."""
        return {
            "query": self.query,
            "reranked": self.reranked,
            "notes": self.notes,
            "timings_ms": self.timings_ms,
            "results": [
                {
                    "rank": i,
                    "id": h.id,
                    "score": h.score,
                    "relevance": h.relevance,
                    "source": h.source,
                    "heading_path": h.heading_path,
                    "page": h.page,
                    "char_start": h.char_start,
                    "char_end": h.char_end,
                    "text": h.content,
                }
                for i, h in enumerate(self.hits, start=1)
            ],
        }


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
class RemovalReport:
    """What `KnowledgeBase.remove_sources` removed."""

    sources: list[str]
    chunks: int
    total_documents: int


class QueryRunner:
    """A built query pipeline, run the way `KnowledgeBase.search` runs it.

    Inputs are mapped by `haygraph.retrieval.pipelines.query_inputs` (the same mapping a caller of
    `Pipeline.run` uses); components run through `haygraph.retrieval.pipeline_runner.run_direct`
    (measured 7× faster per query than `Pipeline.run`, whose per-input deep copies dominate at our
    retrievers' speed), which opens the same tracing spans. Every stage, relevance included, is a
    component of `pipeline`.
    """

    def __init__(self, pipeline: Pipeline, info: QueryPipelineInfo) -> None:
        self.pipeline = pipeline
        self.info = info
        self._warm = False

    def warm_up(self) -> None:
        """Load models and indexes once."""
        if not self._warm:
            self.pipeline.warm_up()
            self._warm = True

    def run(
        self, query: str, *, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> list[Document]:
        """Run the pipeline for one (already validated) query and return its ranked documents."""
        self.warm_up()
        data = query_inputs(self.pipeline, query, filters=filters, top_k=top_k)
        result = run_direct(self.pipeline, data, include_outputs_from={self.info.output})
        docs: list[Document] = result[self.info.output]["documents"]
        return docs

    def embed_queries(self, queries: Sequence[str]) -> int:
        """Embed `queries` in batches ahead of `run` (no-op for a pipeline that embeds no query).

        The vectors go to the query memo the knowledge base's pipelines share, so each later `run` of
        one of these queries skips its embedding. Returns how many queries were embedded (those already
        remembered are not). Used by the evaluation harness: one batched pass over thousands of queries
        instead of one model call per query.
        """
        if "text_embedder" not in self.pipeline.graph.nodes:
            return 0
        embedder = self.pipeline.get_component("text_embedder")
        return embedder.remember(queries) if isinstance(embedder, QueryEmbedder) else 0


class KnowledgeBase:
    """A document store with its retrieval config: index files or documents, search, save, reopen.

    >>> kb = KnowledgeBase(store_dir="kb")
    >>> kb.index(["handbook/"])
    >>> kb.search("How many days of annual leave?").hits[0].id
    """

    def __init__(self, config: RetrievalConfig | None = None, store_dir: str | Path | None = None) -> None:
        if config is not None and not isinstance(config, RetrievalConfig):
            raise ArgumentError(
                f"config must be a RetrievalConfig or None, but got {_describe_value(config)}"
            )
        if store_dir is not None and store_dir != "":
            store_root(store_dir)
        self.config = config or RetrievalConfig()
        self.store = _new_store(self.config, store_dir)
        self._runners: dict[str, QueryRunner] = {}
        self._query_memo = QueryMemo()
        self._query_models: dict[tuple[str, str, str | None], Any] = {}

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
        if config is not None and config.store.backend == "qdrant":
            return cls._open_qdrant(config)
        if store_dir is None:
            raise ArgumentError(
                "store_dir must be a directory path (it may be None only when config.store.backend is qdrant)"
            )
        store = EmbeddedDocumentStore.load(store_dir)
        where = str((store.version_dir or Path(store_dir)) / "manifest.json")
        kb = cls(merge_store_config(store.meta.get("config"), config, where=where), store_dir)
        kb.store = store
        return kb

    @classmethod
    def _open_qdrant(cls, config: RetrievalConfig) -> KnowledgeBase:
        from haygraph.retrieval.qdrant.store import QdrantStore

        store = QdrantStore.open(config.store, config.bm25)
        merged = merge_store_config(store.meta.get("config"), config, where=store.path or "")
        merged = merged.with_overrides(store=config.store.model_dump())  # where it is now, not where it was
        store.use_bm25(merged.bm25)
        kb = cls(merged)
        kb.store = store
        return kb

    # -- indexing ---------------------------------------------------------------------------------
    # Every change runs inside `writing()`: the store's writer lock is held and the newest saved version
    # is loaded first, so concurrent writers (other processes, other KnowledgeBase objects) never lose
    # each other's updates.
    @contextmanager
    def writing(self) -> Iterator[KnowledgeBase]:
        """Hold the store's writer lock across several calls (index, remove, save); re-entrant.

        On entry the newest saved version is loaded (see `EmbeddedDocumentStore.writing`); a second
        writer waits up to `store.lock_timeout` seconds, then gets `StoreLockedError`.
        """
        with self.store.writing():
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
    ) -> IndexReport:
        """Convert, split, embed and store files or directories (.md .txt .html .pdf); then save atomically.

        :param paths: One path or a list of paths. Source ids are relative to the directory given (or the
            file name for a file); a file already in the store keeps its id.
        :param meta: Extra metadata for every document, e.g. ``{"tenant": "acme"}``.
        :param delete_missing: Remove the sources (of the same tenant) under a given directory whose
            files are gone, so the store mirrors the directory; False keeps them.
        :param on_progress: Called with (chunks embedded or found in the cache, chunks to embed) while
            the chunks are embedded (the service's indexing jobs report it).
        :returns: An `IndexReport`, including the files skipped (with reasons) and the sources removed.
        """
        sources = _as_paths(paths)
        extra = check_extra_meta(meta)
        tenant = extra.get("tenant")
        with self.writing():
            self._adopt_saved_embedder()
            self._check_compatible()
            self._check_saveable()
            pipe = build_indexing_pipeline(self.config, self.store, from_files=True, progress_bar=progress)
            embedder = pipe.get_component("embedder")
            assert isinstance(embedder, CachedDocumentEmbedder)
            embedder.on_progress = on_progress
            data = {
                "converter": {
                    "sources": [str(p) for p in sources],
                    "meta": extra,
                    "known_sources": known_sources(self.store.documents, tenant),
                    "known_hashes": known_hashes(self.store.documents, tenant),
                }
            }
            directories = [Path(p).expanduser() for p in sources if Path(p).expanduser().is_dir()]
            sync = (directories, tenant) if delete_missing and directories else None
            return self._run_indexing(pipe, data, save, sync=sync)

    def index_documents(
        self, documents: list[Document], *, progress: bool = False, save: bool = True
    ) -> IndexReport:
        """Index Haystack documents you built yourself.

        `meta["source_id"]` groups chunks into sources and `meta["tenant"]` (optional) keeps each
        tenant's copy separate; every meta value must be JSON-serializable (checked before anything is
        changed).
        """
        if not isinstance(documents, list | tuple) or not all(isinstance(d, Document) for d in documents):
            raise ArgumentError(
                f"documents must be a list of haystack Document objects, but got {_describe_value(documents)}"
            )
        if not documents:
            raise EmptyCorpusError("no documents given to index")
        for doc in documents:
            check_storable(doc)
        with self.writing():
            self._adopt_saved_embedder()
            self._check_compatible()
            self._check_saveable()
            pipe = build_indexing_pipeline(self.config, self.store, from_files=False, progress_bar=progress)
            return self._run_indexing(pipe, {"cleaner": {"documents": list(documents)}}, save)

    def index_beir(
        self,
        corpus_path: str | Path,
        *,
        progress: bool = False,
        save: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> IndexReport:
        """Index a BEIR `corpus.jsonl` (one document per line: _id, title, text); `meta` is added to each."""
        if isinstance(corpus_path, bool) or not isinstance(corpus_path, str | os.PathLike):
            raise ArgumentError(f"corpus_path must be a file path, but got {_describe_value(corpus_path)}")
        extra = check_extra_meta(meta)
        documents = read_beir_corpus(corpus_path)
        if extra:
            documents = [replace(d, meta={**extra, **d.meta}) for d in documents]
        return self.index_documents(documents, progress=progress, save=save)

    def _run_indexing(
        self,
        pipe: Pipeline,
        data: dict[str, Any],
        save: bool,
        sync: tuple[list[Path], str | None] | None = None,
    ) -> IndexReport:
        start = time.perf_counter()
        outputs = {"dedup", "cleaner"} | ({"converter"} if "converter" in data else set())
        result = run_pipeline(pipe, data, include_outputs_from=outputs)
        chunks: list[Document] = result["dedup"]["documents"]
        skipped: list[str] = result.get("converter", {}).get("skipped", [])
        unchanged: list[str] = result.get("converter", {}).get("unchanged", [])
        if not chunks and not unchanged:
            raise EmptyCorpusError("nothing to index: every input was empty")
        embedder = pipe.get_component("embedder")
        assert isinstance(embedder, CachedDocumentEmbedder)
        removed = self._remove_stale(chunks)
        tenant = ((data.get("converter") or {}).get("meta") or {}).get("tenant")
        produced = {source_key(c) for c in chunks} | {(tenant, source_id) for source_id in unchanged}
        gone = self._remove_missing(*sync, produced=produced) if sync else []
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
        self._runners.clear()
        return IndexReport(
            sources=len({source_key(c) for c in chunks}),
            chunks=len(chunks),
            embedded=embedder.stats["embedded"],
            from_cache=embedder.stats["cached"],
            removed_stale=removed,
            total_documents=self.store.count_documents(),
            seconds=time.perf_counter() - start,
            removed_sources=gone,
            skipped=skipped,
            unchanged=len(unchanged),
            embedder=f"{self.config.embedder.model} ({self.config.embedder.backend})",
        )

    def _remove_stale(self, chunks: list[Document]) -> int:
        """Drop chunks of re-indexed sources that are no longer produced (edited or deleted text)."""
        sources = {source_key(c) for c in chunks}
        fresh = {c.id for c in chunks}
        stale = [d.id for d in self.store.documents if source_key(d) in sources and d.id not in fresh]
        self.store.delete_documents(stale)
        return len(stale)

    def _remove_missing(
        self, directories: list[Path], tenant: str | None, produced: set[SourceKey]
    ) -> list[str]:
        """Drop the sources of `tenant` under `directories` that this run did not produce (files gone)."""
        gone = sources_under(self.store.documents, directories, tenant) - produced
        self._delete_sources(gone)
        if gone:
            logger.info(
                "removed %d source(s) whose files are gone: %s", len(gone), sorted(k[1] for k in gone)
            )
        return sorted(k[1] for k in gone)

    def _delete_sources(self, keys: set[SourceKey]) -> int:
        ids = [d.id for d in self.store.documents if source_key(d) in keys]
        self.store.delete_documents(ids)
        return len(ids)

    def _adopt_saved_embedder(self) -> None:
        """With backend "auto", a store that holds vectors keeps its encoder (called under the lock)."""
        embedder = self.config.embedder
        if embedder.backend != "auto" or embedder.model != BUNDLED_MODEL or not self.store.count_documents():
            return
        keep = saved_encoder((self.store.meta.get("config") or {}).get("embedder"))
        if keep:
            self.config = self.config.with_overrides(embedder=keep)
            self._runners.clear()

    def _check_compatible(self) -> None:
        """Refuse to add embeddings of one model to a store built with another (called under the lock)."""
        embedder = (self.store.meta.get("config") or {}).get("embedder") or {}
        saved, wanted = embedder.get("model"), self.config.embedder.model
        fix = (
            "open it with its own settings (KnowledgeBase.open / no --config), or index into a new directory"
        )
        if saved and saved != wanted and self.store.count_documents():
            raise ConfigError(
                f"store {self.store.path} was built with embedder.model {saved!r}, but this config uses "
                f"{wanted!r}; {fix}"
            )
        # int8 vectors differ from fp32 ones (torch and ONNX fp32 give the same vectors): never mix them
        saved_backend = embedder.get("backend", "torch")
        wanted_backend = self.config.embedder.backend
        if (
            saved
            and self.store.count_documents()
            and cache_model_key(wanted, saved_backend) != cache_model_key(wanted, wanted_backend)
        ):
            raise ConfigError(
                f"store {self.store.path} was built with embedder.backend {saved_backend!r}, whose vectors "
                f"differ from {wanted_backend!r}'s; {fix}"
            )

    def _check_saveable(self) -> None:
        """Refuse to make a reranker that cannot load the store's default (every default search needs it).

        Checked before anything is indexed, for a reranker the store does not hold yet; one it already
        holds (saved before this check, or deleted since) is skipped at query time instead (`runner`).
        With ``on_unavailable: skip`` a model missing offline is accepted: searches then say it was skipped.
        """
        reranker = self.config.query.reranker
        if reranker.model is None or reranker.model == self._saved_reranker():
            return
        try:
            check_reranker(reranker)
        except (ModelUnavailableError, ConfigError) as exc:
            if isinstance(exc, ModelUnavailableError) and reranker.on_unavailable == "skip":
                return
            raise ConfigError(
                f"query.reranker.model {reranker.model!r} cannot be saved as the store's default: {exc}; "
                "nothing was indexed or saved"
            ) from exc

    def _saved_reranker(self) -> str | None:
        """The reranker model the store's saved config names (None: none, or no saved config)."""
        query = (self.store.meta.get("config") or {}).get("query") or {}
        model = (query.get("reranker") or {}).get("model")
        return model if isinstance(model, str) else None

    def remove_sources(
        self, sources: str | Sequence[str], *, tenant: str | None = None, save: bool = True
    ) -> RemovalReport:
        """Remove sources (all their chunks) from the store, then save atomically.

        :param sources: Source ids (as search hits show them in `source`) or paths of indexed files.
        :param tenant: Only this tenant's sources; None matches any tenant, but a name found in several
            tenants is refused.
        :raises UnknownSourceError: A name matches no source; nothing is removed then.
        """
        names = [sources] if isinstance(sources, str | os.PathLike) else sources
        if not isinstance(names, list | tuple) or not all(isinstance(n, str | os.PathLike) for n in names):
            raise ArgumentError(f"sources must be source ids or paths, but got {_describe_value(sources)}")
        if not names:
            raise InputError("no sources given to remove")
        if tenant is not None and not isinstance(tenant, str):
            raise ArgumentError(f"tenant must be a string or None, but got {_describe_value(tenant)}")
        with self.writing():
            keys = match_sources(self.store.documents, [str(n) for n in names], tenant, str(self.store.path))
            removed = self._delete_sources(keys)
            self._build_bm25()
            if self.store.path and (save or _saves_always(self.store)):
                self.store.save()
        self._runners.clear()
        return RemovalReport(
            sources=sorted(k[1] for k in keys), chunks=removed, total_documents=self.store.count_documents()
        )

    def clear(self) -> None:
        """Drop every document; the next index/save replaces the saved store with the new content.

        Use it to rebuild a store from scratch (e.g. with other indexing settings). It works on a damaged
        store too, since the old content is not loaded.
        """
        self.store.clear()
        self._runners.clear()

    def _build_bm25(self) -> None:
        """Build (and so persist with the store) the bm25s index; relevance scoring needs it in every mode."""
        self.store.bm25_index(BM25Index.from_config(self.config.bm25))

    def save(self) -> None:
        """Save the store to its directory atomically (refused if another writer saved in between)."""
        self.store.save()

    # -- search -----------------------------------------------------------------------------------
    def runner(self, query: QueryConfig | None = None) -> QueryRunner:
        """The (cached) query pipeline for `query` (default: the KB's config).

        A query config holding one encoder family's default relevance weights gets this store's
        (`relevance_for_backend`): a fresh ``QueryConfig(mode="dense")`` carries MiniLM's, which
        call every chunk of a multilingual-e5-small store relevant.
        """
        q = query or self.config.query
        relevance = relevance_for_backend(q.relevance, self.config.embedder.backend)
        if relevance is not q.relevance:
            q = q.model_copy(update={"relevance": relevance})
        key = q.model_dump_json()
        if key not in self._runners:
            q, note = self._without_unloadable_saved_reranker(q)
            pipe, info = build_query_pipeline(self.config, self.store, q)
            if note:
                info.reranked = False
                info.notes.append(note)
            if "text_embedder" in pipe.graph.nodes:
                embedder = pipe.get_component("text_embedder")
                if isinstance(embedder, QueryEmbedder):  # one query embedding and model for every pipeline
                    embedder.share_memo(self._query_memo)
                    embedder.share_models(self._query_models)
            self._runners[key] = QueryRunner(pipe, info)
        return self._runners[key]

    def _without_unloadable_saved_reranker(self, q: QueryConfig) -> tuple[QueryConfig, str | None]:
        """`q` without its reranker, and a note, if that reranker is the store's default and cannot load.

        A store saved before `_check_saveable` existed, or whose reranker model was deleted since, would
        otherwise fail every default search; it searches without reranking instead, and says so. A
        reranker the caller chose (another model) keeps its `on_unavailable` behaviour.
        """
        if q.reranker.model is None or q.reranker.model != self._saved_reranker():
            return q, None
        try:
            check_reranker(q.reranker)
        except (ModelUnavailableError, ConfigError) as exc:
            note = (
                f"reranker skipped: the store's default reranker cannot be loaded ({exc}); results are not "
                "reranked. Fix: re-index with a --config whose query.reranker.model loads (or is null)"
            )
            logger.warning("%s", note)
            return q.model_copy(update={"reranker": q.reranker.model_copy(update={"model": None})}), note
        return q, None

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
        text = validate_query(query)
        if top_k is not None:
            check_top_k(top_k)
        if filters is not None and not isinstance(filters, dict):
            raise ArgumentError(
                f"filters must be a dict (Haystack filter syntax) or None, but got {reprlib.repr(filters)}"
            )
        runner = self.runner(self._query_config(config))
        result = SearchResult(
            query=text, hits=[], reranked=runner.info.reranked, notes=list(runner.info.notes)
        )
        if not _HAS_WORD.search(text):
            result.notes.append("query has no letters or digits; nothing to search for")
            return result
        start = time.perf_counter()
        with _backend_errors(self.store):
            docs = runner.run(text, filters=filters, top_k=top_k)
        result.timings_ms["search"] = (time.perf_counter() - start) * 1000
        result.hits = [to_hit(d) for d in docs]
        return result

    def _query_config(self, config: Any) -> QueryConfig | None:
        """Normalize `search`'s `config` argument to a QueryConfig (None: the KB's own)."""
        if config is None or isinstance(config, QueryConfig):
            return config
        if isinstance(config, RetrievalConfig):
            return config.query
        if isinstance(config, str):
            if config not in ("hybrid", "bm25", "dense"):
                raise ConfigError(
                    f"config={config!r} is not a retrieval mode; use 'hybrid', 'bm25' or 'dense'"
                )
            return self.config.with_overrides(query={"mode": config}).query
        raise ArgumentError(
            "config must be a QueryConfig, a RetrievalConfig, a mode name ('hybrid', 'bm25', 'dense') or "
            f"None, but got {_describe_value(config)}"
        )


def _new_store(config: RetrievalConfig, store_dir: str | Path | None) -> EmbeddedDocumentStore:
    """The store `config.store` asks for: an embedded one at `store_dir`, or a Qdrant collection."""
    if config.store.backend == "qdrant":
        from haygraph.retrieval.qdrant.store import QdrantStore

        return QdrantStore(config.store, config.bm25)
    return EmbeddedDocumentStore(path=str(store_dir) if store_dir else None)


def _backend_errors(store: EmbeddedDocumentStore) -> AbstractContextManager[None]:
    """Where the store has a remote backend, its failures during a query as `StoreError`s naming the fix."""
    query_errors = getattr(store, "query_errors", None)
    return query_errors() if query_errors is not None else nullcontext()


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
        raise ArgumentError(f"paths must be a path or a list of paths, but got {_describe_value(paths)}")
    if not paths or any(str(p).strip() == "" for p in paths):
        raise EmptyCorpusError("no files or directories given to index (empty path list or an empty path)")
    return list(paths)


def _describe_value(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'…' if len(text) > 80 else ''}"


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


def validate_query(query: str) -> str:
    """Strip and check a query: non-empty and at most MAX_QUERY_CHARS characters."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    text = "".join(ch for ch in query if ch.isprintable() or ch in "\n\t").strip()
    if not text:
        raise QueryError("query is empty")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"query is too long: {len(text)} characters (at most {MAX_QUERY_CHARS})")
    return text


def to_hit(doc: Document) -> Hit:
    """Convert a ranked Haystack document into a `Hit`."""
    meta = dict(doc.meta)
    return Hit(
        id=doc.id,
        content=doc.content or "",
        score=float(doc.score or 0.0),
        source=str(meta.get("source_id") or meta.get("source") or ""),
        heading_path=list(meta.get("heading_path") or []),
        meta=meta,
    )
