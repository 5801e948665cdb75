"""The Qdrant store backend (`store: {backend: qdrant}`): sparse BM25 embedders, connection, store, copy."""

from haygraph.retrieval.qdrant.sparse import (
    SPARSE_VOCABULARY,
    BM25SparseDocumentEmbedder,
    BM25SparseTextEmbedder,
    bm25_term_weights,
    term_index,
)
from haygraph.retrieval.qdrant.store import QdrantStore

__all__ = [
    "SPARSE_VOCABULARY",
    "BM25SparseDocumentEmbedder",
    "BM25SparseTextEmbedder",
    "QdrantStore",
    "bm25_term_weights",
    "term_index",
]
