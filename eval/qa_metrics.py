"""Extractive QA metrics: exact match and token F1, SQuAD 2.0 and MLQA style (pure functions).

Sources:
- SQuAD 2.0's official script (``evaluate-v2.0.py``, Rajpurkar et al.): answers are normalised (lower
  case, punctuation and the articles a/an/the removed, whitespace collapsed); F1 is over whitespace
  tokens; a question whose gold list is empty (unanswerable) scores 1 only for an empty prediction;
  the score of a question is its best over the gold answers.
- MLQA's script (``mlqa_evaluation_v1.py``, Lewis et al. 2020), used for XQuAD by XTREME: the same,
  plus Unicode punctuation removed and, for Chinese, "mixed segmentation": every CJK character is a
  token of its own (whitespace tokens would make a Chinese answer one token and F1 = EM).
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_CJK = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff])")
_PUNCT = set(string.punctuation)


def _is_punct(ch: str) -> bool:
    return ch in _PUNCT or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str, lang: str = "en") -> str:
    """Lower case, no punctuation, no English articles (``en``), single spaces (SQuAD / MLQA)."""
    text = text.lower()
    text = "".join(ch for ch in text if not _is_punct(ch))
    if lang == "en":
        text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(text: str, lang: str = "en") -> list[str]:
    """Tokens of a normalised answer: whitespace words; for ``zh`` every CJK character on its own too."""
    norm = normalize_answer(text, lang)
    if lang == "zh":
        norm = _CJK.sub(r" \1 ", norm)
    return norm.split()


def exact_match(prediction: str, gold: str, lang: str = "en") -> float:
    """1.0 when the normalised prediction equals the normalised gold answer, else 0.0."""
    return float(normalize_answer(prediction, lang) == normalize_answer(gold, lang))


def token_f1(prediction: str, gold: str, lang: str = "en") -> float:
    """Token-overlap F1 of one prediction against one gold answer (both empty: 1.0; one empty: 0.0)."""
    p, g = answer_tokens(prediction, lang), answer_tokens(gold, lang)
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def best_score(prediction: str, golds: Sequence[str], lang: str = "en") -> tuple[float, float]:
    """(EM, F1) of `prediction` against the best of `golds`; no gold (unanswerable): 1 iff it is empty."""
    if not golds:
        empty = float(not normalize_answer(prediction, lang))
        return (empty, empty)
    return (
        max(exact_match(prediction, g, lang) for g in golds),
        max(token_f1(prediction, g, lang) for g in golds),
    )


def qa_scores(
    predictions: Mapping[str, str], golds: Mapping[str, Sequence[str]], lang: str = "en"
) -> dict[str, float]:
    """Official-style totals in percent: ``exact``, ``f1``, ``total`` and ``HasAns_*`` / ``NoAns_*``.

    A question missing from `predictions` counts as an empty prediction.
    """
    has: list[tuple[float, float]] = []
    no: list[tuple[float, float]] = []
    for qid, gold in golds.items():
        em, f1 = best_score(predictions.get(qid, ""), [g for g in gold if normalize_answer(g, lang)], lang)
        (has if any(normalize_answer(g, lang) for g in gold) else no).append((em, f1))
    both = has + no
    out: dict[str, float] = {"total": float(len(both))}
    for name, rows in (("", both), ("HasAns_", has), ("NoAns_", no)):
        if rows:
            out[f"{name}exact"] = 100.0 * sum(r[0] for r in rows) / len(rows)
            out[f"{name}f1"] = 100.0 * sum(r[1] for r in rows) / len(rows)
            out[f"{name}total"] = float(len(rows))
    return out


def contains_gold(text: str, golds: Iterable[str], lang: str = "en") -> bool:
    """Whether a normalised gold answer occurs inside the normalised `text` (a quoted answer holds it)."""
    norm = normalize_answer(text, lang)
    return any(normalize_answer(g, lang) and normalize_answer(g, lang) in norm for g in golds)
