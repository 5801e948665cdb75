"""`FastBM25Retriever`: BM25 over the embedded store's bm25s index, as a Haystack component."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal, Self

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.tokenize import BM25Tokenizer


def top_k_positions(
    scores: np.ndarray, k: int, candidates: list[int] | np.ndarray | None = None
) -> list[int]:
    """Positions of the `k` highest scores (descending; ties by position), optionally within `candidates`."""
    if candidates is not None:
        pool = np.asarray(candidates, dtype=np.int64)
        if pool.size == 0:
            return []
        sub = scores[pool]
        order = _top_k(sub, k)
        return [int(pool[i]) for i in order]
    return [int(i) for i in _top_k(scores, k)]


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    k = min(k, scores.shape[0])
    if k <= 0:
        return np.empty(0, dtype=np.int64)
    if k < scores.shape[0]:
        # argpartition picks an arbitrary subset among scores tied with the k-th best: take every
        # position scoring more, then the first (lowest) positions tied with it
        threshold = scores[np.argpartition(-scores, k - 1)[k - 1]]
        above = np.flatnonzero(scores > threshold)
        tied = np.flatnonzero(scores == threshold)[: k - above.shape[0]]
        part = np.sort(np.concatenate((above, tied)))
    else:
        part = np.arange(scores.shape[0])
    # stable sort: descending score, ascending position for ties
    return part[np.argsort(-scores[part], kind="stable")[:k]]


class KeywordRetrieverBase:
    """What the keyword retrievers share: settings, the store's BM25 index on warm-up, serialization.

    `FastBM25Retriever` scores an embedded store; the PostgreSQL store's retriever
    (`haygraph.retrieval.postgres.bm25`) scores the segments it loads from its database.
    """

    def __init__(
        self,
        document_store: Any,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        language: Literal["auto", "en", "zh"] = "auto",
        stemming: bool = True,
        stopwords: bool = True,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        self.document_store = document_store
        self.top_k = top_k
        self.filters = filters
        self.language = language
        self.stemming = stemming
        self.stopwords = stopwords
        self.k1 = k1
        self.b = b
        self.method = method
        self._template = BM25Index(BM25Tokenizer(language, stemming, stopwords), k1, b, method)

    def warm_up(self) -> None:
        """Load (or build) the store's BM25 index (idempotent)."""
        self.document_store.bm25_index(self._template)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            top_k=self.top_k,
            filters=self.filters,
            language=self.language,
            stemming=self.stemming,
            stopwords=self.stopwords,
            k1=self.k1,
            b=self.b,
            method=self.method,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)


@component
class FastBM25Retriever(KeywordRetrieverBase):
    """Keyword retrieval with a precomputed sparse BM25 matrix (bm25s); about 100× faster than the stock one.

    Documents with a zero score (no query term) are never returned. Scores are raw BM25 (non-negative).
    """

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Return the `top_k` best BM25 matches for `query`, restricted by `filters`."""
        top_k = top_k if top_k is not None else self.top_k
        filters = filters if filters is not None else self.filters
        if not query or not query.strip() or self.document_store.count_documents() == 0:
            return {"documents": []}
        scores = self.document_store.bm25_index(self._template).scores(query)
        if scores is None:
            return {"documents": []}
        candidates = self.document_store.matching_indices(filters) if filters else None
        docs = []
        for pos in top_k_positions(scores, top_k, candidates):
            score = float(scores[pos])
            if score <= 0:
                break
            doc = self.document_store.document(pos)
            docs.append(replace(doc, score=score, meta={**doc.meta, "bm25_score": score}))
        return {"documents": docs}
