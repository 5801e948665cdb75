"""Hybrid fusion of BM25 and dense result lists: weighted RRF (default) or weighted min-max scores.

Haystack's DocumentJoiner offers weighted RRF, but not min-max normalized fusion (which measured higher
on SciFact: 0.731 vs 0.715 nDCG@10), and it drops the per-retriever scores. `HybridFusion` keeps each
document's raw `bm25_score` and `dense_score` in meta — the dense cosine is the absolute relevance the
control plane needs — and deduplicates results by content hash.

Language-aware: given the languages the embedding model serves (`dense_languages`, from
`EmbedderConfig.languages`), the dense list's weight follows the query's language and each dense hit's
contribution follows its chunk's language (`served_share`). The bundled all-MiniLM-L6-v2 serves English
only, so a Chinese query is ranked by BM25 alone (cmrc2018 nDCG@10: 0.610 RRF / 0.892 min-max when dense
had its preset weight, 0.986 for BM25) and a Chinese chunk cannot ride into an English query's results
on a meaningless cosine. Mixed text is weighted by its share of each script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict

from haygraph.retrieval.relevance import cjk_share

LANGUAGES = ("en", "zh")
"""Languages a `dense_languages` list may name: en (Latin-script text) and zh (CJK ideographs)."""


class FusionMethod(Enum):
    """How ranked lists are combined."""

    RRF = "rrf"
    MINMAX = "minmax"

    @classmethod
    def from_str(cls, value: str) -> FusionMethod:
        """Parse a method name, listing the valid ones on error."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(
                f"unknown fusion method {value!r}; valid: {', '.join(m.value for m in cls)}"
            ) from None


Factors = Sequence[Mapping[str, float] | None] | None
"""Per-list, per-document multipliers of a document's contribution (missing: 1.0)."""


def served_share(text: str, languages: Sequence[str]) -> float:
    """Share of `text` in the `languages` a model serves, in [0, 1], by script (`cjk_share`).

    CJK ideographs count as zh, everything else (Latin letters, or text with neither) as en:
    ``served_share("蛋白质", ["en"]) == 0.0``, ``served_share("protein", ["en"]) == 1.0``.
    """
    zh = cjk_share(text)
    return ("en" in languages) * (1.0 - zh) + ("zh" in languages) * zh


def rrf_scores(
    rankings: Sequence[Sequence[str]], weights: Sequence[float], k: int = 60, factors: Factors = None
) -> dict[str, float]:
    """Weighted reciprocal rank fusion: score(d) = Σ_i w_i · f_i(d) / (k + rank_i(d)), ranks from 1.

    `factors` optionally scales each document's contribution per list (f_i(d), default 1).
    Source: Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet…", SIGIR 2009.
    """
    _check(rankings, weights)
    fused: dict[str, float] = {}
    for i, (ids, weight) in enumerate(zip(rankings, weights, strict=True)):
        scale = _factors(factors, i)
        for rank, doc_id in enumerate(ids, start=1):
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * scale.get(doc_id, 1.0) / (k + rank)
    return fused


def minmax_scores(
    results: Sequence[dict[str, float]], weights: Sequence[float], factors: Factors = None
) -> dict[str, float]:
    """Weighted sum of per-list min-max normalized scores; a document missing from a list gets 0 there.

    Each list is mapped to [0, 1] by (s - min) / (max - min); a list whose scores are all equal maps to 1.
    `factors` optionally scales each document's contribution per list (default 1).
    Source: Fox & Shaw, "Combination of multiple searches" (CombSUM), TREC-2, 1994.
    """
    _check(results, weights)
    fused: dict[str, float] = {}
    for i, (scores, weight) in enumerate(zip(results, weights, strict=True)):
        if not scores:
            continue
        scale = _factors(factors, i)
        low, high = min(scores.values()), max(scores.values())
        span = high - low
        for doc_id, score in scores.items():
            norm = (score - low) / span if span > 0 else 1.0
            fused[doc_id] = fused.get(doc_id, 0.0) + weight * scale.get(doc_id, 1.0) * norm
    return fused


def _factors(factors: Factors, i: int) -> Mapping[str, float]:
    if factors is None or i >= len(factors):
        return {}
    return factors[i] or {}


def _check(lists: Sequence[Any], weights: Sequence[float]) -> None:
    if len(lists) != len(weights):
        raise ValueError(f"need one weight per list, but got {len(weights)} weights for {len(lists)} lists")
    if any(w < 0 for w in weights):
        raise ValueError(f"weights must be non-negative, but got {list(weights)}")


@component
class HybridFusion:
    """Fuses BM25 and dense results into one ranked, content-deduplicated list."""

    def __init__(
        self,
        method: str = "rrf",
        weights: tuple[float, float] | list[float] = (0.5, 0.5),
        rrf_k: int = 60,
        top_k: int | None = None,
        dense_languages: list[str] | None = None,
    ) -> None:
        """Create the fusion.

        Args:
            method: "rrf" or "minmax".
            weights: (bm25, dense) weights.
            rrf_k: the RRF rank constant.
            top_k: how many fused results to return (None: all).
            dense_languages: languages the embedding model serves (see `LANGUAGES`); the dense weight is
                scaled by the query's share in them and each dense hit by its chunk's share. None: the
                dense list counts fully whatever the language.

        """
        if dense_languages is not None:
            unknown = [lang for lang in dense_languages if lang not in LANGUAGES]
            if unknown or not dense_languages:
                raise ValueError(
                    f"dense_languages must name at least one of {', '.join(LANGUAGES)}, "
                    f"but got {dense_languages}"
                )
        self._method = FusionMethod.from_str(method)
        if len(weights) != 2 or min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"weights must be two non-negative numbers, not both zero, but got {weights}")
        if rrf_k <= 0:
            raise ValueError(f"rrf_k must be > 0, but got {rrf_k}")
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        self.method = method
        self.weights = tuple(weights)
        self.rrf_k = rrf_k
        self.top_k = top_k
        self.dense_languages = list(dense_languages) if dense_languages is not None else None

    @component.output_types(documents=list[Document])
    def run(
        self,
        bm25_documents: list[Document],
        dense_documents: list[Document],
        top_k: int | None = None,
        query: str | None = None,
    ) -> dict[str, list[Document]]:
        """Fuse the two ranked lists; each output document carries `bm25_score`/`dense_score` where known.

        With `dense_languages` set, `query` (the query text) sets the dense weight; without a query the
        dense weight stays as configured and only the chunks' languages count.
        """
        top_k = top_k if top_k is not None else self.top_k
        lists = [bm25_documents, dense_documents]
        weights, factors = self._language_weights(query, dense_documents)
        if self._method is FusionMethod.RRF:
            fused = rrf_scores([[d.id for d in docs] for docs in lists], weights, self.rrf_k, factors)
        else:
            fused = minmax_scores(
                [{d.id: float(d.score or 0.0) for d in docs} for docs in lists], weights, factors
            )
        merged: dict[str, Document] = {}
        for docs in lists:
            for doc in docs:
                seen = merged.get(doc.id)
                merged[doc.id] = doc if seen is None else replace(seen, meta={**seen.meta, **doc.meta})
        ranked = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
        out: list[Document] = []
        # Duplicates are identical text of the same tenant: tenants never share (or hide) each other's hits.
        hashes: set[tuple[object, str]] = set()
        for doc_id, score in ranked:
            doc = merged[doc_id]
            content_hash = doc.meta.get("content_hash")
            if content_hash is not None:
                key = (doc.meta.get("tenant"), content_hash)
                if key in hashes:
                    continue
                hashes.add(key)
            out.append(replace(doc, score=score, meta={**doc.meta, "fusion_score": score}))
            if top_k is not None and len(out) >= top_k:
                break
        return {"documents": out}

    def _language_weights(
        self, query: str | None, dense_documents: list[Document]
    ) -> tuple[tuple[float, float], Factors]:
        """The (bm25, dense) weights for `query` and the per-chunk dense factors (see `served_share`)."""
        languages = self.dense_languages
        if languages is None:
            return (self.weights[0], self.weights[1]), None
        dense_weight = self.weights[1] * (served_share(query, languages) if query is not None else 1.0)
        if self.weights[0] <= 0 and dense_weight <= 0:
            dense_weight = self.weights[1]  # a dense-only fusion keeps its only list whatever the language
        chunk = {d.id: served_share(d.content or "", languages) for d in dense_documents}
        return (self.weights[0], dense_weight), [None, chunk]

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            method=self.method,
            weights=list(self.weights),
            rrf_k=self.rrf_k,
            top_k=self.top_k,
            dense_languages=self.dense_languages,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HybridFusion:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
