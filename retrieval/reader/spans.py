"""From a window's start/end logits to answer spans and the no-answer score (pure NumPy).

The SQuAD 2.0 recipe (Devlin et al. 2019, section 4.3; the `run_squad` post-processing of Hugging
Face's examples): a span i..j scores ``start[i] + end[j]``, the no-answer "span" is the first token,
``start[0] + end[0]``; over a passage read in several windows the best span is compared with the
*lowest* no-answer score of its windows (the window that sees the answer is the one least sure there
is none). The margin best span - no answer is the answer/no-answer evidence: > 0 means the model
prefers the span.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_ANSWER_TOKENS = 48
"""Longest span considered, in tokens (a list item or a table row's value fits; a page does not)."""


@dataclass(frozen=True)
class TokenSpan:
    """A span of row positions `start`..`end` (inclusive) in window `window`, with its logit score."""

    score: float
    window: int
    start: int
    end: int


def window_spans(
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    context: tuple[int, int],
    *,
    window: int = 0,
    top_n: int = 3,
    max_tokens: int = MAX_ANSWER_TOKENS,
) -> list[TokenSpan]:
    """The `top_n` best spans inside row positions ``context[0] <= i <= j < context[1]``, best first.

    A span is at most `max_tokens` long. Empty when the context is empty.
    """
    a, b = context
    if b <= a:
        return []
    s = np.asarray(start_logits[a:b], dtype=np.float64)
    e = np.asarray(end_logits[a:b], dtype=np.float64)
    scores = s[:, None] + e[None, :]
    n = b - a
    i, j = np.indices((n, n))
    scores[(j < i) | (j - i >= max_tokens)] = -np.inf
    flat = scores.ravel()
    k = min(top_n, int(np.isfinite(flat).sum()))
    best = np.argpartition(-flat, k - 1)[:k]
    best = best[np.argsort(-flat[best], kind="stable")]
    return [TokenSpan(float(flat[x]), window, a + int(x // n), a + int(x % n)) for x in best]


def null_score(start_logits: np.ndarray, end_logits: np.ndarray) -> float:
    """The no-answer score of one window: the first token's start + end logits."""
    return float(start_logits[0]) + float(end_logits[0])


def softmax(logits: np.ndarray) -> np.ndarray:
    """Softmax over the last axis (stable)."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return np.asarray(p / p.sum(axis=-1, keepdims=True))


def sigmoid(x: float) -> float:
    """The logistic function, without overflow for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + float(np.exp(-x)))
    z = float(np.exp(x))
    return z / (1.0 + z)
