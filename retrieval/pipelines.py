"""The one place where the indexing and query pipelines are assembled from a `RetrievalConfig`.

Indexing: [MultiFormatConverter] -> DocumentCleaner -> [StructuredSplitter] -> ChunkIdentifier ->
ContentDeduplicator -> CachedDocumentEmbedder -> DocumentWriter.

Query (hybrid): text embedder -> dense retriever ┐
                BM25 retriever ─────────────────┴-> HybridFusion -> [reranker] -> [ScoreCliffCutter]

Every component is serializable, so both pipelines round-trip through Haystack YAML (`dumps_pipeline` /
`loads_pipeline`, which allow-list our own modules).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from haystack import Pipeline
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.writers import DocumentWriter
from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.bm25_retriever import FastBM25Retriever
from haygraph.retrieval.chunk_ids import ChunkIdentifier, ContentDeduplicator
from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.dense_retriever import FastEmbeddingRetriever
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.fusion import HybridFusion
from haygraph.retrieval.models import resolve_model
from haygraph.retrieval.score_cliff import ScoreCliffCutter
from haygraph.retrieval.splitter import StructuredSplitter
from haygraph.retrieval.store import EmbeddedDocumentStore

logger = logging.getLogger(__name__)

ALLOWED_MODULES = ["haygraph.retrieval", "haystack_integrations"]
"""Modules `loads_pipeline` trusts besides Haystack's own."""


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
    progress_bar: bool = False,
) -> Pipeline:
    """Build the indexing pipeline; with `from_files` it starts at the converter, else at the cleaner."""
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
    pipe.add_component("chunk_ids", ChunkIdentifier())
    pipe.add_component("dedup", ContentDeduplicator())
    emb = config.embedder
    pipe.add_component(
        "embedder",
        CachedDocumentEmbedder(
            model=emb.model,
            batch_size=emb.batch_size,
            cache_dir=emb.cache_dir,
            use_cache=emb.use_cache,
            progress_bar=progress_bar,
        ),
    )
    pipe.add_component("writer", DocumentWriter(document_store=store, policy=DuplicatePolicy.OVERWRITE))
    pipe.connect(f"{last}.documents", "chunk_ids.documents")
    pipe.connect("chunk_ids.documents", "dedup.documents")
    pipe.connect("dedup.documents", "embedder.documents")
    pipe.connect("embedder.documents", "writer.documents")
    return pipe


def build_query_pipeline(
    config: RetrievalConfig, store: EmbeddedDocumentStore, query: QueryConfig | None = None
) -> tuple[Pipeline, QueryPipelineInfo]:
    """Build the query pipeline for `query` (default: `config.query`) over `store`."""
    q = query or config.query
    pipe = Pipeline()
    info = QueryPipelineInfo(mode=q.mode, components=[], output="")
    reranker = _build_reranker(q, info)
    cut_size = q.cut.max_keep if q.cut.enabled else q.top_k
    head_k = q.reranker.top_k_in if reranker is not None else cut_size
    candidates = max(q.fusion.candidates, head_k)

    if q.mode in ("dense", "hybrid"):
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersTextEmbedder,
        )

        pipe.add_component(
            "text_embedder",
            SentenceTransformersTextEmbedder(
                model=resolve_model(config.embedder.model),
                normalize_embeddings=True,
                progress_bar=False,
                local_files_only=True,
            ),
        )
        dense_k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component(
            "dense", _dense_retriever(config, store, dense_k, scale=q.mode == "dense" and q.cut.enabled)
        )
        pipe.connect("text_embedder.embedding", "dense.query_embedding")
    if q.mode in ("bm25", "hybrid"):
        pipe.add_component(
            "bm25", _bm25_retriever(config, store, candidates if q.mode == "hybrid" else head_k)
        )
    last = "dense" if q.mode == "dense" else "bm25"
    if q.mode == "hybrid":
        pipe.add_component(
            "fusion",
            HybridFusion(
                method=q.fusion.method,
                weights=q.fusion.resolved_weights(),
                rrf_k=q.fusion.rrf_k,
                top_k=head_k,
            ),
        )
        pipe.connect("bm25.documents", "fusion.bm25_documents")
        pipe.connect("dense.documents", "fusion.dense_documents")
        last = "fusion"
    if reranker is not None:
        pipe.add_component("reranker", reranker)
        pipe.connect(f"{last}.documents", "reranker.documents")
        last = "reranker"
    if q.cut.enabled:
        pipe.add_component(
            "cut",
            ScoreCliffCutter(drop_ratio=q.cut.drop_ratio, max_keep=q.cut.max_keep, min_keep=q.cut.min_keep),
        )
        pipe.connect(f"{last}.documents", "cut.documents")
        last = "cut"
    info.components = list(pipe.graph.nodes)
    info.output = last
    return pipe, info


def dumps_pipeline(pipeline: Pipeline) -> str:
    """Serialize a pipeline to Haystack YAML."""
    return pipeline.dumps()


def loads_pipeline(text: str) -> Pipeline:
    """Load a pipeline from Haystack YAML, trusting haygraph's own component modules."""
    return Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)


def _bm25_retriever(config: RetrievalConfig, store: EmbeddedDocumentStore, top_k: int) -> Any:
    b = config.bm25
    if b.backend == "haystack":
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        return InMemoryBM25Retriever(document_store=_stock_store(store), top_k=top_k)
    return FastBM25Retriever(
        document_store=store,
        top_k=top_k,
        language=b.language,
        stemming=b.stemming,
        stopwords=b.stopwords,
        k1=b.k1,
        b=b.b,
        method=b.method,
    )


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
    from haystack_integrations.components.rankers.sentence_transformers import (
        SentenceTransformersSimilarityRanker,
    )

    info.reranked = True
    top = q.cut.max_keep if q.cut.enabled else q.top_k
    return SentenceTransformersSimilarityRanker(model=path, top_k=top, scale_score=True)
