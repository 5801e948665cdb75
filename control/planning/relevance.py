"""Evidence quality for the evaluate step: whether what was retrieved is good enough to answer from.

Scores are absolute (`Evidence.relevance`, e.g. a calibrated probability or a dense cosine), not
list-relative, so poor retrieval can be detected and expanded (`Context.relevance_threshold`).
"""

from __future__ import annotations

from collections.abc import Sequence

from haygraph.control.evidence import Evidence, evidence_key


def best_relevance(evidence: Sequence[Evidence]) -> float | None:
    """Absolute quality of a result list: max `relevance`, or max `score` if no item has a relevance."""
    if not evidence:
        return None
    known = [e.relevance for e in evidence if e.relevance is not None]
    return max(known) if known else max(e.score for e in evidence)


def usable_evidence(evidence: Sequence[Evidence], min_relevance: float) -> list[Evidence]:
    """Evidence good enough to answer from (relevance, or score when unknown, >= `min_relevance`)."""
    return [e for e in evidence if evidence_key(e) >= min_relevance]
