"""`KnowledgeBase`: the Python API over the store and the two pipelines (build, index, search, save)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, Pipeline

from retrieval.bm25_index import BM25Index
from retrieval.config import QueryConfig, RetrievalConfig
from retrieval.converters import read_beir_corpus
from retrieval.errors import EmptyCorpusError, QueryError, RetrievalError
from retrieval.pipelines import QueryPipelineInfo, build_indexing_pipeline, build_query_pipeline
from retrieval.store import EmbeddedDocumentStore
from retrieval.tokenize import BM25Tokenizer

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
        """Absolute relevance: the chunk's dense cosine similarity with the query, when known."""
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
    """A built query pipeline plus the input mapping for its components."""

    def __init__(self, pipeline: Pipeline, info: QueryPipelineInfo, store: EmbeddedDocumentStore) -> None:
        self.pipeline = pipeline
        self.info = info
        self.store = store
        self._warm = False

    def warm_up(self) -> None:
        """Load models and indexes once."""
        if not self._warm:
            self.pipeline.warm_up()
            self._warm = True

    def run(
        self, query: str, *, filters: dict[str, Any] | None = None, top_k: int | None = None,
        candidates: int | None = None,
    ) -> list[Document]:
        """Run the pipeline for one (already validated) query and return its ranked documents."""
        self.warm_up()
        names = set(self.info.components)
        data: dict[str, dict[str, Any]] = {}
        if "text_embedder" in names:
            data["text_embedder"] = {"text": query}
        for name in ("bm25", "dense"):
            if name in names:
                data[name] = {"filters": filters} if filters else {}
                if candidates is not None:
                    data[name]["top_k"] = candidates
        if "bm25" in names:
            data["bm25"]["query"] = query
        if "fusion" in names and top_k is not None:
            data["fusion"] = {"top_k": top_k}
        if "reranker" in names:
            data["reranker"] = {"query": query}
        outputs = {self.info.output}
        if "text_embedder" in names:
            outputs.add("text_embedder")
        result = self.pipeline.run(data, include_outputs_from=outputs)
        docs: list[Document] = result[self.info.output]["documents"]
        if top_k is not None and "fusion" not in names and "cut" not in names:
            docs = docs[:top_k]
        embedding = result.get("text_embedder", {}).get("embedding")
        return self._with_relevance(docs, embedding)

    def _with_relevance(self, docs: list[Document], embedding: list[float] | None) -> list[Document]:
        """Fill `meta["dense_score"]` (absolute cosine) for hits that came only from BM25."""
        matrix = self.store.matrix() if embedding is not None else None
        if matrix is None:
            return docs
        q = np.asarray(embedding, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        out = []
        for doc in docs:
            pos = self.store.position(doc.id)
            if "dense_score" not in doc.meta and pos is not None:
                doc = replace(doc, meta={**doc.meta, "dense_score": float(matrix[pos] @ q)})
            out.append(doc)
        return out


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

    @classmethod
    def open(cls, store_dir: str | Path, config: RetrievalConfig | None = None) -> KnowledgeBase:
        """Open a saved store; its saved config is used unless `config` is given."""
        store = EmbeddedDocumentStore.load(store_dir)
        saved = store.meta.get("config")
        kb = cls(config or (RetrievalConfig.from_dict(saved) if saved else None), store_dir)
        kb.store = store
        return kb

    # -- indexing ---------------------------------------------------------------------------------
    def index(self, paths: Sequence[str | Path], *, progress: bool = False, save: bool = True) -> IndexReport:
        """Convert, split, embed and store files or directories (.md .txt .html); then save atomically."""
        if not paths:
            raise EmptyCorpusError("no files or directories given to index")
        pipe = build_indexing_pipeline(self.config, self.store, from_files=True, progress_bar=progress)
        return self._run_indexing(pipe, {"converter": {"sources": [str(p) for p in paths]}}, save)

    def index_documents(self, documents: list[Document], *, progress: bool = False, save: bool = True) -> IndexReport:
        """Index Haystack documents you built yourself (their `meta["source_id"]` groups chunks)."""
        if not documents:
            raise EmptyCorpusError("no documents given to index")
        pipe = build_indexing_pipeline(self.config, self.store, from_files=False, progress_bar=progress)
        return self._run_indexing(pipe, {"cleaner": {"documents": documents}}, save)

    def index_beir(self, corpus_path: str | Path, *, progress: bool = False, save: bool = True) -> IndexReport:
        """Index a BEIR `corpus.jsonl` (one document per line: _id, title, text)."""
        return self.index_documents(read_beir_corpus(corpus_path), progress=progress, save=save)

    def _run_indexing(self, pipe: Pipeline, data: dict[str, Any], save: bool) -> IndexReport:
        start = time.perf_counter()
        result = pipe.run(data, include_outputs_from={"dedup", "cleaner"})
        chunks: list[Document] = result["dedup"]["documents"]
        if not chunks:
            raise EmptyCorpusError("nothing to index: every input was empty")
        embedder = pipe.get_component("embedder")
        removed = self._remove_stale(chunks)
        self.store.meta["config"] = self.config.model_dump(mode="json")
        self._build_bm25()
        if save and self.store.path:
            self.store.save()
        self._runners.clear()
        return IndexReport(
            sources=len({c.meta.get("source_id") for c in chunks}), chunks=len(chunks),
            embedded=embedder.stats["embedded"], from_cache=embedder.stats["cached"], removed_stale=removed,
            total_documents=self.store.count_documents(), seconds=time.perf_counter() - start,
        )

    def _remove_stale(self, chunks: list[Document]) -> int:
        """Drop chunks of re-indexed sources that are no longer produced (edited or deleted text)."""
        sources = {c.meta.get("source_id") for c in chunks}
        fresh = {c.id for c in chunks}
        stale = [d.id for d in self.store.documents if d.meta.get("source_id") in sources and d.id not in fresh]
        self.store.delete_documents(stale)
        return len(stale)

    def _build_bm25(self) -> None:
        b = self.config.bm25
        if b.backend == "bm25s":
            self.store.bm25_index(BM25Index(BM25Tokenizer(b.language, b.stemming, b.stopwords), b.k1, b.b, b.method))

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
            self._runners[key] = QueryRunner(pipe, info, self.store)
        return self._runners[key]

    def search(
        self, query: str, *, top_k: int | None = None, filters: dict[str, Any] | None = None,
        config: QueryConfig | None = None,
    ) -> SearchResult:
        """Ranked chunks for `query`. Empty/overlong queries raise `QueryError`; symbol-only ones find nothing."""
        text = validate_query(query)
        runner = self.runner(config)
        result = SearchResult(query=text, hits=[], reranked=runner.info.reranked, notes=list(runner.info.notes))
        if not _HAS_WORD.search(text):
            result.notes.append("query has no letters or digits; nothing to search for")
            return result
        start = time.perf_counter()
        try:
            docs = runner.run(text, filters=filters, top_k=top_k)
        except RetrievalError:
            raise
        except Exception as exc:  # Haystack wraps component failures in PipelineRuntimeError
            cause = exc.__cause__ if isinstance(exc.__cause__, RetrievalError) else None
            if cause is not None:
                raise cause from exc
            raise RetrievalError(f"search failed: {exc}") from exc
        result.timings_ms["search"] = (time.perf_counter() - start) * 1000
        result.hits = [to_hit(d) for d in docs]
        return result


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
        id=doc.id, content=doc.content or "", score=float(doc.score or 0.0),
        source=str(meta.get("source_id") or meta.get("source") or ""),
        heading_path=list(meta.get("heading_path") or []), meta=meta,
    )
