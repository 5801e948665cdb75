"""The Haystack query pipeline as a control-plane `Retriever`: documents in, `Evidence` out; mapping only."""

from __future__ import annotations

import logging
from typing import Any

from haystack.utils.filters import document_matches_filter

from haygraph.control.evidence import OTHER_LANGUAGE, Evidence
from haygraph.control.graph.context import combine_filters
from haygraph.control.language import is_chinese
from haygraph.retrieval.config import QueryConfig
from haygraph.retrieval.knowledge_base import Hit, KnowledgeBase
from haygraph.retrieval.search_result import parse_page_breaks

logger = logging.getLogger(__name__)

_META_KEPT = (
    "source_id",
    "chunk_index",
    "language",
    "title",
    "bm25_score",
    "dense_score",
    "fusion_score",
    "term_coverage",
)


def hit_to_evidence(hit: Hit) -> Evidence:
    """Map one retrieval hit to graph evidence (relevance: a calibrated probability)."""
    return Evidence(
        id=hit.id,
        text=hit.content,
        score=hit.score,
        relevance=hit.relevance,
        source=hit.source,
        heading_path=list(hit.heading_path),
        page=hit.page,
        page_breaks=hit.page_breaks,
        char_start=hit.char_start,
        char_end=hit.char_end,
        meta={k: hit.meta[k] for k in _META_KEPT if k in hit.meta},
    )


def mark_other_language(item: Evidence) -> Evidence:
    """`item` marked `OTHER_LANGUAGE`: appended after the ranked results, never evidence (`nodes.search`)."""
    return item.model_copy(update={"meta": {**item.meta, OTHER_LANGUAGE: True}})


CROSS_LANGUAGE = 2
"""Chunks in the other language appended to a multilingual store's results (see `HaystackRetriever`)."""


class HaystackRetriever:
    """Implements `haygraph.control.evidence.Retriever` over a `KnowledgeBase` and its query pipeline.

    `top_k` from the graph sets how many results the pipeline returns (the score-cliff cut may return
    fewer); `filters` are Haystack filters applied inside both retrievers.

    `cross_language`: over a store whose encoder serves English and Chinese, the best `cross_language`
    chunks written in the other language than the query (dense retrieval alone, no cut) are appended
    after the `top_k` results. A question finds its own language's chunks first, in both retrievers:
    "每年有多少天年假" ranks the Chinese page that points to the English leave policy above the policy
    itself, and the cut drops the policy. Appended, the other language's best chunks reach the agent as
    candidates, which its reader reads (`haygraph.control.graph.nodes.read_evidence`). 0 turns it off.
    """

    def __init__(
        self, kb: KnowledgeBase, query_config: QueryConfig | None = None, *, cross_language: int = 0
    ) -> None:
        if cross_language < 0:
            raise ValueError(f"cross_language must be >= 0, but got {cross_language}")
        self.kb = kb
        self.query_config = query_config or kb.config.query
        self.cross_language = cross_language
        self._configs: dict[int, QueryConfig] = {}

    def warm_up(self) -> None:
        """Load the embedding model and indexes now rather than on the first question."""
        self.kb.runner(self.query_config).warm_up()

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """Run the query pipeline: up to `top_k` evidence items, best first, then other-language ones.

        The other-language items (`cross_language`) follow the `top_k`, even when fewer came first.
        """
        result = self.kb.search(query, filters=filters, config=self._config_for(top_k))
        found = [hit_to_evidence(h) for h in result.hits[:top_k]]
        if self.cross_language and set(self.kb.config.embedder.languages) >= {"en", "zh"}:
            other = "en" if is_chinese(query) else "zh"
            scope = {"field": "meta.language", "operator": "==", "value": other}
            try:
                extra = self.kb.search(
                    query, filters=combine_filters(filters, scope), config=self._cross_config()
                ).hits
            except Exception as exc:  # an addition: the ranked results stand without it
                logger.warning("other-language retrieval failed, ranked results kept: %s", exc)
                extra = []
            known = {e.id for e in found}
            found += [mark_other_language(hit_to_evidence(h)) for h in extra if h.id not in known][
                : self.cross_language
            ]
        return found

    def lookup(self, chunk_id: str, *, filters: dict[str, Any] | None = None) -> Evidence | None:
        """The stored chunk with id `chunk_id` as evidence (score 0), or None.

        With `filters` (Haystack syntax), a chunk that does not match them is None as well, so a scoped
        caller cannot read a chunk outside its scope by id (`haygraph.adapters.tenancy`).
        """
        doc = self.kb.store.get(chunk_id)
        if doc is None or (filters and not document_matches_filter(filters, doc)):
            return None
        return Evidence(
            id=doc.id,
            text=doc.content or "",
            score=0.0,
            source=str(doc.meta.get("source_id", "")),
            heading_path=list(doc.meta.get("heading_path") or []),
            meta={k: doc.meta[k] for k in ("tenant",) if k in doc.meta},
            page=doc.meta.get("page"),
            page_breaks=parse_page_breaks(doc.meta.get("page_breaks")),
            char_start=doc.meta.get("char_start"),
            char_end=doc.meta.get("char_end"),
        )

    def _cross_config(self) -> QueryConfig:
        if -1 not in self._configs:
            q = self.query_config
            self._configs[-1] = q.model_copy(
                update={
                    "mode": "dense",
                    "top_k": self.cross_language,
                    "cut": q.cut.model_copy(update={"enabled": False}),
                    "reranker": q.reranker.model_copy(update={"model": None}),
                }
            )
        return self._configs[-1]

    def _config_for(self, top_k: int) -> QueryConfig:
        if top_k not in self._configs:
            q = self.query_config
            self._configs[top_k] = q.model_copy(
                update={"top_k": top_k, "cut": q.cut.model_copy(update={"max_keep": top_k})}
            )
        return self._configs[top_k]
