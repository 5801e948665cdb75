"""Absolute relevance: a calibrated probability that a chunk answers the query (pure math).

The control plane decides "good retrieval or not" by the best chunk's relevance, so the score must be
absolute — min-max or rank-based scores give every list's top hit the same value and cannot tell good
retrieval from bad. Three absolute signals per chunk, each computable in every query mode:

- ``cosine``: the chunk's dense cosine similarity with the query (only when the query was embedded:
  dense and hybrid mode; 0 otherwise);
- ``coverage``: idf-weighted term coverage, the share of the query's BM25 idf mass whose terms the
  chunk contains (terms the corpus never mentions count as missing, with the highest idf);
- ``bm25``: the chunk's BM25 score divided by `BM25Index.score_bound` (the sum over query terms of each
  term's best score in any document), in [0, 1].

all-MiniLM-L6-v2 is an English model: on Chinese text its cosines barely separate relevant from
unrelated chunks. So the logistic model has one block of weights per language, blended by the query's
share of CJK characters among its letters (``cjk``):

    logit = (1 - cjk) * (w·[cosine, coverage, bm25] + b_en) + cjk * (w'·[cosine, coverage, bm25] + b_zh)

Each query mode has its own weights (`RelevanceConfig`), fitted on the ``tune`` half of the labelled
handbook cases by ``python -m haygraph.eval.calibrate_relevance --mode MODE``; 0.5 is the decision
threshold. `RelevanceScorer` (relevance_scorer.py) applies them inside the query pipeline.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")

SIGNALS: tuple[str, ...] = ("cosine", "coverage", "bm25")
"""The per-chunk signals, in feature order within each language block."""

FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{lang}_{name}" for lang in ("en", "zh") for name in (*SIGNALS, "bias")
)
"""Names of the model's inputs (and of its weights): en_cosine, ..., en_bias, zh_cosine, ..., zh_bias."""

Features = tuple[float, ...]


def cjk_count(text: str) -> int:
    """How many CJK ideographs `text` holds."""
    return len(_CJK.findall(text))


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the CJK and Latin letters of `text` (0 when it has neither)."""
    cjk = cjk_count(text)
    latin = len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


def normalized_bm25(score: float, bound: float) -> float:
    """A BM25 score as a share of the query's score bound, clipped to [0, 1] (0 when the bound is 0)."""
    if bound <= 0 or score <= 0:
        return 0.0
    return min(1.0, score / bound)


def relevance_features(cosine: float, coverage: float, bm25: float, query: str) -> Features:
    """The model's inputs in `FEATURE_NAMES` order: each signal (and a bias of 1) times its language share."""
    share = cjk_share(query)
    signals = (cosine, coverage, bm25, 1.0)
    return tuple(w * x for w in (1.0 - share, share) for x in signals)


def relevance_probability(features: Sequence[float], weights: Sequence[float]) -> float:
    """Logistic combination of the features (the per-language biases are among the weights)."""
    z = sum(w * x for w, x in zip(weights, features, strict=True))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)
