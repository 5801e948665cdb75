"""Retrieval metrics as pure functions over id-keyed dicts, following trec_eval's conventions.

Inputs (BEIR / pytrec_eval shapes, never mutated):

- ``qrels``: query id -> {document id -> integer grade}; relevant means grade > 0.
- ``run``: query id -> {document id -> score}; higher scores rank first.

Ranking rule: documents are sorted by score descending; ties are broken by document id
descending (plain string comparison), which is the order trec_eval and pytrec_eval use
(trec_eval ``form_res_rels.c``: sort by sim, then by docno, both descending). With this rule our
numbers equal trec_eval's even on runs with tied scores (checked in
``tests/eval/test_metrics_comparison.py``).

Averaging: each metric's mean is taken over every query in ``qrels``. A query missing from the
run (or with an empty ranking) scores 0, and so does a query whose judgments hold no grade > 0
(trec_eval gives 0 there too). Documents in the run that are not judged count as non-relevant.

Metric names for `evaluate` (case-insensitive, ``@k`` required): ``nDCG@k``, ``MRR@k``,
``HitRate@k``, ``Recall@k``, ``MAP@k``, ``P@k``. Results are keyed by the canonical spelling.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from haygraph.eval.errors import MetricError

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]
_Kernel = Callable[[Sequence[str], Mapping[str, int], int], float]


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Return the document ids of one query ranked by score descending, ties by id descending.

    Raises:
        MetricError: a score is not a finite number.

    """
    for doc_id, score in scores.items():
        if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
            raise MetricError(f"score of document {doc_id!r} must be a finite number, got {score!r}")
    return [doc_id for doc_id, _ in sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def _relevant(judgments: Mapping[str, int]) -> set[str]:
    """Ids of the documents with grade > 0."""
    return {doc_id for doc_id, grade in judgments.items() if grade > 0}


def _hit_rate(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """1.0 if a relevant document is in the top k, else 0.0 (trec_eval ``success_k``)."""
    relevant = _relevant(judgments)
    return 1.0 if any(doc_id in relevant for doc_id in ranked[:k]) else 0.0


def _reciprocal_rank(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """1/rank of the first relevant document within the top k, else 0 (trec_eval ``recip_rank`` cut at k)."""
    relevant = _relevant(judgments)
    for rank, doc_id in enumerate(ranked[:k], start=1):
        if doc_id in relevant:
            return 1.0 / rank
    return 0.0


def _ndcg(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """nDCG@k with linear gains, as trec_eval ``ndcg_cut`` (Järvelin & Kekäläinen 2002).

    DCG@k = sum over ranks i <= k of gain(d_i) / log2(i + 1), gain = grade if grade > 0 else 0.
    IDCG@k is the DCG@k of the judged documents sorted by grade, so nDCG is in [0, 1].
    """
    dcg = sum(
        max(judgments.get(doc_id, 0), 0) / math.log2(rank + 1)
        for rank, doc_id in enumerate(ranked[:k], start=1)
    )
    ideal_gains = sorted((grade for grade in judgments.values() if grade > 0), reverse=True)[:k]
    idcg = sum(gain / math.log2(rank + 1) for rank, gain in enumerate(ideal_gains, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def _recall(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """|relevant in top k| / |relevant| (trec_eval ``recall_k``); 0 when nothing is relevant."""
    relevant = _relevant(judgments)
    if not relevant:
        return 0.0
    return sum(1 for doc_id in ranked[:k] if doc_id in relevant) / len(relevant)


def _precision(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """|relevant in top k| / k (trec_eval ``P_k``: the divisor is k even if fewer were retrieved)."""
    relevant = _relevant(judgments)
    return sum(1 for doc_id in ranked[:k] if doc_id in relevant) / k


def _average_precision(ranked: Sequence[str], judgments: Mapping[str, int], k: int) -> float:
    """AP@k = sum of P@i over relevant ranks i <= k, divided by |relevant| (trec_eval ``map_cut_k``)."""
    relevant = _relevant(judgments)
    if not relevant:
        return 0.0
    hits = 0
    total = 0.0
    for rank, doc_id in enumerate(ranked[:k], start=1):
        if doc_id in relevant:
            hits += 1
            total += hits / rank
    return total / len(relevant)


@dataclass(frozen=True)
class MetricSpec:
    """A parsed metric name: its canonical spelling (``nDCG@10``), family and cutoff."""

    name: str
    family: str
    k: int


_FAMILIES: dict[str, tuple[str, _Kernel]] = {
    "ndcg": ("nDCG", _ndcg),
    "mrr": ("MRR", _reciprocal_rank),
    "hitrate": ("HitRate", _hit_rate),
    "recall": ("Recall", _recall),
    "map": ("MAP", _average_precision),
    "p": ("P", _precision),
}
_ALIASES = {"hit_rate": "hitrate", "hit": "hitrate", "success": "hitrate", "precision": "p", "r": "recall"}
VALID_METRICS = ("nDCG@k", "MRR@k", "HitRate@k", "Recall@k", "MAP@k", "P@k")


def _check_k(k: int) -> int:
    """Return ``k`` if it is a positive int, else raise `MetricError`."""
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise MetricError(f"k must be a positive integer, but got {k!r}")
    return k


def parse_metric(name: str) -> MetricSpec:
    """Parse ``"nDCG@10"``-style names (case-insensitive); unknown names raise listing the valid ones."""
    family_text, sep, k_text = name.strip().partition("@")
    family_key = family_text.strip().lower()
    family_key = _ALIASES.get(family_key, family_key)
    valid = ", ".join(VALID_METRICS)
    if family_key not in _FAMILIES or not sep:
        raise MetricError(f"unknown metric {name!r}; valid metrics are {valid} (k a positive integer)")
    if not k_text.strip().isdigit():
        raise MetricError(f"metric {name!r} needs a positive integer cutoff after '@'; valid: {valid}")
    k = _check_k(int(k_text))
    canonical = _FAMILIES[family_key][0]
    return MetricSpec(name=f"{canonical}@{k}", family=family_key, k=k)


def _per_query(qrels: Qrels, run: Run, k: int, kernel: _Kernel) -> dict[str, float]:
    """Apply ``kernel`` to every query of ``qrels``; missing queries score 0."""
    _check_k(k)
    return {
        query_id: kernel(rank_documents(run.get(query_id, {})), judgments, k)
        for query_id, judgments in qrels.items()
    }


def _mean(scores: Mapping[str, float]) -> float:
    """Arithmetic mean; an empty qrels has no mean and raises."""
    if not scores:
        raise MetricError("qrels holds no query: there is nothing to average")
    return math.fsum(scores.values()) / len(scores)


def hit_rate_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """HitRate@k of every query in ``qrels``: 1 if a relevant document is ranked in the top k."""
    return _per_query(qrels, run, k, _hit_rate)


def hit_rate(qrels: Qrels, run: Run, k: int) -> float:
    """Mean HitRate@k (trec_eval ``success_k``; BEIR/ranx ``hit_rate@k``)."""
    return _mean(hit_rate_per_query(qrels, run, k))


def reciprocal_rank_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """Reciprocal rank of the first relevant document within the top k (0 if none), per query."""
    return _per_query(qrels, run, k, _reciprocal_rank)


def mrr(qrels: Qrels, run: Run, k: int) -> float:
    """MRR@k: mean reciprocal rank cut at k (Voorhees, TREC-8 QA track 1999; trec_eval ``recip_rank``)."""
    return _mean(reciprocal_rank_per_query(qrels, run, k))


def ndcg_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """Graded nDCG@k per query, linear gain = grade (Järvelin & Kekäläinen 2002; trec_eval ``ndcg_cut``)."""
    return _per_query(qrels, run, k, _ndcg)


def ndcg(qrels: Qrels, run: Run, k: int) -> float:
    """Mean graded nDCG@k: DCG = sum grade_i / log2(i + 1), ideal DCG from the qrels (trec_eval ndcg_cut)."""
    return _mean(ndcg_per_query(qrels, run, k))


def recall_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """Recall@k per query: relevant documents in the top k over all relevant documents."""
    return _per_query(qrels, run, k, _recall)


def recall(qrels: Qrels, run: Run, k: int) -> float:
    """Mean Recall@k (trec_eval ``recall_k``)."""
    return _mean(recall_per_query(qrels, run, k))


def precision_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """Precision@k per query: relevant documents in the top k over k."""
    return _per_query(qrels, run, k, _precision)


def precision(qrels: Qrels, run: Run, k: int) -> float:
    """Mean P@k (trec_eval ``P_k``: divides by k even when fewer documents were retrieved)."""
    return _mean(precision_per_query(qrels, run, k))


def average_precision_per_query(qrels: Qrels, run: Run, k: int) -> dict[str, float]:
    """AP@k per query: sum of P@i at relevant ranks i <= k over the number of relevant documents."""
    return _per_query(qrels, run, k, _average_precision)


def map_at_k(qrels: Qrels, run: Run, k: int) -> float:
    """MAP@k: mean AP@k, divided by all relevant documents (trec_eval ``map_cut_k``; ranx ``map@k``)."""
    return _mean(average_precision_per_query(qrels, run, k))


def evaluate_per_query(qrels: Qrels, run: Run, metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """Canonical metric name -> {query id -> score} for every query in ``qrels``.

    Each query's run is ranked once and shared by all metrics.

    Raises:
        MetricError: an unknown metric name (the message lists the valid ones) or a bad score.

    """
    if isinstance(metrics, str):
        raise MetricError("metrics must be a sequence of names such as ['nDCG@10'], not one string")
    specs = [parse_metric(name) for name in metrics]
    ranked = {query_id: rank_documents(run.get(query_id, {})) for query_id in qrels}
    results: dict[str, dict[str, float]] = {}
    for spec in specs:
        kernel = _FAMILIES[spec.family][1]
        results[spec.name] = {
            query_id: kernel(ranked[query_id], judgments, spec.k) for query_id, judgments in qrels.items()
        }
    return results


def evaluate(qrels: Qrels, run: Run, metrics: Sequence[str]) -> dict[str, float]:
    """Canonical metric name (``nDCG@10``) -> mean over the queries of ``qrels``.

    Raises:
        MetricError: an unknown metric name, a bad cutoff, a non-finite score or an empty qrels.

    """
    return {name: _mean(scores) for name, scores in evaluate_per_query(qrels, run, metrics).items()}
