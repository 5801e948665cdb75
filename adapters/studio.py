"""The graph factory for LangGraph Studio and `langgraph dev` (see `langgraph.json` at the repository root).

`make_graph()` opens the store named by the `HAYGRAPH_STORE` environment variable and returns the
offline graph over it: retrieval through `HaystackRetriever`, no chat model, no checkpointer (the
LangGraph server brings its own persistence). `HAYGRAPH_EXAMPLE_TOOLS=1` adds the example tools over
`<store>/orders.sqlite`. A run started without a context (as Studio starts them) uses this graph's
default `Context`; the environment is read when the server calls the factory, not at import.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.adapters.meaning_encoder import default_meaning_encoder
from haygraph.control.errors import ConfigError
from haygraph.control.graph import Context, build_graph
from haygraph.control.planning.decision.model import shipped_model
from haygraph.control.tools import ContractToolExecutor
from haygraph.retrieval.knowledge_base import KnowledgeBase

STORE_ENV = "HAYGRAPH_STORE"
EXAMPLE_TOOLS_ENV = "HAYGRAPH_EXAMPLE_TOOLS"


def make_graph() -> CompiledStateGraph[Any, Any, Any, Any]:
    """Return the offline graph over the store at `$HAYGRAPH_STORE` (made by `haygraph index`).

    Raises `ConfigError` naming the variable when it is unset or not a store directory.
    """
    store = os.environ.get(STORE_ENV, "").strip()
    if not store:
        raise ConfigError(f"set {STORE_ENV} to a store directory made by `haygraph index`")
    if not (Path(store) / "CURRENT").is_file():
        raise ConfigError(f"{STORE_ENV}={store!r} is not a haygraph store: run `haygraph index` first")
    retriever = HaystackRetriever(KnowledgeBase.open(store))
    executor = None
    if os.environ.get(EXAMPLE_TOOLS_ENV, "").strip().lower() in ("1", "true", "yes"):
        registry = build_example_registry(OrdersDatabase(Path(store) / "orders.sqlite"), retriever)
        executor = ContractToolExecutor(registry, DEFAULT_ALLOW_LIST)
    # the decision reads meaning where the multilingual encoder is installed, as build_agent's does
    answerability = shipped_model(default_meaning_encoder())
    return build_graph(
        context=Context(retriever=retriever, tool_executor=executor, answerability=answerability)
    )
