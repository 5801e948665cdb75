"""Absolute relevance: a calibrated probability that a chunk answers the query.

The control plane decides "good retrieval or not" by the best chunk's relevance, so the score must be
absolute — min-max or rank-based scores give every list's top hit the same value and cannot tell good
retrieval from bad. Two absolute signals are combined with a logistic model per language:

- the chunk's dense cosine similarity with the query;
- idf-weighted term coverage: the share of the query's BM25 idf mass whose terms the chunk contains
  (terms the corpus never mentions count as missing, with the highest idf).

all-MiniLM-L6-v2 is an English model: on Chinese text its cosines barely separate relevant from
unrelated chunks, so the Chinese model uses coverage only. With `cjk` the query's share of CJK characters
among its letters, the logit blends the two models:

    logit = (1 - cjk) * (w_cos * cosine + w_cov_en * coverage + b_en) + cjk * (w_cov_zh * coverage + b_zh)

The default weights were fitted on the `tune` half of the labelled handbook cases (answerable vs
unanswerable) by `python -m benchmarks.calibrate_relevance`, which also reports accuracy on the held-out
`test`
half; 0.5 on this scale is the decision threshold.
"""

from __future__ import annotations

import math
import re

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN = re.compile(r"[A-Za-z]")


def cjk_share(text: str) -> float:
    """Share of CJK ideographs among the CJK and Latin letters of `text` (0 when it has neither)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN.findall(text))
    return cjk / (cjk + latin) if cjk + latin else 0.0


Features = tuple[float, float, float, float, float]


def relevance_features(cosine: float, coverage: float, query: str) -> Features:
    """The model's inputs, in weight order: ((1-cjk)·cosine, (1-cjk)·coverage, 1-cjk, cjk·coverage, cjk)."""
    share = cjk_share(query)
    latin = 1.0 - share
    return latin * cosine, latin * coverage, latin, share * coverage, share


def relevance_probability(features: Features, weights: Features) -> float:
    """Logistic combination of the features (the per-language biases are among the weights)."""
    z = sum(w * x for w, x in zip(weights, features, strict=True))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)
