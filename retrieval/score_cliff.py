"""Score-cliff cut (dynamic top-k): keep results until the score falls off a cliff.

Our nearest relative in Haystack is `TopPSampler`; like it, the cut always keeps at least one document
when given any and never mutates its input.

The scale matters: rank-based scores (RRF) never halve between neighbours, so a cliff never shows. The
default query pipeline therefore cuts on the calibrated relevance each chunk carries in its meta
(``score_field="relevance"``, written by `RelevanceScorer`) — an absolute probability, where a halving
means something and an absolute floor (`min_score`) drops chunks that are unlikely to answer at all, so
a query with no match keeps only its top chunk. That meta score does not follow the ranking, so on it
the list is walked in rank order without requiring it to descend.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.errors import ScoreScaleError

logger = logging.getLogger(__name__)


def validate_scores(scores: Sequence[float | None], descending: bool = True) -> list[float]:
    """Check that `scores` are on a scale the cut can use: present, finite, non-negative, descending.

    The cut compares each score with a fraction of the previous one, which only means something for
    positive, comparable scores: reranker probabilities, min-max fused scores, RRF scores, raw BM25, or
    cosine mapped to [0, 1]. Raw cosine similarities (which can be negative) are refused. With
    ``descending=False`` (a meta score walked in rank order) rising scores are allowed.
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
        if descending and checked and score > checked[-1] + 1e-12:
            raise ScoreScaleError(f"score-cliff cut needs a list ranked by descending score; item {i} rises")
        checked.append(float(score))
    return checked


def cliff_cut(
    scores: Sequence[float | None],
    drop_ratio: float = 0.5,
    max_keep: int = 5,
    min_keep: int = 1,
    min_score: float = 0.0,
    descending: bool = True,
) -> int:
    """Return how many of the ranked `scores` to keep (SPEC §2).

    Keep the first; stop at the first score below `previous * (1 - drop_ratio)` or below `min_score`, or
    once `max_keep` are kept; never keep fewer than `min(min_keep, len(scores))`. Equal scores (ties) never
    form a cliff; a zero after a positive score always does. `descending=False` accepts scores that rise
    (a meta score walked in rank order: each is still compared with the one before it).
    """
    if not 0 < drop_ratio < 1:
        raise ValueError(f"drop_ratio must be in (0, 1), but got {drop_ratio}")
    if max_keep <= 0 or min_keep <= 0:
        raise ValueError(f"max_keep and min_keep must be > 0, but got {max_keep} and {min_keep}")
    if not math.isfinite(min_score) or min_score < 0:
        raise ValueError(f"min_score must be a finite number >= 0, but got {min_score}")
    values = validate_scores(scores, descending=descending)
    if not values:
        return 0
    floor = min(min_keep, max_keep, len(values))
    kept = 1
    while kept < min(max_keep, len(values)):
        # relative tolerance: a drop of exactly drop_ratio (e.g. 0.8 -> 0.6 at 0.25, where 0.8 * 0.75 is
        # 0.6000000000000001 in floating point) is on the boundary and kept, as documented
        cliff = values[kept] < values[kept - 1] * (1 - drop_ratio) * (1 - 1e-9)
        if kept >= floor and (cliff or values[kept] < min_score):
            break
        kept += 1
    return max(kept, floor)


@component
class ScoreCliffCutter:
    """Keeps the head of a ranked list up to the first score cliff; replaces a fixed top-k."""

    def __init__(
        self,
        drop_ratio: float = 0.5,
        max_keep: int = 5,
        min_keep: int = 1,
        score_field: str | None = None,
        min_score: float = 0.0,
    ) -> None:
        """Create the cut.

        Args:
            drop_ratio: a score below ``previous * (1 - drop_ratio)`` is a cliff.
            max_keep: keep at most this many.
            min_keep: keep at least this many (when given as many).
            score_field: cut on ``meta[score_field]`` (e.g. "relevance") instead of the ranking `score`;
                every document must carry it.
            min_score: an absolute floor: a score below it ends the list (after `min_keep`).

        """
        if not 0 < drop_ratio < 1:
            raise ValueError(f"drop_ratio must be in (0, 1), but got {drop_ratio}")
        if max_keep <= 0:
            raise ValueError(f"max_keep must be > 0, but got {max_keep}")
        if min_keep <= 0:
            raise ValueError(f"min_keep must be > 0, but got {min_keep}")
        if not math.isfinite(min_score) or min_score < 0:
            raise ValueError(f"min_score must be a finite number >= 0, but got {min_score}")
        if score_field is not None and not score_field:
            raise ValueError("score_field must be a meta key or None, but got ''")
        self.drop_ratio = drop_ratio
        self.max_keep = max_keep
        self.min_keep = min_keep
        self.score_field = score_field
        self.min_score = min_score

    @component.output_types(documents=list[Document])
    def run(
        self, documents: list[Document], drop_ratio: float | None = None, max_keep: int | None = None
    ) -> dict[str, list[Document]]:
        """Return the documents before the first score cliff (at most `max_keep`, at least one)."""
        if not documents:
            return {"documents": []}
        drop_ratio = drop_ratio if drop_ratio is not None else self.drop_ratio
        max_keep = max_keep if max_keep is not None else self.max_keep
        field = self.score_field
        scores = [d.score if field is None else d.meta.get(field) for d in documents]
        kept = cliff_cut(
            scores, drop_ratio, max_keep, self.min_keep, min_score=self.min_score, descending=field is None
        )
        if kept < len(documents):
            logger.debug("score-cliff cut kept %d of %d documents", kept, len(documents))
        return {"documents": documents[:kept]}

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            drop_ratio=self.drop_ratio,
            max_keep=self.max_keep,
            min_keep=self.min_keep,
            score_field=self.score_field,
            min_score=self.min_score,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreCliffCutter:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
