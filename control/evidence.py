"""The evidence model and the retriever protocol the control plane talks to.

`control` never imports Haystack: `adapters` implements `Retriever` over the Haystack query
pipeline and converts Haystack documents into `Evidence`.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

OTHER_LANGUAGE = "other_language"
"""Meta key a retriever sets (True) on items it appends in the other language than the query after its
ranked results (`haygraph.adapters.haystack_retriever.HaystackRetriever`'s ``cross_language``): the graph
keeps them out of the evidence the decision reads and hands them to the reader as candidates."""


class Evidence(BaseModel):
    """One retrieved chunk, as it enters graph state and is cited by answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="Stable chunk id (source id + content hash); the id answers cite.")
    text: str = Field(description="The chunk text.")
    score: float = Field(description="Ranking score of the final list (fused / reranked / cut).")
    relevance: float | None = Field(
        default=None,
        description=(
            "Absolute relevance on a fixed scale, comparable across queries: the chunk's dense "
            "cosine similarity with the query (or a calibrated reranker probability). None if unknown."
        ),
    )
    source: str = Field(default="", description="Source document id or file name.")
    heading_path: list[str] = Field(default_factory=list, description="Headings above the chunk.")
    page: int | None = Field(
        default=None,
        description="1-based page (PDF page, slide or sheet) where the chunk starts; None if none.",
    )
    page_breaks: list[tuple[int, int]] = Field(
        default_factory=list,
        description=(
            "Where later pages begin in `text`, as (offset, page) pairs: a chunk of short pages merged "
            "together runs over page breaks; `page_at` names the page of any part of it."
        ),
    )
    char_start: int | None = Field(
        default=None, description="Offset of the chunk's first character in the source text; None if unknown."
    )
    char_end: int | None = Field(
        default=None, description="Offset just past the chunk's last character in the source text."
    )
    meta: dict[str, Any] = Field(default_factory=dict, description="Other chunk metadata.")

    def page_at(self, offset: int) -> int | None:
        """The page holding character `offset` of `text` (a quote's or an answer span's start).

        That is `page`, or the last page in `page_breaks` that begins at or before `offset`; None when
        the source has no pages.
        """
        found = self.page
        for at, page in self.page_breaks:
            if at <= offset:
                found = page
        return found


@runtime_checkable
class Retriever(Protocol):
    """Anything that turns a query into ranked evidence."""

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """Return up to `top_k` evidence items, best first."""
        ...


def evidence_key(item: Evidence) -> float:
    """Absolute quality of one evidence item: its `relevance`, or its `score` when relevance is unknown."""
    return item.relevance if item.relevance is not None else item.score


def merge_evidence(left: list[Evidence] | None, right: list[Evidence] | None) -> list[Evidence]:
    """Union two evidence lists by id (the better copy of a duplicate wins), best first.

    Order is by `evidence_key` descending; ties keep first-seen order (stable sort), so a
    retriever's own ranking is preserved among equal scores. It is the reducer of `State.evidence`.
    """
    merged: dict[str, Evidence] = {}
    for item in [*(left or []), *(right or [])]:
        known = merged.get(item.id)
        if known is None or evidence_key(item) > evidence_key(known):
            merged[item.id] = item
    return sorted(merged.values(), key=evidence_key, reverse=True)
