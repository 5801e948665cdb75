"""Assemble a ready agent from a store directory: knowledge base, retriever, example tools, threads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haygraph.adapters.example_tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.adapters.orders_db import OrdersDatabase
from haygraph.control.api import Agent
from haygraph.control.threads import sqlite_checkpointer
from haygraph.control.tools import ContractToolExecutor
from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase


def build_agent(
    store_dir: str | Path,
    *,
    model: Any = None,
    threads_db: str | Path | None = None,
    orders_db: str | Path | None = None,
    allow_list: Sequence[str] = DEFAULT_ALLOW_LIST,
    max_calls_per_turn: int = 2,
    retrieval_config: RetrievalConfig | None = None,
    query: QueryConfig | None = None,
    **settings: Any,
) -> Agent:
    """An `Agent` over the store at `store_dir`.

    - retrieval: the store's Haystack query pipeline through `HaystackRetriever`;
    - tools: the example contracts (orders, tickets, dates, knowledge search) over a seeded SQLite
      database at `orders_db` (default `<store_dir>/orders.sqlite`), restricted to `allow_list`;
    - threads: persisted in SQLite at `threads_db` when given (the CLI's `chat`), else in memory;
    - `model`: a LangChain chat model or a `provider:model` string; None = offline mode;
    - `retrieval_config`: settings over the store's own, as for `KnowledgeBase.open`;
    - `query`: query settings (mode, fusion, cut, relevance) instead of the knowledge base's defaults;
    - `settings`: further `haygraph.control.context.Context` fields (relevance_threshold, top_k, ...).
    """
    kb = KnowledgeBase.open(store_dir, retrieval_config)
    retriever = HaystackRetriever(kb, query)
    db = OrdersDatabase(Path(orders_db) if orders_db else Path(store_dir) / "orders.sqlite")
    registry = build_example_registry(db, retriever)
    # The executor carries the registry and allow-list; the graph reads them for schema selection.
    executor = ContractToolExecutor(registry, list(allow_list), max_calls_per_turn=max_calls_per_turn)
    checkpointer = sqlite_checkpointer(threads_db) if threads_db else None
    return Agent(
        retriever=retriever, model=model, tool_executor=executor, checkpointer=checkpointer, **settings
    )
