"""`BlendedSimilarityRanker`: a cross-encoder reranker that keeps part of the retrieval score.

Haystack's `SentenceTransformersSimilarityRanker` replaces each candidate's score by the cross-encoder's
probability. A small reranker (the one `haygraph train-reranker` fine-tunes from MiniLM on a few hundred
queries) is not always better than the fusion that found the candidates; blending the two is. This
component runs the stock ranker on the candidates and scores each by
``retrieval_weight * fused + (1 - retrieval_weight) * probability``, where ``fused`` is the incoming
score min-max normalized over the candidates (so RRF and min-max fusion blend alike) and
``probability`` is the reranker's sigmoid (torch through the stock ranker, or ``backend`` ``onnx`` /
``onnx-int8`` through `haygraph.retrieval.onnx_cross_encoder`). The result stays in [0, 1]; with
``retrieval_weight`` 0 it is the reranker's probability.

Only the first ``top_k_in`` candidates are reranked (the config's ``reranker.top_k_in``); a longer input
list (the evaluation harness asks for 100 results to measure Recall@100) keeps its tail in the incoming
order after them, scored 0.0 (not reranked). The stock ranker would score all of them, ten times the
cross-encoder work for a 100-deep evaluation, and rank a tail it was never meant to see.

A trained reranker directory records the weight chosen on its dev queries in ``haygraph_reranker.json``
(``retrieval_weight``); `model_retrieval_weight` reads it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.onnx_cross_encoder import RERANKER_BACKENDS, OnnxCrossEncoder

logger = logging.getLogger(__name__)

MODEL_INFO_FILE = "haygraph_reranker.json"
"""File in a trained reranker's directory holding its recommended ``retrieval_weight``."""


def min_max(values: Sequence[float]) -> list[float]:
    """Scale ``values`` to [0, 1] by their min and max; all-equal values all become 1.0."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high == low:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


def blend_scores(fused: Sequence[float], reranker: Sequence[float], retrieval_weight: float) -> list[float]:
    """``w * minmax(fused) + (1 - w) * reranker`` per candidate (``reranker`` already a probability).

    Raises:
        ValueError: the lists differ in length, or the weight is outside [0, 1].

    """
    if len(fused) != len(reranker):
        raise ValueError(f"fused and reranker scores differ in length: {len(fused)} != {len(reranker)}")
    if not 0 <= retrieval_weight <= 1:
        raise ValueError(f"retrieval_weight must be in [0, 1], but got {retrieval_weight}")
    w = retrieval_weight
    return [w * f + (1 - w) * r for f, r in zip(min_max(fused), reranker, strict=True)]


def model_retrieval_weight(path: str | Path) -> float | None:
    """The ``retrieval_weight`` a trained reranker directory recommends, or None when it names none.

    Raises:
        ConfigError: the file exists but is not JSON with a weight in [0, 1].

    """
    info = Path(path) / MODEL_INFO_FILE
    if not info.is_file():
        return None
    try:
        weight = json.loads(info.read_text(encoding="utf-8")).get("retrieval_weight")
        if weight is None:
            return None
        value = float(weight)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigError(f"reranker.model {path}: cannot read {info}: {exc}") from exc
    if not 0 <= value <= 1:
        raise ConfigError(f"reranker.model {path}: {info} has retrieval_weight {value}, not in [0, 1]")
    return value


@component
class BlendedSimilarityRanker:
    """Reranks documents with a cross-encoder, blending its probability with the incoming retrieval score."""

    def __init__(
        self,
        model: str,
        top_k: int = 10,
        retrieval_weight: float = 0.0,
        top_k_in: int | None = None,
        batch_size: int = 16,
        backend: str = "torch",
    ) -> None:
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        if top_k_in is not None and top_k_in <= 0:
            raise ValueError(f"top_k_in must be > 0 or None, but got {top_k_in}")
        if not 0 <= retrieval_weight <= 1:
            raise ValueError(f"retrieval_weight must be in [0, 1], but got {retrieval_weight}")
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        if backend not in RERANKER_BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(RERANKER_BACKENDS)}, but got {backend!r}")
        self.model = model
        self.top_k = top_k
        self.retrieval_weight = retrieval_weight
        self.top_k_in = top_k_in
        self.batch_size = batch_size
        self.backend = backend
        self._ranker: Any = None

    def warm_up(self) -> None:
        """Load the cross-encoder (idempotent)."""
        if self._ranker is not None:
            return
        if self.backend != "torch":
            from haygraph.retrieval.embedding_cache import default_cache_dir

            scorer = OnnxCrossEncoder(
                self.model,
                default_cache_dir(),
                quantize=self.backend == "onnx-int8",
                threads=_torch_threads(),
            )
            scorer.warm_up()
            self._ranker = _OnnxRanker(scorer, self.batch_size)
            return
        from haystack_integrations.components.rankers.sentence_transformers import (
            SentenceTransformersSimilarityRanker,
        )

        ranker = SentenceTransformersSimilarityRanker(
            model=self.model, top_k=self.top_k, scale_score=True, batch_size=self.batch_size
        )
        ranker.warm_up()
        self._ranker = ranker

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, documents: list[Document], top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """The first ``top_k_in`` documents reordered by the blended score, then the rest; at most ``top_k``.

        ``top_k`` defaults to the init value. The input documents are not changed (copies are returned).
        """
        top_k = self.top_k if top_k is None else top_k
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        if not documents:
            return {"documents": []}
        self.warm_up()
        head = documents[: self.top_k_in] if self.top_k_in is not None else documents
        ranked = self._ranker.run(query=query, documents=head, top_k=len(head))["documents"]
        fused_by_id = {d.id: float(d.score or 0.0) for d in head}
        fused = [fused_by_id.get(d.id, 0.0) for d in ranked]
        blended = blend_scores(fused, [float(d.score or 0.0) for d in ranked], self.retrieval_weight)
        out = [
            replace(d, score=s, meta={**d.meta, "reranker_score": d.score})
            for d, s in zip(ranked, blended, strict=True)
        ]
        out.sort(key=lambda d: d.score or 0.0, reverse=True)
        seen = {d.id for d in out}
        out.extend(replace(d, score=0.0) for d in documents[len(head) :] if d.id not in seen)
        return {"documents": out[:top_k]}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            model=self.model,
            top_k=self.top_k,
            retrieval_weight=self.retrieval_weight,
            top_k_in=self.top_k_in,
            batch_size=self.batch_size,
            backend=self.backend,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BlendedSimilarityRanker:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)


def _torch_threads() -> int:
    """ONNX Runtime gets as many threads as torch uses (`torch.set_num_threads`): the backends compare."""
    import torch

    return int(torch.get_num_threads())


class _OnnxRanker:
    """The stock ranker's ``run`` contract (scored copies, best first) over an `OnnxCrossEncoder`."""

    def __init__(self, scorer: OnnxCrossEncoder, batch_size: int) -> None:
        self.scorer = scorer
        self.batch_size = batch_size

    def run(self, query: str, documents: list[Document], top_k: int) -> dict[str, list[Document]]:
        unique = list({d.id: d for d in documents}.values())
        probs = self.scorer.score(query, [d.content or "" for d in unique], batch_size=self.batch_size)
        scored = [replace(d, score=float(p)) for d, p in zip(unique, probs, strict=True)]
        scored.sort(key=lambda d: d.score or 0.0, reverse=True)
        return {"documents": scored[:top_k]}
