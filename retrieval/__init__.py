"""haygraph retrieval plane: Haystack pipelines for indexing and hybrid search.

Quick start::

    from haygraph.retrieval import KnowledgeBase
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
    "KnowledgeBase": "haygraph.retrieval.knowledge_base",
    "SearchResult": "haygraph.retrieval.knowledge_base",
    "Hit": "haygraph.retrieval.knowledge_base",
    "IndexReport": "haygraph.retrieval.knowledge_base",
    "RetrievalConfig": "haygraph.retrieval.config",
    "QueryConfig": "haygraph.retrieval.config",
    "EmbeddedDocumentStore": "haygraph.retrieval.store",
    "build_indexing_pipeline": "haygraph.retrieval.pipelines",
    "build_query_pipeline": "haygraph.retrieval.pipelines",
    "query_inputs": "haygraph.retrieval.pipelines",
    "dumps_pipeline": "haygraph.retrieval.pipelines",
    "loads_pipeline": "haygraph.retrieval.pipelines",
    "RetrievalError": "haygraph.retrieval.errors",
}

__all__ = [*_EXPORTS, "sample_handbook_path"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'retrieval' has no attribute {name!r}")


def sample_handbook_path() -> Path:
    """Directory of the bundled sample knowledge base (a company handbook in English and Chinese)."""
    return Path(__file__).resolve().parent / "samples" / "handbook"
