"""`KnowledgeBase`: the Python API over the store and the two pipelines (build, index, search, save)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import EmptyCorpusError, QueryError, RetrievalError
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import (
    QueryPipelineInfo,
    build_indexing_pipeline,
    build_query_pipeline,
    check_top_k,
    query_inputs,
)
from haygraph.retrieval.query_embedder import QueryEmbedder, QueryMemo
from haygraph.retrieval.store import EmbeddedDocumentStore

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
    def cosine(self) -> float | None:
        """The chunk's dense cosine similarity with the query, when known."""
        value = self.meta.get("dense_score")
        return None if value is None else float(value)


@dataclass
class SearchResult:
    """Ranked hits plus what happened on the way (reranked or not, timings)."""

    query: str
    hits: list[Hit]
    reranked: bool | None = None
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class IndexReport:
    """Counts from one indexing run."""

    sources: int
    chunks: int
    embedded: int
    from_cache: int
    removed_stale: int
    total_documents: int
    seconds: float


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


class KnowledgeBase:
    """A document store with its retrieval config: index files or documents, search, save, reopen.

    >>> kb = KnowledgeBase(store_dir="kb")
    >>> kb.index(["handbook/"])
    >>> kb.search("How many days of annual leave?").hits[0].id
    """

    def __init__(self, config: RetrievalConfig | None = None, store_dir: str | Path | None = None) -> None:
        self.config = config or RetrievalConfig()
        self.store = EmbeddedDocumentStore(path=str(store_dir) if store_dir else None)
        self._runners: dict[str, QueryRunner] = {}
        self._query_memo = QueryMemo()

    @classmethod
    def open(cls, store_dir: str | Path, config: RetrievalConfig | None = None) -> KnowledgeBase:
        """Open a saved store; the indexing settings it was built with are reused unless `config` is given."""
        store = EmbeddedDocumentStore.load(store_dir)
        saved = {k: v for k, v in (store.meta.get("config") or {}).items() if k != "query"}
        kb = cls(config or RetrievalConfig.from_dict(saved), store_dir)
        kb.store = store
        return kb

    # -- indexing ---------------------------------------------------------------------------------
    def index(self, paths: Sequence[str | Path], *, progress: bool = False, save: bool = True) -> IndexReport:
        """Convert, split, embed and store files or directories (.md .txt .html); then save atomically."""
        if not paths:
            raise EmptyCorpusError("no files or directories given to index")
        pipe = build_indexing_pipeline(self.config, self.store, from_files=True, progress_bar=progress)
        return self._run_indexing(pipe, {"converter": {"sources": [str(p) for p in paths]}}, save)

    def index_documents(
        self, documents: list[Document], *, progress: bool = False, save: bool = True
    ) -> IndexReport:
        """Index Haystack documents you built yourself (their `meta["source_id"]` groups chunks)."""
        if not documents:
            raise EmptyCorpusError("no documents given to index")
        pipe = build_indexing_pipeline(self.config, self.store, from_files=False, progress_bar=progress)
        return self._run_indexing(pipe, {"cleaner": {"documents": documents}}, save)

    def index_beir(
        self, corpus_path: str | Path, *, progress: bool = False, save: bool = True
    ) -> IndexReport:
        """Index a BEIR `corpus.jsonl` (one document per line: _id, title, text)."""
        return self.index_documents(read_beir_corpus(corpus_path), progress=progress, save=save)

    def _run_indexing(self, pipe: Pipeline, data: dict[str, Any], save: bool) -> IndexReport:
        start = time.perf_counter()
        result = run_pipeline(pipe, data, include_outputs_from={"dedup", "cleaner"})
        chunks: list[Document] = result["dedup"]["documents"]
        if not chunks:
            raise EmptyCorpusError("nothing to index: every input was empty")
        embedder = pipe.get_component("embedder")
        assert isinstance(embedder, CachedDocumentEmbedder)
        removed = self._remove_stale(chunks)
        # Only what shaped the index is persisted; query settings are the caller's (current defaults or
        # the config passed to `open`).
        self.store.meta["config"] = self.config.model_dump(mode="json", exclude={"query"})
        self._build_bm25()
        if save and self.store.path:
            self.store.save()
        self._runners.clear()
        return IndexReport(
            sources=len({c.meta.get("source_id") for c in chunks}),
            chunks=len(chunks),
            embedded=embedder.stats["embedded"],
            from_cache=embedder.stats["cached"],
            removed_stale=removed,
            total_documents=self.store.count_documents(),
            seconds=time.perf_counter() - start,
        )

    def _remove_stale(self, chunks: list[Document]) -> int:
        """Drop chunks of re-indexed sources that are no longer produced (edited or deleted text)."""
        sources = {c.meta.get("source_id") for c in chunks}
        fresh = {c.id for c in chunks}
        stale = [
            d.id for d in self.store.documents if d.meta.get("source_id") in sources and d.id not in fresh
        ]
        self.store.delete_documents(stale)
        return len(stale)

    def _build_bm25(self) -> None:
        """Build (and so persist with the store) the bm25s index; relevance scoring needs it in every mode."""
        self.store.bm25_index(BM25Index.from_config(self.config.bm25))

    def save(self) -> None:
        """Save the store to its directory atomically."""
        self.store.save()

    # -- search -----------------------------------------------------------------------------------
    def runner(self, query: QueryConfig | None = None) -> QueryRunner:
        """The (cached) query pipeline for `query` (default: the KB's config)."""
        q = query or self.config.query
        key = q.model_dump_json()
        if key not in self._runners:
            pipe, info = build_query_pipeline(self.config, self.store, q)
            if "text_embedder" in pipe.graph.nodes:
                embedder = pipe.get_component("text_embedder")
                if isinstance(embedder, QueryEmbedder):  # one query embedding for every pipeline
                    embedder.share_memo(self._query_memo)
            self._runners[key] = QueryRunner(pipe, info)
        return self._runners[key]

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        config: QueryConfig | None = None,
    ) -> SearchResult:
        """Ranked chunks for `query`, each with a calibrated `relevance` whatever the query mode.

        `top_k` (an int >= 1; default: the config's) is how many results the ranking returns; the
        score-cliff cut, when enabled, may keep fewer. Empty or overlong queries and a bad `top_k` raise
        `QueryError`; symbol-only queries find nothing.
        """
        text = validate_query(query)
        if top_k is not None:
            check_top_k(top_k)
        runner = self.runner(config)
        result = SearchResult(
            query=text, hits=[], reranked=runner.info.reranked, notes=list(runner.info.notes)
        )
        if not _HAS_WORD.search(text):
            result.notes.append("query has no letters or digits; nothing to search for")
            return result
        start = time.perf_counter()
        docs = runner.run(text, filters=filters, top_k=top_k)
        result.timings_ms["search"] = (time.perf_counter() - start) * 1000
        result.hits = [to_hit(d) for d in docs]
        return result


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
