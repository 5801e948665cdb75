"""Score-cliff cut (dynamic top-k): keep results until the score falls off a cliff.

Our nearest relative in Haystack is `TopPSampler`; like it, the cut always keeps at least one document
when given any and never mutates its input.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.errors import ScoreScaleError

logger = logging.getLogger(__name__)


def validate_scores(scores: Sequence[float | None]) -> list[float]:
    """Check that `scores` are on a scale the cut can use: present, finite, non-negative, descending.

    The cut compares each score with a fraction of the previous one, which only means something for
    positive, comparable scores: reranker probabilities, min-max fused scores, RRF scores, raw BM25, or
    cosine mapped to [0, 1]. Raw cosine similarities (which can be negative) are refused.
    """
    checked: list[float] = []
    for i, score in enumerate(scores):
        if score is None or not isinstance(score, int | float) or not math.isfinite(score):
            raise ScoreScaleError(
                f"score-cliff cut needs a finite score on every document; item {i} has {score!r}"
            )
        if score < 0:
            raise ScoreScaleError(
                f"score-cliff cut needs non-negative scores (e.g. probabilities or normalized fused scores); "
                f"item {i} has {score}"
            )
        if checked and score > checked[-1] + 1e-12:
            raise ScoreScaleError(f"score-cliff cut needs a list ranked by descending score; item {i} rises")
        checked.append(float(score))
    return checked


def cliff_cut(
    scores: Sequence[float | None], drop_ratio: float = 0.5, max_keep: int = 5, min_keep: int = 1
) -> int:
    """Return how many of the ranked `scores` to keep (SPEC §2).

    Keep the first; stop at the first score below `previous * (1 - drop_ratio)`, or once `max_keep` are
    kept; never keep fewer than `min(min_keep, len(scores))`. Equal scores (ties) never form a cliff; a zero
    after a positive score always does.
    """
    if not 0 < drop_ratio < 1:
        raise ValueError(f"drop_ratio must be in (0, 1), but got {drop_ratio}")
    if max_keep <= 0 or min_keep <= 0:
        raise ValueError(f"max_keep and min_keep must be > 0, but got {max_keep} and {min_keep}")
    values = validate_scores(scores)
    if not values:
        return 0
    floor = min(min_keep, max_keep, len(values))
    kept = 1
    while kept < min(max_keep, len(values)):
        # relative tolerance: a drop of exactly drop_ratio (e.g. 0.8 -> 0.6 at 0.25, where 0.8 * 0.75 is
        # 0.6000000000000001 in floating point) is on the boundary and kept, as documented
        if kept >= floor and values[kept] < values[kept - 1] * (1 - drop_ratio) * (1 - 1e-9):
            break
        kept += 1
    return max(kept, floor)


@component
class ScoreCliffCutter:
    """Keeps the head of a ranked list up to the first score cliff; replaces a fixed top-k."""

    def __init__(self, drop_ratio: float = 0.5, max_keep: int = 5, min_keep: int = 1) -> None:
        if not 0 < drop_ratio < 1:
            raise ValueError(f"drop_ratio must be in (0, 1), but got {drop_ratio}")
        if max_keep <= 0:
            raise ValueError(f"max_keep must be > 0, but got {max_keep}")
        if min_keep <= 0:
            raise ValueError(f"min_keep must be > 0, but got {min_keep}")
        self.drop_ratio = drop_ratio
        self.max_keep = max_keep
        self.min_keep = min_keep

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], drop_ratio: float | None = None, max_keep: int | None = None
    ) -> dict[str, list[Document]]:
        """Return the documents before the first score cliff (at most `max_keep`, at least one)."""
        if not documents:
            return {"documents": []}
        drop_ratio = drop_ratio if drop_ratio is not None else self.drop_ratio
        max_keep = max_keep if max_keep is not None else self.max_keep
        kept = cliff_cut([d.score for d in documents], drop_ratio, max_keep, self.min_keep)
        if kept < len(documents):
            logger.debug("score-cliff cut kept %d of %d documents", kept, len(documents))
        return {"documents": documents[:kept]}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, drop_ratio=self.drop_ratio, max_keep=self.max_keep, min_keep=self.min_keep
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreCliffCutter:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
