"""The one place where the indexing and query pipelines are assembled from a `RetrievalConfig`.

Indexing: [MultiFormatConverter] -> DocumentCleaner -> [StructuredSplitter] -> ChunkLocator ->
ChunkIdentifier -> ContentDeduplicator -> [CachedDocumentEmbedder] -> DocumentWriter.

Query (hybrid): text_embedder -> dense ┐
                bm25 ──────────────────┴-> fusion -> [reranker] -> relevance -> [cut]

The cut runs on the calibrated relevance by default (`CutConfig.scale`); when it cuts on the ranking
score instead (a reranker's probability), it comes before relevance: ... -> [cut] -> relevance.

(bm25 mode: bm25 -> [reranker] -> [cut] -> relevance, plus text_embedder -> relevance when
`RelevanceConfig.bm25_uses_cosine`; dense mode: text_embedder -> dense -> ...). Every
stage is a component of the pipeline, so YAML, tracing and swapping see all of them, and
`query_inputs` maps (query, filters, top_k) to the components' inputs for `Pipeline.run` and for
`haygraph.retrieval.pipeline_runner.run_direct` alike.

Every component is serializable, so both pipelines round-trip through Haystack YAML (`dumps_pipeline` /
`loads_pipeline`, which allow-list our own modules); models are recorded by name and resolved on the
loading machine at warm-up (see `haygraph.retrieval.model_paths`).
"""

from __future__ import annotations

import json
import logging
import reprlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.writers import DocumentWriter
from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.bm25_retriever import FastBM25Retriever
from haygraph.retrieval.chunk_ids import ChunkIdentifier, ContentDeduplicator
from haygraph.retrieval.chunk_positions import ChunkLocator
from haygraph.retrieval.config import QueryConfig, RerankerConfig, RetrievalConfig
from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.cross_encoder_ranker import BlendedSimilarityRanker, model_retrieval_weight
from haygraph.retrieval.dense_retriever import FastEmbeddingRetriever
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import ConfigError, ModelUnavailableError, QueryError
from haygraph.retrieval.fusion import HybridFusion
from haygraph.retrieval.model_paths import resolve_model
from haygraph.retrieval.query_embedder import QueryEmbedder
from haygraph.retrieval.relevance_scorer import RelevanceScorer
from haygraph.retrieval.score_cliff import ScoreCliffCutter
from haygraph.retrieval.splitter import StructuredSplitter
from haygraph.retrieval.store import EmbeddedDocumentStore

logger = logging.getLogger(__name__)

ALLOWED_MODULES = ["haygraph.retrieval", "haystack_integrations"]
"""Modules `loads_pipeline` trusts besides Haystack's own."""

_RETRIEVERS = ("bm25", "dense", "hybrid")
"""Names of the retrieval stages that take filters (``hybrid``: Qdrant's server-side fusion)."""


@dataclass
class QueryPipelineInfo:
    """What the query pipeline contains, for callers that need to map inputs and report skips."""

    mode: str
    components: list[str]
    output: str
    reranked: bool | None = None
    notes: list[str] = field(default_factory=list)


def build_indexing_pipeline(
    config: RetrievalConfig,
    store: EmbeddedDocumentStore,
    *,
    from_files: bool = True,
    embed: bool = True,
    progress_bar: bool = False,
) -> Pipeline:
    """Build the indexing pipeline.

    With `from_files` it starts at the converter (input ``converter.sources``), else at the cleaner
    (input ``cleaner.documents``). Without `embed` the documents are written without embeddings (enough
    for BM25-only search; no model is loaded).
    """
    pipe = Pipeline()
    if from_files:
        pipe.add_component("converter", MultiFormatConverter())
    # Keep blank lines and newlines: the splitter needs them to see structure. NFC (not NFKC) so that
    # full-width Chinese punctuation survives for sentence splitting.
    pipe.add_component(
        "cleaner",
        DocumentCleaner(
            remove_empty_lines=False, remove_extra_whitespaces=False, unicode_normalization="NFC"
        ),
    )
    last = "cleaner"
    if from_files:
        pipe.connect("converter.documents", "cleaner.documents")
    if config.splitter.enabled:
        pipe.add_component(
            "splitter",
            StructuredSplitter(min_chars=config.splitter.min_chars, max_chars=config.splitter.max_chars),
        )
        pipe.connect("cleaner.documents", "splitter.documents")
        last = "splitter"
    # offsets (and pages) of each chunk in its source text, for citations that can be highlighted
    pipe.add_component("locator", ChunkLocator())
    pipe.connect(f"{last}.documents", "locator.documents")
    pipe.connect("cleaner.documents", "locator.sources")
    pipe.add_component("chunk_ids", ChunkIdentifier())
    pipe.add_component("dedup", ContentDeduplicator())
    pipe.connect("locator.documents", "chunk_ids.documents")
    pipe.connect("chunk_ids.documents", "dedup.documents")
    last = "dedup"
    if embed:
        emb = config.embedder
        pipe.add_component(
            "embedder",
            CachedDocumentEmbedder(
                model=emb.model,
                batch_size=emb.batch_size,
                cache_dir=emb.cache_dir,
                use_cache=emb.use_cache,
                progress_bar=progress_bar,
                backend=emb.backend,
                threads=emb.threads,
            ),
        )
        pipe.connect("dedup.documents", "embedder.documents")
        last = "embedder"
    pipe.add_component("writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
    pipe.connect(f"{last}.documents", "writer.documents")
    return pipe


def build_query_pipeline(
    config: RetrievalConfig,
    store: EmbeddedDocumentStore,
    query: QueryConfig | None = None,
    *,
    stock: bool = False,
    embed_query: bool = True,
    include_relevance: bool = True,
) -> tuple[Pipeline, QueryPipelineInfo]:
    """Build the query pipeline for `query` (default: `config.query`) over `store`.

    Args:
        config: the retrieval config (embedder, BM25 and dense settings, default query settings).
        store: the store the retrievers search.
        query: query settings overriding `config.query`.
        stock: use Haystack's stock InMemoryBM25Retriever / InMemoryEmbeddingRetriever (over a copy of
            the store) whatever `config` says — for comparisons.
        embed_query: with False there is no ``text_embedder``: the query vector is a pipeline input
            (``query_inputs(..., query_embedding=...)``), e.g. to time retrieval without the model.
        include_relevance: end with the ``relevance`` stage (`RelevanceScorer`); without it hits carry
            no calibrated relevance (unless the cut runs on it: then it comes before the cut anyway).

    Returns:
        The pipeline and a `QueryPipelineInfo` (components, output component, reranker skip notes).

    """
    q = query or config.query
    if stock:
        config = config.with_overrides(bm25={"backend": "haystack"}, dense={"backend": "haystack"})
    pipe = Pipeline()
    info = QueryPipelineInfo(mode=q.mode, components=[], output="")
    reranker = _build_reranker(q, info)
    # the cut runs on the calibrated relevance (scored first) or on the ranking score (then only the kept
    # chunks are scored); see CutConfig.scale
    cut_on_relevance = q.cut.enabled and q.cut.resolved_scale(reranker is not None) == "relevance"
    cut_size = q.cut.max_keep if q.cut.enabled else q.top_k
    head_k = q.reranker.top_k_in if reranker is not None else cut_size
    candidates = max(q.fusion.candidates, head_k)

    cosine_for_relevance = (
        (include_relevance or cut_on_relevance) and q.mode == "bm25" and q.relevance.bm25_uses_cosine
    )
    if embed_query and (q.mode in ("dense", "hybrid") or cosine_for_relevance):
        pipe.add_component(
            "text_embedder",
            QueryEmbedder(
                model=config.embedder.model,
                backend=config.embedder.backend,
                cache_dir=config.embedder.cache_dir,
                threads=config.embedder.threads,
            ),
        )
    if config.store.backend == "qdrant":
        from haygraph.retrieval.qdrant.pipeline import add_qdrant_retrieval

        last = add_qdrant_retrieval(pipe, config, store, q, candidates=candidates, head_k=head_k)
    elif config.store.backend == "postgres":
        from haygraph.retrieval.postgres.retrieval import add_postgres_retrieval

        last = add_postgres_retrieval(pipe, config, store, q, candidates=candidates, head_k=head_k)
    else:
        last = _add_embedded_retrieval(pipe, config, store, q, candidates=candidates, head_k=head_k)
    if embed_query and "text_embedder" in pipe.graph.nodes:
        for name in ("dense", "hybrid"):
            if name in pipe.graph.nodes:
                pipe.connect("text_embedder.embedding", f"{name}.query_embedding")
    if reranker is not None:
        pipe.add_component("reranker", reranker)
        pipe.connect(f"{last}.documents", "reranker.documents")
        last = "reranker"
    if cut_on_relevance:
        last = _add_relevance(pipe, config, store, q, after=last)
    if q.cut.enabled:
        pipe.add_component("cut", _cutter(q, on_relevance=cut_on_relevance))
        pipe.connect(f"{last}.documents", "cut.documents")
        last = "cut"
    if include_relevance and not cut_on_relevance:
        last = _add_relevance(pipe, config, store, q, after=last)
    info.components = list(pipe.graph.nodes)
    info.output = last
    return pipe, info


def _add_embedded_retrieval(
    pipe: Pipeline,
    config: RetrievalConfig,
    store: EmbeddedDocumentStore,
    q: QueryConfig,
    *,
    candidates: int,
    head_k: int,
) -> str:
    """Add the embedded store's retrievers (and the fusion in hybrid mode); return the last stage's name."""
    if q.mode in ("dense", "hybrid"):
        dense_k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component(
            "dense", _dense_retriever(config, store, dense_k, scale=q.mode == "dense" and q.cut.enabled)
        )
    if q.mode in ("bm25", "hybrid"):
        add_bm25_retriever(pipe, config, store, candidates if q.mode == "hybrid" else head_k)
    last = "dense" if q.mode == "dense" else "bm25"
    if q.mode == "hybrid":
        pipe.add_component(
            "fusion",
            hybrid_fusion(config, q, head_k),
        )
        pipe.connect("bm25.documents", "fusion.bm25_documents")
        pipe.connect("dense.documents", "fusion.dense_documents")
        last = "fusion"
    return last


def add_bm25_retriever(
    pipe: Pipeline, config: RetrievalConfig, store: EmbeddedDocumentStore, top_k: int
) -> None:
    """Add the ``bm25`` stage: the configured BM25 retriever over `store` (an in-process index)."""
    pipe.add_component("bm25", _bm25_retriever(config, store, top_k))


def check_top_k(top_k: object) -> int:
    """Return `top_k` if it is an int >= 1 (bools are refused); otherwise raise `QueryError` naming it."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise QueryError(f"top_k must be an integer >= 1, but got {reprlib.repr(top_k)}")
    return top_k


def query_inputs(
    pipeline: Pipeline,
    query: str,
    *,
    filters: dict[str, Any] | None = None,
    top_k: int | None = None,
    query_embedding: list[float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Map a query to the inputs of a pipeline built by `build_query_pipeline`, per component name.

    The result is the `data` of ``pipeline.run(data)`` (and of `run_direct`). `filters` go to every
    retriever. `top_k` (an int >= 1) is how many results the last ranking stage returns — the reranker,
    else the fusion, else the retriever — and earlier stages are widened to feed it at least that many;
    the score-cliff cut, when present, may still keep fewer (at most its `max_keep`). `query_embedding`
    is required by pipelines built with ``embed_query=False`` that have a dense retriever (and goes to
    the relevance stage too).

    Raises:
        QueryError: a bad `top_k`, or a missing `query_embedding`.

    """
    names = set(pipeline.graph.nodes)
    if top_k is not None:
        check_top_k(top_k)
    data: dict[str, dict[str, Any]] = {}
    external_vector = "text_embedder" not in names and query_embedding is not None
    if "text_embedder" in names:
        data["text_embedder"] = {"text": query}
    else:
        for name in ("dense", "hybrid"):
            if name in names:
                if query_embedding is None:
                    raise QueryError("this query pipeline has no text_embedder: pass query_embedding")
                data[name] = {"query_embedding": query_embedding}
    for name in _RETRIEVERS:
        if name in names and filters:
            data.setdefault(name, {})["filters"] = filters
    if "sparse_embedder" in names:  # Qdrant: BM25 as a sparse query vector
        data["sparse_embedder"] = {"text": query}
    elif "bm25" in names:
        data.setdefault("bm25", {})["query"] = query
    if "fusion" in names:
        data["fusion"] = {"query": query}
    if "reranker" in names:
        data["reranker"] = {"query": query}
    if "relevance" in names:
        data["relevance"] = {"query": query}
        if external_vector:
            data["relevance"]["query_embedding"] = query_embedding
    if top_k is not None:
        _size_stages(pipeline, names, data, top_k)
    return data


def _size_stages(pipeline: Pipeline, names: set[str], data: dict[str, dict[str, Any]], top_k: int) -> None:
    """Make the last ranking stage return `top_k` results and the stages before it at least as many."""
    stages = [n for n in ("reranker", "fusion") if n in names]
    if stages:
        data.setdefault(stages[0], {})["top_k"] = top_k
    for name in [*stages[1:], *(n for n in _RETRIEVERS if n in names)]:
        if not stages:  # the retriever is the last ranking stage
            data.setdefault(name, {})["top_k"] = top_k
            continue
        stage = pipeline.get_component(name)
        built = getattr(stage, "top_k", getattr(stage, "_top_k", None))  # qdrant-haystack keeps `_top_k`
        if built is not None and built < top_k:  # None: the stage passes everything on
            data.setdefault(name, {})["top_k"] = top_k


def dumps_pipeline(pipeline: Pipeline) -> str:
    """Serialize a pipeline to Haystack YAML."""
    return pipeline.dumps()


def loads_pipeline(text: str) -> Pipeline:
    """Load a pipeline from Haystack YAML, trusting haygraph's own component modules."""
    return Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)


def _add_relevance(
    pipe: Pipeline, config: RetrievalConfig, store: EmbeddedDocumentStore, q: QueryConfig, after: str
) -> str:
    """Add the relevance stage after component `after` (and to the query embedding); return its name."""
    pipe.add_component("relevance", _relevance_scorer(config, store, q))
    pipe.connect(f"{after}.documents", "relevance.documents")
    if "text_embedder" in pipe.graph.nodes:
        pipe.connect("text_embedder.embedding", "relevance.query_embedding")
    return "relevance"


def _cutter(q: QueryConfig, *, on_relevance: bool) -> ScoreCliffCutter:
    """The score-cliff cut of `q`, on the calibrated relevance or on the ranking score."""
    c = q.cut
    return ScoreCliffCutter(
        drop_ratio=c.drop_ratio,
        max_keep=c.max_keep,
        min_keep=c.min_keep,
        score_field="relevance" if on_relevance else None,
        min_score=c.min_score,
    )


def _relevance_scorer(
    config: RetrievalConfig, store: EmbeddedDocumentStore, q: QueryConfig
) -> RelevanceScorer:
    """The relevance stage: the weights of the query mode, the BM25 settings of the store's index."""
    return RelevanceScorer(
        document_store=store, weights=q.relevance.for_mode(q.mode).model_dump(), **bm25_settings(config)
    )


def hybrid_fusion(config: RetrievalConfig, q: QueryConfig, top_k: int) -> HybridFusion:
    """The fusion stage of a hybrid query pipeline (either store backend), language-aware when configured."""
    return HybridFusion(
        method=q.fusion.method,
        weights=q.fusion.resolved_weights(),
        rrf_k=q.fusion.rrf_k,
        top_k=top_k,
        dense_languages=list(config.embedder.languages) if q.fusion.language_aware else None,
    )


def bm25_settings(config: RetrievalConfig) -> dict[str, Any]:
    """The BM25 index settings (tokenisation and scoring) shared by the retriever and the relevance stage."""
    b = config.bm25
    return {
        "language": b.language,
        "stemming": b.stemming,
        "stopwords": b.stopwords,
        "k1": b.k1,
        "b": b.b,
        "method": b.method,
    }


def _bm25_retriever(config: RetrievalConfig, store: EmbeddedDocumentStore, top_k: int) -> Any:
    b = config.bm25
    if b.backend == "haystack":
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        return InMemoryBM25Retriever(document_store=_stock_store(store), top_k=top_k)
    return FastBM25Retriever(document_store=store, top_k=top_k, **bm25_settings(config))


def _dense_retriever(config: RetrievalConfig, store: EmbeddedDocumentStore, top_k: int, scale: bool) -> Any:
    if config.dense.backend == "haystack":
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

        return InMemoryEmbeddingRetriever(document_store=_stock_store(store), top_k=top_k, scale_score=scale)
    return FastEmbeddingRetriever(document_store=store, top_k=top_k, scale_score=scale)


_STOCK_STORES: dict[tuple[int, int], tuple[EmbeddedDocumentStore, Any]] = {}


def _stock_store(store: EmbeddedDocumentStore) -> Any:
    """Haystack's InMemoryDocumentStore holding the same documents and embeddings (for comparison).

    The copy is reused while `store` is the same object at the same revision; a changed store (or a new
    store that happens to reuse a freed object's id) gets a fresh copy.
    """
    key = (id(store), store.revision)
    cached = _STOCK_STORES.get(key)
    if cached is None or cached[0] is not store:
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        stock = InMemoryDocumentStore(shared=False, embedding_similarity_function="cosine")
        stock.write_documents(store.filter_documents())
        _STOCK_STORES.clear()  # one at a time: it holds a full copy
        _STOCK_STORES[key] = cached = (store, stock)
    return cached[1]


def check_cross_encoder(path: str) -> None:
    """Raise `ConfigError` if the local model directory `path` is not a cross-encoder.

    A cross-encoder is a sequence-classification model: its ``config.json`` lists an architecture ending in
    ``ForSequenceClassification``. A hub id (from the Hugging Face cache) is not checked here.
    """
    config_file = Path(path) / "config.json"
    if not config_file.is_file():
        return
    try:
        architectures = json.loads(config_file.read_text(encoding="utf-8")).get("architectures") or []
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"reranker.model {path}: cannot read {config_file}: {exc}") from exc
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        raise ConfigError(
            f"reranker.model {path} is not a cross-encoder: its config.json declares {architectures or 'no'} "
            "architectures, not a *ForSequenceClassification model (an embedding model cannot rerank); train "
            "one with `haygraph train-reranker --dataset DIR --split train --out DIR`"
        )


def check_reranker(reranker: RerankerConfig) -> str | None:
    """The loadable path of `reranker.model` (None without a reranker), checked as `_build_reranker` does.

    Raises:
        ModelUnavailableError: the model is not available offline (whatever `on_unavailable` says).
        ConfigError: the model is not a cross-encoder (`check_cross_encoder`).

    """
    if reranker.model is None:
        return None
    path = resolve_model(reranker.model, kind="reranker model")
    check_cross_encoder(path)
    return path


def _build_reranker(q: QueryConfig, info: QueryPipelineInfo) -> Any:
    if q.reranker.model is None:
        return None
    try:
        path = resolve_model(q.reranker.model, kind="reranker model")
    except ModelUnavailableError as exc:
        if q.reranker.on_unavailable == "error":
            raise
        info.reranked = False
        info.notes.append(f"reranker skipped: {exc}")
        logger.warning("reranker skipped: %s", exc)
        return None
    check_cross_encoder(path)
    weight = q.reranker.retrieval_weight
    if weight is None:
        weight = model_retrieval_weight(path) or 0.0
    info.reranked = True
    top = q.cut.max_keep if q.cut.enabled else q.top_k
    return BlendedSimilarityRanker(
        model=path,
        top_k=top,
        retrieval_weight=weight,
        top_k_in=q.reranker.top_k_in,
        backend=q.reranker.backend,
    )
