"""`RelevanceScorer`: the last stage of every query pipeline, an absolute relevance for each ranked chunk.

It runs after fusion / reranking / the cut, so only the chunks passed on are scored, and it writes into
each document's meta (the ranking `score` is left as it is):

- ``relevance``: the calibrated probability (`haygraph.retrieval.relevance`) that the chunk answers
  the query, with the weights of the pipeline's query mode;
- ``term_coverage`` and ``bm25_normalized``: the lexical signals it used (computed from the store's
  bm25s index whichever BM25 backend retrieved the chunk);
- ``dense_score``: the chunk's cosine with the query when the query was embedded and the retriever did
  not already record it (e.g. a BM25-only hit in hybrid mode).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import ConfigError, QueryError
from haygraph.retrieval.relevance import (
    FEATURE_NAMES,
    normalized_bm25,
    relevance_features,
    relevance_probability,
)
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.tokenize import BM25Tokenizer


@component
class RelevanceScorer:
    """Adds a calibrated absolute `relevance` (and the signals behind it) to each document's meta."""

    def __init__(
        self,
        document_store: EmbeddedDocumentStore,
        weights: dict[str, float],
        language: Literal["auto", "en", "zh"] = "auto",
        stemming: bool = True,
        stopwords: bool = True,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        unknown = sorted(set(weights) - set(FEATURE_NAMES))
        if unknown:
            raise ValueError(f"unknown relevance weight(s) {unknown}; valid: {', '.join(FEATURE_NAMES)}")
        self.document_store = document_store
        self.weights = {name: float(weights.get(name, 0.0)) for name in FEATURE_NAMES}
        self.language = language
        self.stemming = stemming
        self.stopwords = stopwords
        self.k1 = k1
        self.b = b
        self.method = method
        self._vector = tuple(self.weights[name] for name in FEATURE_NAMES)
        self._template = BM25Index(BM25Tokenizer(language, stemming, stopwords), k1, b, method)

    @property
    def uses_cosine(self) -> bool:
        """Whether the weights use the dense cosine (then the query embedding is a required input)."""
        return self.weights["en_cosine"] != 0 or self.weights["zh_cosine"] != 0

    def warm_up(self) -> None:
        """Load or build the store's BM25 index (idempotent); check the store has what the weights need."""
        store = self.document_store
        if self.uses_cosine and store.count_documents() and not store.has_embeddings():
            raise ConfigError(
                "the relevance weights use the dense cosine, but the store holds no embeddings: index with "
                "embeddings, or use weights without en_cosine/zh_cosine (relevance.bm25_uses_cosine=false)"
            )
        store.bm25_index(self._template)

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], query: str, query_embedding: list[float] | None = None
    ) -> dict[str, list[Document]]:
        """Return copies of `documents` (same order, same scores) with relevance signals in their meta."""
        if not documents:
            return {"documents": []}
        if self.uses_cosine and query_embedding is None:
            raise QueryError("the relevance weights use the dense cosine: query_embedding is required")
        store = self.document_store
        index = store.bm25_index(self._template)
        scores = index.scores(query)
        bound = index.score_bound(query)
        unit = self._unit_query(query_embedding)
        missing = [d.id for d in documents if "dense_score" not in d.meta] if unit is not None else []
        cosines = store.dense_scores(missing, unit) if missing and unit is not None else {}
        positions = store.positions([d.id for d in documents])
        out = []
        for doc, pos in zip(documents, positions, strict=True):
            meta = dict(doc.meta)
            if "dense_score" not in meta and doc.id in cosines:
                meta["dense_score"] = cosines[doc.id]
            coverage = index.term_coverage(query, doc.content or "")
            bm25 = (
                normalized_bm25(float(scores[pos]), bound) if scores is not None and pos is not None else 0.0
            )
            cosine = float(meta.get("dense_score", 0.0))
            meta["term_coverage"] = coverage
            meta["bm25_normalized"] = bm25
            meta["relevance"] = relevance_probability(
                relevance_features(cosine, coverage, bm25, query), self._vector
            )
            out.append(replace(doc, meta=meta))
        return {"documents": out}

    def _unit_query(self, embedding: list[float] | None) -> np.ndarray | None:
        """The L2-normalized query vector, or None without one; a size mismatch with the store is an error."""
        if embedding is None:
            return None
        vec = np.asarray(embedding, dtype=np.float32)
        dimension = self.document_store.embedding_dimension()
        if dimension is not None and vec.shape != (dimension,):
            raise QueryError(f"query embedding has shape {vec.shape}, the store holds {dimension}-d vectors")
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm > 0 and np.isfinite(norm) else None

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            document_store=self.document_store,
            weights=self.weights,
            language=self.language,
            stemming=self.stemming,
            stopwords=self.stopwords,
            k1=self.k1,
            b=self.b,
            method=self.method,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RelevanceScorer:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
