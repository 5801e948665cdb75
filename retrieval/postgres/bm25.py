"""`PostgresBM25Retriever`: BM25 over a PostgreSQL store's postings segments, hits read from the table.

The scores come from the store's `SegmentIndex` (in the process, see `postings.py`); only the chunks
returned are read from PostgreSQL, by document number, in one query. The output is
`FastBM25Retriever`'s: chunks scoring above 0, best first (ties by position), the score also in
``meta["bm25_score"]``.

Filters (a tenant's included) run as SQL conditions, the same translation the dense side uses, so both
retrievers agree on what a filter means. The top k under a filter is exact: candidates are read in score
order in growing rounds with the filter as a condition until k match or none is left; a tenant filter
first narrows the candidates in memory (each segment records its chunks' tenants), and a filter that
matches few of many candidates is answered by one scan for the matching document numbers instead.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from haystack import Document, component

from haygraph.retrieval.bm25_retriever import KeywordRetrieverBase, top_k_positions

TENANT_FIELD = "meta.tenant"
_FIRST_ROUND = 64
_SCAN_AFTER = 20_000
"""Candidates read in rounds before the filter's matches are read in one scan instead."""


def tenant_constraint(filters: dict[str, Any] | None) -> set[str | None] | None:
    """The tenants a chunk must have to match `filters`, when the filter says so (None: no constraint).

    Understands a comparison on ``meta.tenant`` (``==`` a string, ``in`` strings) and ANDs of
    conditions; anything else constrains nothing here (the SQL condition still applies it).
    """
    if not filters:
        return None
    if "field" in filters:
        if filters.get("field") != TENANT_FIELD:
            return None
        value = filters.get("value")
        if filters.get("operator") == "==" and isinstance(value, str):
            return {value}
        if (
            filters.get("operator") == "in"
            and isinstance(value, list)
            and all(isinstance(v, str) for v in value)
        ):
            return set(value)
        return None
    if filters.get("operator") != "AND" or not isinstance(filters.get("conditions"), list):
        return None
    found = [tenant_constraint(c) for c in filters["conditions"] if isinstance(c, dict)]
    known = [s for s in found if s is not None]
    if not known:
        return None
    result = known[0]
    for other in known[1:]:
        result = result & other
    return result


@component
class PostgresBM25Retriever(KeywordRetrieverBase):
    """Keyword retrieval over a `PostgresStore`: scores in the process, chunks from the table."""

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, filters: dict[str, Any] | None = None, top_k: int | None = None
    ) -> dict[str, list[Document]]:
        """Return the `top_k` best BM25 matches for `query`, restricted by `filters`."""
        top_k = top_k if top_k is not None else self.top_k
        filters = filters if filters is not None else self.filters
        if not query or not query.strip():
            return {"documents": []}
        store = self.document_store
        index = store.bm25_index(self._template)
        scores = index.scores(query)
        if scores is None:
            return {"documents": []}
        mask = index.live_mask() & (scores > 0)
        tenants = tenant_constraint(filters)
        if tenants is not None:
            mask &= index.tenant_mask(tenants)
        candidates = np.flatnonzero(mask)
        if not filters:
            chosen = top_k_positions(scores, top_k, candidates)
            return {"documents": self._read(index, scores, chosen, None)}
        found: list[Document] = []
        checked, limit = 0, max(4 * top_k, _FIRST_ROUND)
        while True:
            ranked = top_k_positions(scores, min(limit, candidates.shape[0]), candidates)
            found += self._read(index, scores, ranked[checked:], filters)
            if len(found) >= top_k or len(ranked) >= candidates.shape[0]:
                return {"documents": found[:top_k]}
            checked, limit = len(ranked), limit * 4
            if limit > _SCAN_AFTER:
                break
        # the filter matches few of many candidates: read its matches once and rank the rest of them
        allowed = [p for p in index.position_of(store.matching_docnos(filters).tolist()) if p is not None]
        rest = np.setdiff1d(np.intersect1d(candidates, np.asarray(allowed, dtype=np.int64)), ranked)
        more = top_k_positions(scores, top_k - len(found), rest)
        found += self._read(index, scores, more, filters)  # all scored below the rounds' candidates
        return {"documents": found[:top_k]}

    def _read(
        self, index: Any, scores: np.ndarray, positions: list[int], filters: dict[str, Any] | None
    ) -> list[Document]:
        """The chunks at `positions` that match `filters`, in the order given, with their BM25 score."""
        if not positions:
            return []
        docnos = index.docnos_at(positions)
        rows = self.document_store.fetch(docnos, filters)
        out = []
        for pos, docno in zip(positions, docnos, strict=True):
            doc = rows.get(docno)
            if doc is not None:
                score = float(scores[pos])
                out.append(replace(doc, score=score, meta={**doc.meta, "bm25_score": score}))
        return out
