"""BM25 as sparse vectors: our tokenisation, BM25 term-frequency weights, IDF left to Qdrant.

A BM25 score is a sum over query terms of ``idf(t) * tf_part(t, d)``. The document side
(`bm25_term_weights`) is the length-normalized term frequency of Lucene's BM25 as bm25s computes it
(``tf / (tf + k1 * (1 - b + b * dl / avgdl))``; Robertson & Zaragoza 2009, eq. 3.15, without the constant
``k1 + 1`` factor, as Lucene and bm25s drop it). The query side (`query_term_weights`) is the count of each
term. The collection's sparse vector is created with Qdrant's IDF modifier, so the engine multiplies in
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` — the same formula as bm25s' "lucene" method — from its own
statistics, which stay right as the collection grows and is sharded.

Terms become sparse indices by hashing (`term_index`, 31 bits of BLAKE2b), so no vocabulary has to be
shared between writers; `SPARSE_VOCABULARY` names the scheme and is recorded with the collection.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace
from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import SparseEmbedding

from haygraph.retrieval.tokenize import BM25Tokenizer

SPARSE_VOCABULARY = "blake2b-31/v1"
"""Name of the term -> index scheme; a collection written with another one cannot be queried with this."""


def term_index(term: str) -> int:
    """The sparse-vector index of `term`: 31 bits of its BLAKE2b digest (stable across processes)."""
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def bm25_term_weights(tokens: list[str], k1: float, b: float, avgdl: float) -> dict[str, float]:
    """Lucene BM25 document-side weight of every term of a document (see the module docstring).

    >>> round(bm25_term_weights(["a", "a", "b"], k1=1.2, b=0.75, avgdl=3.0)["a"], 4)  # 2 / (2 + 1.2)
    0.625
    """
    if avgdl <= 0:
        raise ValueError(f"avgdl must be > 0, but got {avgdl}")
    norm = k1 * (1 - b + b * len(tokens) / avgdl)
    return {term: tf / (tf + norm) for term, tf in Counter(tokens).items()}


def query_term_weights(tokens: list[str]) -> dict[str, float]:
    """Query-side weights: each term's count (bm25s sums a repeated query term once per occurrence)."""
    return {term: float(n) for term, n in Counter(tokens).items()}


def to_sparse(weights: dict[str, float]) -> SparseEmbedding:
    """A Haystack `SparseEmbedding` from term weights, indices sorted; colliding terms add up."""
    merged: dict[int, float] = {}
    for term, weight in weights.items():
        idx = term_index(term)
        merged[idx] = merged.get(idx, 0.0) + weight
    indices = sorted(merged)
    return SparseEmbedding(indices=indices, values=[merged[i] for i in indices])


def average_length(tokenizer: BM25Tokenizer, texts: list[str]) -> float:
    """Mean token count of `texts` under `tokenizer` (1.0 for an empty list, so weights stay defined)."""
    if not texts:
        return 1.0
    return max(sum(len(tokenizer(t)) for t in texts) / len(texts), 1e-6)


@component
class BM25SparseDocumentEmbedder:
    """Adds a BM25 sparse embedding (`Document.sparse_embedding`) to each document.

    `avgdl` is the corpus' mean document length in tokens; it is fixed when a collection is first
    written and recorded with it (re-copy the store to refresh it after the corpus changed a lot).
    """

    def __init__(
        self,
        avgdl: float,
        language: Literal["auto", "en", "zh"] = "auto",
        stemming: bool = True,
        stopwords: bool = True,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        if avgdl <= 0:
            raise ValueError(f"avgdl must be > 0, but got {avgdl}")
        self.avgdl = avgdl
        self.language = language
        self.stemming = stemming
        self.stopwords = stopwords
        self.k1 = k1
        self.b = b
        self._tokenizer = BM25Tokenizer(language, stemming, stopwords)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Return copies of `documents` carrying their BM25 sparse embedding (inputs are not mutated)."""
        out = []
        for doc in documents:
            weights = bm25_term_weights(self._tokenizer(doc.content or ""), self.k1, self.b, self.avgdl)
            out.append(replace(doc, sparse_embedding=to_sparse(weights)))
        return {"documents": out}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            avgdl=self.avgdl,
            language=self.language,
            stemming=self.stemming,
            stopwords=self.stopwords,
            k1=self.k1,
            b=self.b,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25SparseDocumentEmbedder:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)


@component
class BM25SparseTextEmbedder:
    """Turns a query into its BM25 sparse embedding (term counts; Qdrant applies the IDF)."""

    def __init__(
        self, language: Literal["auto", "en", "zh"] = "auto", stemming: bool = True, stopwords: bool = True
    ) -> None:
        self.language = language
        self.stemming = stemming
        self.stopwords = stopwords
        self._tokenizer = BM25Tokenizer(language, stemming, stopwords)

    @component.output_types(sparse_embedding=SparseEmbedding)
    def run(self, text: str) -> dict[str, SparseEmbedding]:
        """Return the sparse embedding of `text` (empty when no term survives tokenisation)."""
        return {"sparse_embedding": to_sparse(query_term_weights(self._tokenizer(text)))}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, language=self.language, stemming=self.stemming, stopwords=self.stopwords)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25SparseTextEmbedder:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
