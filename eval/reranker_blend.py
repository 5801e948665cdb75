"""Choose how much of the retrieval score a trained reranker keeps: ``w * fused + (1 - w) * reranker``.

A small cross-encoder trained on a few hundred queries can order the top candidates worse than the
fused retrieval that found them on some queries and better on others; a blend of both scores is often
better than either. Both scores are min-max normalized over the reranked candidates of a query (the
blend then does not depend on the fusion method's scale), exactly as
`haygraph.retrieval.cross_encoder_ranker.blend_scores` does at query time. The weight is chosen on dev
queries carved from the training split (never test) by nDCG@10 over a grid of weights from 0 to 0.9 (`GRID`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from haygraph.eval.metrics import evaluate
from haygraph.retrieval.cross_encoder_ranker import blend_scores

logger = logging.getLogger(__name__)

BLEND_FILE = "haygraph_reranker.json"
"""Written into a trained reranker's directory: its dev figures and the chosen ``retrieval_weight``."""
GRID = (0.0, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Candidate retrieval weights, finer near 0: the min-max fused score spans [0, 1] while the reranker's
probabilities of one query's candidates can lie close together. 1.0 (no reranking) is not offered."""


@dataclass(frozen=True)
class DevQuery:
    """A held-out query with its retrieved candidates (document text, fused score, judged grade)."""

    query: str
    documents: list[str]
    fused: list[float]
    grades: list[int]
    positives: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        query: str,
        qrels: Mapping[str, int],
        candidates: Sequence[tuple[str, float]],
        corpus: Mapping[str, str],
    ) -> DevQuery:
        """From a query's judgments and retrieved (document id, fused score) candidates."""
        kept = [(d, s) for d, s in candidates if d in corpus]
        return cls(
            query=query,
            documents=[corpus[d] for d, _ in kept],
            fused=[float(s) for _, s in kept],
            grades=[int(qrels.get(d, 0)) for d, _ in kept],
            positives=[corpus[d] for d, g in qrels.items() if g > 0 and d in corpus],
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (saved in the run's work folder)."""
        return {
            "query": self.query,
            "documents": self.documents,
            "fused": self.fused,
            "grades": self.grades,
            "positives": self.positives,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DevQuery:
        """Inverse of `to_dict`."""
        return cls(**{k: data[k] for k in ("query", "documents", "fused", "grades", "positives")})


def dev_ndcg(dev: Sequence[DevQuery], scores: Sequence[Sequence[float]], weight: float) -> float:
    """Mean nDCG@10 of the dev queries ranked by the blend of their fused and reranker ``scores``.

    Every relevant document of a query counts in the ideal ranking, also when retrieval missed it
    (``positives``), so the figure is comparable with the evaluation harness's.
    """
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i, (query, reranked) in enumerate(zip(dev, scores, strict=True)):
        qid = f"q{i}"
        blended = blend_scores(query.fused, list(reranked), weight)
        run[qid] = {f"c{j}": s for j, s in enumerate(blended)}
        judged = {f"c{j}": g for j, g in enumerate(query.grades) if g > 0}
        missed = max(0, len(query.positives) - len(judged))
        judged.update({f"missed{j}": 1 for j in range(missed)})
        qrels[qid] = judged or {"none": 0}
    return evaluate(qrels, run, ["nDCG@10"])["nDCG@10"]


def tune_blend(model: Any, dev: Sequence[DevQuery], *, batch_size: int = 32) -> dict[str, Any]:
    """Score the dev candidates with ``model`` (a `CrossEncoder`) and pick the best retrieval weight.

    Returns:
        ``retrieval_weight`` (the chosen w), and dev nDCG@10 for retrieval alone, the reranker alone
        and the blend.

    """
    flat = [(q.query, doc) for q in dev for doc in q.documents]
    import torch

    sigmoid = torch.nn.Sigmoid()
    predicted = (
        [float(x) for x in model.predict(flat, batch_size=batch_size, activation_fn=sigmoid)] if flat else []
    )
    scores: list[list[float]] = []
    at = 0
    for q in dev:
        scores.append(predicted[at : at + len(q.documents)])
        at += len(q.documents)
    by_weight = {w: dev_ndcg(dev, scores, w) for w in GRID}
    best = max(GRID, key=lambda w: by_weight[w])  # ties: the smallest weight (the reranker's say)
    summary = {
        "retrieval_weight": best,
        "dev_ndcg@10": {
            "retrieval": round(dev_ndcg(dev, scores, 1.0), 4),
            "reranker": round(by_weight[0.0], 4),
            "blend": round(by_weight[best], 4),
        },
    }
    logger.info("retrieval weight %.2f on %d dev queries: %s", best, len(dev), summary["dev_ndcg@10"])
    return summary
