"""The retrieval stages of a query pipeline over a Qdrant collection (called by `build_query_pipeline`).

bm25:   sparse_embedder -> bm25 (QdrantSparseEmbeddingRetriever) -> bm25_scores
dense:  [text_embedder] -> dense (QdrantEmbeddingRetriever) -> dense_scores
hybrid: both, then our `HybridFusion` (`store.fusion: haygraph`, the default), or one
        `QdrantHybridRetriever` named ``hybrid`` (Qdrant's server-side RRF, `store.fusion: qdrant`).

Filters (tenancy included) go to the retrievers, which push them down as Qdrant payload filters.
"""

from __future__ import annotations

from typing import Any

from haystack import Pipeline

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.pipelines import hybrid_fusion
from haygraph.retrieval.qdrant.scores import RetrieverScores
from haygraph.retrieval.qdrant.sparse import BM25SparseTextEmbedder
from haygraph.retrieval.qdrant.store import QdrantStore


def add_qdrant_retrieval(
    pipe: Pipeline, config: RetrievalConfig, store: Any, q: QueryConfig, *, candidates: int, head_k: int
) -> str:
    """Add the Qdrant retrievers (and the fusion in hybrid mode) to `pipe`; return the last stage's name."""
    from haystack_integrations.components.retrievers.qdrant import (
        QdrantEmbeddingRetriever,
        QdrantHybridRetriever,
        QdrantSparseEmbeddingRetriever,
    )

    if not isinstance(store, QdrantStore):
        raise ConfigError(
            "store.backend is qdrant but the pipeline was given an embedded store; open the knowledge base "
            "with the qdrant config (KnowledgeBase.open(None, config))"
        )
    if config.bm25.backend != "bm25s" or config.dense.backend != "numpy":
        raise ConfigError(
            "bm25.backend and dense.backend choose the embedded store's retrievers; with store.backend "
            "qdrant leave them at their defaults (bm25s, numpy)"
        )
    qdrant = store.qdrant()
    b = config.bm25
    if q.mode in ("bm25", "hybrid"):
        pipe.add_component(
            "sparse_embedder",
            BM25SparseTextEmbedder(language=b.language, stemming=b.stemming, stopwords=b.stopwords),
        )
    if q.mode == "hybrid" and config.store.fusion == "qdrant":
        pipe.add_component("hybrid", QdrantHybridRetriever(document_store=qdrant, top_k=head_k))
        pipe.connect("sparse_embedder.sparse_embedding", "hybrid.query_sparse_embedding")
        return "hybrid"
    if q.mode in ("bm25", "hybrid"):
        k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component("bm25", QdrantSparseEmbeddingRetriever(document_store=qdrant, top_k=k))
        pipe.add_component("bm25_scores", RetrieverScores(kind="bm25"))
        pipe.connect("sparse_embedder.sparse_embedding", "bm25.query_sparse_embedding")
        pipe.connect("bm25.documents", "bm25_scores.documents")
    if q.mode in ("dense", "hybrid"):
        k = candidates if q.mode == "hybrid" else head_k
        pipe.add_component("dense", QdrantEmbeddingRetriever(document_store=qdrant, top_k=k))
        pipe.add_component(
            "dense_scores", RetrieverScores(kind="dense", scale_score=q.mode == "dense" and q.cut.enabled)
        )
        pipe.connect("dense.documents", "dense_scores.documents")
    if q.mode != "hybrid":
        return f"{q.mode}_scores"
    pipe.add_component(
        "fusion",
        hybrid_fusion(config, q, head_k),
    )
    pipe.connect("bm25_scores.documents", "fusion.bm25_documents")
    pipe.connect("dense_scores.documents", "fusion.dense_documents")
    return "fusion"
