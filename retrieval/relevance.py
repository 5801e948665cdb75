"""Absolute relevance: a calibrated probability that a chunk answers the query.

The control plane decides "good retrieval or not" by the best chunk's relevance, so the score must be
absolute — min-max or rank-based scores give every list's top hit the same value and cannot tell good
retrieval from bad. Two absolute signals are combined with a logistic model:

- the chunk's dense cosine similarity with the query (all-MiniLM-L6-v2 is an English model: on Chinese
  text its cosines barely separate relevant from unrelated chunks, so the cosine is weighted by the
  query's share of Latin letters);
- idf-weighted term coverage: the share of the query's BM25 idf mass whose terms the chunk contains
  (terms the corpus never mentions count as missing, with the highest idf).

`relevance = sigmoid(w_cos * cosine * (1 - cjk) + w_cov * coverage + w_cjk * cjk + bias)` where `cjk` is
the query's share of CJK characters among its letters. The default weights were fitted on the `tune`
half of the labelled handbook cases (answerable vs unanswerable) by `python -m eval.calibrate_relevance`,
which also reports accuracy on the held-out `test` half; 0.5 on this scale is the decision threshold.
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


def relevance_features(cosine: float, coverage: float, query: str) -> tuple[float, float, float]:
    """The model's inputs: (cosine weighted by Latin share, term coverage, CJK share of the query)."""
    share = cjk_share(query)
    return cosine * (1.0 - share), coverage, share


def relevance_probability(
    features: tuple[float, float, float], weights: tuple[float, float, float], bias: float
) -> float:
    """Logistic combination of the features; a probability in (0, 1)."""
    z = bias + sum(w * x for w, x in zip(weights, features, strict=True))
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    ez = math.exp(z)
    return ez / (1.0 + ez)
