"""The read side of a knowledge base: open a saved store version, build its query pipelines, search.

`KnowledgeReader` holds a store and the settings it is searched with; `KnowledgeBase` (the façade,
`haygraph.retrieval.knowledge_base`) hands it `search` and `runner`, and the write side
(`haygraph.retrieval.kb_writer`) changes its store and config and drops its cached pipelines.
"""

from __future__ import annotations

import logging
import re
import reprlib
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline

from haygraph.retrieval.config import QueryConfig, RetrievalConfig, relevance_for_backend
from haygraph.retrieval.errors import (
    ArgumentError,
    ConfigError,
    ModelUnavailableError,
    describe_value,
)
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import (
    QueryPipelineInfo,
    build_query_pipeline,
    check_reranker,
    check_top_k,
    query_inputs,
)
from haygraph.retrieval.query_embedder import QueryEmbedder, QueryMemo
from haygraph.retrieval.search_result import SearchResult, to_hit, validate_query
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.store_config import merge_store_config

logger = logging.getLogger(__name__)

_HAS_WORD = re.compile(r"\w")


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


class KnowledgeReader:
    """A store and its retrieval config, searched through query pipelines built once per query setting.

    Every pipeline of one reader shares one query memo and one loaded query model.
    """

    def __init__(self, config: RetrievalConfig, store: EmbeddedDocumentStore) -> None:
        self.config = config
        self.store = store
        self._runners: dict[str, QueryRunner] = {}
        self._query_memo = QueryMemo()
        self._query_models: dict[tuple[str, str, str | None], Any] = {}

    def forget_pipelines(self) -> None:
        """Drop the built query pipelines (the store or the config changed); the loaded models stay."""
        self._runners.clear()

    def share_query_models(self, models: dict[tuple[str, str, str | None], Any]) -> None:
        """Load query models into (and take them from) `models`, a dict shared with other readers.

        A long-running reader that opens each new store version as a new knowledge base
        (`LiveKnowledgeBase`) passes the same dict every time, so a reload does not load the query
        model (an ONNX Runtime session, tens of MB) again next to the previous version's copy.
        """
        self._query_models = models
        self._runners.clear()

    def runner(self, query: QueryConfig | None = None) -> QueryRunner:
        """See `KnowledgeBase.runner`."""
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

        A store saved before `index_checks.check_saveable` existed, or whose reranker model was deleted
        since, would otherwise fail every default search; it searches without reranking instead, and says
        so. A reranker the caller chose (another model) keeps its `on_unavailable` behaviour.
        """
        if q.reranker.model is None or q.reranker.model != saved_reranker(self.store):
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
        """See `KnowledgeBase.search`."""
        text = validate_query(query)
        if top_k is not None:
            check_top_k(top_k)
        if filters is not None and not isinstance(filters, dict):
            raise ArgumentError(
                f"filters must be a dict (Haystack filter syntax) or None, but got {reprlib.repr(filters)}"
            )
        runner = self.runner(self.query_config(config))
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

    def query_config(self, config: Any) -> QueryConfig | None:
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
            f"None, but got {describe_value(config)}"
        )


def open_store(
    store_dir: str | Path | None, config: RetrievalConfig | None
) -> tuple[RetrievalConfig, EmbeddedDocumentStore]:
    """The newest saved version of a store and the settings to search it with (see `KnowledgeBase.open`)."""
    if config is not None and config.store.backend != "embedded":
        return _open_remote(config)
    if store_dir is None:
        raise ArgumentError(
            "store_dir must be a directory path (it may be None only when config.store.backend is qdrant "
            "or postgres)"
        )
    store = EmbeddedDocumentStore.load(store_dir)
    where = str((store.version_dir or Path(store_dir)) / "manifest.json")
    return merge_store_config(store.meta.get("config"), config, where=where), store


def _open_remote(config: RetrievalConfig) -> tuple[RetrievalConfig, EmbeddedDocumentStore]:
    """Open the Qdrant collection or PostgreSQL table `config.store` names."""
    store: Any
    if config.store.backend == "postgres":
        from haygraph.retrieval.postgres.store import PostgresStore

        store = PostgresStore.open(config.store, config.bm25)
    else:
        from haygraph.retrieval.qdrant.store import QdrantStore

        store = QdrantStore.open(config.store, config.bm25)
    merged = merge_store_config(store.meta.get("config"), config, where=store.path or "")
    merged = merged.with_overrides(store=config.store.model_dump())  # where it is now, not where it was
    store.use_bm25(merged.bm25)
    return merged, store


def new_store(config: RetrievalConfig, store_dir: str | Path | None) -> EmbeddedDocumentStore:
    """The store `config.store` asks for: an embedded one at `store_dir`, a Qdrant collection or a table."""
    if config.store.backend == "postgres":
        from haygraph.retrieval.postgres.store import PostgresStore

        return PostgresStore(config.store, config.bm25)
    if config.store.backend == "qdrant":
        from haygraph.retrieval.qdrant.store import QdrantStore

        return QdrantStore(config.store, config.bm25)
    return EmbeddedDocumentStore(path=str(store_dir) if store_dir else None)


def saved_reranker(store: EmbeddedDocumentStore) -> str | None:
    """The reranker model the store's saved config names (None: none, or no saved config)."""
    query = (store.meta.get("config") or {}).get("query") or {}
    model = (query.get("reranker") or {}).get("model")
    return model if isinstance(model, str) else None


def _backend_errors(store: EmbeddedDocumentStore) -> AbstractContextManager[None]:
    """Where the store has a remote backend, its failures during a query as `StoreError`s naming the fix."""
    query_errors = getattr(store, "query_errors", None)
    return query_errors() if query_errors is not None else nullcontext()
