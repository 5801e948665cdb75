"""haygraph retrieval plane: Haystack pipelines for indexing and hybrid search.

Quick start::

    from retrieval import KnowledgeBase
    kb = KnowledgeBase(store_dir="kb")
    kb.index(["docs/"])
    for hit in kb.search("How many days of annual leave?").hits:
        print(hit.id, hit.score, hit.source)

Names are imported lazily so that `import retrieval.errors` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any

_EXPORTS = {
    "KnowledgeBase": "retrieval.knowledge_base",
    "SearchResult": "retrieval.knowledge_base",
    "Hit": "retrieval.knowledge_base",
    "IndexReport": "retrieval.knowledge_base",
    "RetrievalConfig": "retrieval.config",
    "QueryConfig": "retrieval.config",
    "EmbeddedDocumentStore": "retrieval.store",
    "build_indexing_pipeline": "retrieval.pipelines",
    "build_query_pipeline": "retrieval.pipelines",
    "dumps_pipeline": "retrieval.pipelines",
    "loads_pipeline": "retrieval.pipelines",
    "RetrievalError": "retrieval.errors",
}

__all__ = [*_EXPORTS, "sample_handbook_path"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval' has no attribute {name!r}")


def sample_handbook_path() -> Path:
    """Directory of the bundled sample knowledge base (a company handbook in English and Chinese)."""
    return Path(__file__).resolve().parent / "samples" / "handbook"
