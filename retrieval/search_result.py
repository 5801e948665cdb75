"""What a search returns: `Hit` (one ranked chunk) and `SearchResult`; query validation.

The read side of a knowledge base (`haygraph.retrieval.kb_reader`) builds these from the ranked
Haystack documents of a query pipeline; the CLI, the service and the agent's retriever read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from haystack import Document

from haygraph.retrieval.errors import QueryError

MAX_QUERY_CHARS = 4000


@dataclass(frozen=True)
class Hit:
    """One ranked chunk."""

    id: str
    content: str
    score: float
    source: str
    heading_path: list[str]
    meta: dict[str, Any]

    @property
    def relevance(self) -> float | None:
        """Absolute relevance in (0, 1) from the pipeline's `RelevanceScorer` (calibrated per query mode)."""
        value = self.meta.get("relevance")
        return None if value is None else float(value)

    @property
    def page(self) -> int | None:
        """1-based page (PDF page, slide or sheet) where the chunk starts, when the source has pages."""
        return _int_meta(self.meta, "page")

    @property
    def page_breaks(self) -> list[tuple[int, int]]:
        """Where later pages begin in the chunk's text: ``[(offset, page), ...]`` (`ChunkLocator`), or []."""
        return parse_page_breaks(self.meta.get("page_breaks"))

    @property
    def char_start(self) -> int | None:
        """Offset of the chunk's first character in its source text (see `ChunkLocator`), when known."""
        return _int_meta(self.meta, "char_start")

    @property
    def char_end(self) -> int | None:
        """Offset just past the chunk's last character in its source text, when known."""
        return _int_meta(self.meta, "char_end")

    @property
    def cosine(self) -> float | None:
        """The chunk's dense cosine similarity with the query, when known."""
        value = self.meta.get("dense_score")
        return None if value is None else float(value)


def parse_page_breaks(value: Any) -> list[tuple[int, int]]:
    """A chunk's stored ``page_breaks`` as ``(offset, page)`` pairs, malformed items left out."""
    out: list[tuple[int, int]] = []
    for item in value if isinstance(value, list | tuple) else []:
        if (
            isinstance(item, list | tuple)
            and len(item) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in item)
        ):
            out.append((item[0], item[1]))
    return out


def _int_meta(meta: dict[str, Any], key: str) -> int | None:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@dataclass
class SearchResult:
    """Ranked hits plus what happened on the way (reranked or not, timings)."""

    query: str
    hits: list[Hit]
    reranked: bool | None = None
    notes: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of `haygraph search --json` and the service's `/v1/search` (ranks from 1)."""
        return {
            "query": self.query,
            "reranked": self.reranked,
            "notes": self.notes,
            "timings_ms": self.timings_ms,
            "results": [
                {
                    "rank": i,
                    "id": h.id,
                    "score": h.score,
                    "relevance": h.relevance,
                    "source": h.source,
                    "heading_path": h.heading_path,
                    "page": h.page,
                    "char_start": h.char_start,
                    "char_end": h.char_end,
                    "text": h.content,
                }
                for i, h in enumerate(self.hits, start=1)
            ],
        }


def validate_query(query: str) -> str:
    """Strip and check a query: non-empty and at most MAX_QUERY_CHARS characters."""
    if not isinstance(query, str):
        raise QueryError(f"query must be a string, got {type(query).__name__}")
    text = "".join(ch for ch in query if ch.isprintable() or ch in "\n\t").strip()
    if not text:
        raise QueryError("query is empty")
    if len(text) > MAX_QUERY_CHARS:
        raise QueryError(f"query is too long: {len(text)} characters (at most {MAX_QUERY_CHARS})")
    return text


def to_hit(doc: Document) -> Hit:
    """Convert a ranked Haystack document into a `Hit`."""
    meta = dict(doc.meta)
    return Hit(
        id=doc.id,
        content=doc.content or "",
        score=float(doc.score or 0.0),
        source=str(meta.get("source_id") or meta.get("source") or ""),
        heading_path=list(meta.get("heading_path") or []),
        meta=meta,
    )
