"""`RetrieverScores`: puts a Qdrant retriever's scores where our fusion and relevance stages look for them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict


@component
class RetrieverScores:
    """Record each document's retriever score in ``meta["<kind>_score"]`` (as our own retrievers do).

    `kind="bm25"` drops documents scoring 0 (no query term), like `FastBM25Retriever`; `kind="dense"` with
    `scale_score` maps the cosine to (cos + 1) / 2 like `FastEmbeddingRetriever`, keeping the raw cosine in
    meta (the absolute relevance the control plane judges retrieval quality by).
    """

    def __init__(self, kind: Literal["bm25", "dense"], scale_score: bool = False) -> None:
        if kind not in ("bm25", "dense"):
            raise ValueError(f"kind must be one of bm25, dense, but got {kind!r}")
        self.kind = kind
        self.scale_score = scale_score

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Return copies of `documents` with their score recorded (inputs are not mutated)."""
        out = []
        for doc in documents:
            score = float(doc.score or 0.0)
            if self.kind == "bm25" and score <= 0:
                continue
            shown = (score + 1) / 2 if self.kind == "dense" and self.scale_score else score
            out.append(replace(doc, score=shown, meta={**doc.meta, f"{self.kind}_score": score}))
        return {"documents": out}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self, kind=self.kind, scale_score=self.scale_score)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetrieverScores:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
