"""A retriever that applies Haystack filters for real (Haystack's own matcher) over fixed documents.

Not a test module; shared by the tenancy and adversarial tests so they need no model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from unittest.mock import patch

from haystack import Document
from haystack.utils.filters import document_matches_filter

from haygraph.control.evidence import Evidence


def _doc(id_: str, tenant: str, source: str, text: str) -> Document:
    return Document(id=id_, content=text, meta={"tenant": tenant, "source_id": source})


DOCS = [
    _doc("a1", "A", "acme-travel.md", "Acme travel policy: economy class for short flights."),
    _doc("a2", "A", "acme-expenses.md", "Acme expense claims within 30 days."),
    _doc("b1", "B", "globex-travel.md", "Globex travel policy: business class for long flights."),
    _doc("b2", "B", "globex-expenses.md", "Globex expense claims within 14 days."),
    _doc("b3", "B", "acme-travel.md", "Acme travel policy: economy class for short flights."),
]
"""Tenant B also holds a copy of A's travel text under the same source id (b3): only ids tell them apart."""
TENANT_OF = {d.id: d.meta["tenant"] for d in DOCS}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _evidence(doc: Document, score: float) -> Evidence:
    return Evidence(
        id=doc.id,
        text=doc.content or "",
        score=score,
        source=doc.meta["source_id"],
        meta={"tenant": doc.meta["tenant"]},
    )


class FilteringRetriever:
    """Word-overlap ranking over `DOCS`, restricted by Haystack filters exactly like the real store."""

    def __init__(self, docs: list[Document] | None = None) -> None:
        self.docs = list(docs if docs is not None else DOCS)
        self.seen_filters: list[dict[str, Any] | None] = []

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        self.seen_filters.append(filters)
        q = _words(query)
        hits = []
        for doc in self.docs:
            if filters and not document_matches_filter(filters, doc):
                continue
            overlap = len(q & _words(doc.content or ""))
            if overlap:
                hits.append(_evidence(doc, float(overlap)))
        hits.sort(key=lambda e: (-e.score, e.id))
        return hits[:top_k]

    def lookup(self, chunk_id: str, *, filters: dict[str, Any] | None = None) -> Evidence | None:
        for doc in self.docs:
            if doc.id == chunk_id and not (filters and not document_matches_filter(filters, doc)):
                return _evidence(doc, 0.0)
        return None


BM25_ONLY = {"mode": "bm25"}
"""Query settings of the no-model stores: keyword search only, so no embedding model is ever loaded."""


def build_bm25_store(store: Path, docs: list[Document] | None = None) -> Path:
    """Index `docs` (default `DOCS`, fresh ids) into `store` with a fake embedder; queries run BM25 only.

    The store keeps `mode: bm25` as its query setting, so every reader — the CLI, `build_agent`,
    `serve-mcp`, the HTTP service — searches it without loading a model.
    """
    from haygraph.retrieval import KnowledgeBase, RetrievalConfig
    from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
    from tests.retrieval.store_helpers import fake_warm_up

    fresh = [Document(content=d.content, meta=dict(d.meta)) for d in (docs if docs is not None else DOCS)]
    with patch.object(CachedDocumentEmbedder, "warm_up", fake_warm_up):
        KnowledgeBase(RetrievalConfig().with_overrides(query=BM25_ONLY), store).index_documents(fresh)
    return store


def add_documents(store: Path, docs: list[Document]) -> None:
    """Index more documents into an existing no-model store (a new store version)."""
    from haygraph.retrieval import KnowledgeBase
    from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
    from tests.retrieval.store_helpers import fake_warm_up

    with patch.object(CachedDocumentEmbedder, "warm_up", fake_warm_up):
        KnowledgeBase.open(store).index_documents(docs)


def store_tenants(store: Path) -> dict[str, str | None]:
    """Chunk id -> tenant of every chunk in the store (what the checks compare returned ids with)."""
    from haygraph.retrieval.store import EmbeddedDocumentStore

    return {d.id: d.meta.get("tenant") for d in EmbeddedDocumentStore.load(store).documents}
