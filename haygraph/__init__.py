"""haygraph: agentic RAG — Haystack retrieval pipelines driven by a LangGraph control plane.

The main public API is re-exported here; the subpackages hold the rest:

- `haygraph.retrieval`: Haystack pipelines for indexing and hybrid search (`KnowledgeBase`);
- `haygraph.control`: the LangGraph graph that routes, retrieves, evaluates and answers (`Agent`);
- `haygraph.adapters`: the layer between them, the CLI and the MCP server/client;
- `haygraph.eval`: the evaluation harness (BEIR datasets, metrics, reports).

Names are imported lazily, so `import haygraph` loads neither Haystack nor torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "KnowledgeBase": "haygraph.retrieval.knowledge_base",
    "RetrievalConfig": "haygraph.retrieval.config",
    "Agent": "haygraph.control.api",
    "build_agent": "haygraph.adapters.agent",
}

__all__ = ["Agent", "KnowledgeBase", "RetrievalConfig", "__version__", "build_agent"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'haygraph' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
