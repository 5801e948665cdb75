"""What the benchmark scripts share: the labelled handbook cases, the handbook store, the example agent.

One home instead of a copy per script (and instead of scripts importing constants from each other):

- `CASES` / `load_cases`: the labelled questions in ``eval/cases/handbook_cases.jsonl`` (installed
  with `haygraph.eval` as package data);
- `handbook_store`: a knowledge base over the bundled sample handbook, opened from a store directory
  or indexed into it first (document embeddings come from the on-disk cache after the first run);
- `example_tools` / `example_agent`: the example tools over a seeded SQLite orders database, and the
  offline agent that `haygraph ask` runs.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import haygraph.eval
from haygraph.adapters.agent import build_agent
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.control.api import Agent
from haygraph.control.evidence import Retriever
from haygraph.control.tools import ContractToolExecutor, ToolRegistry
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase

HANDBOOK = sample_handbook_path()
"""The bundled sample handbook (English and Chinese policies, FAQs, an HTML office guide)."""

CASES = Path(haygraph.eval.__file__).resolve().parent / "cases" / "handbook_cases.jsonl"
"""Labelled handbook questions: kind, expected route and sources, language, tune/test split."""


def load_cases(kinds: Iterable[str] | None = None, path: Path = CASES) -> list[dict[str, Any]]:
    """The labelled cases in file order, only those of `kinds` when given."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    wanted = set(kinds) if kinds is not None else None
    return [r for r in rows if wanted is None or r["kind"] in wanted]


def handbook_store(store_dir: str | Path, config: RetrievalConfig | None = None) -> KnowledgeBase:
    """The handbook knowledge base in `store_dir`: opened when it holds an index, else indexed there first."""
    store = Path(store_dir)
    if (store / "CURRENT").is_file():
        return KnowledgeBase.open(store)
    print(f"indexing {HANDBOOK} into {store} ...", file=sys.stderr)
    started = time.perf_counter()
    kb = KnowledgeBase(config or RetrievalConfig(), store_dir=store)
    kb.index([HANDBOOK])
    print(f"indexed the sample handbook in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return kb


def example_tools(retriever: Retriever, work_dir: str | Path) -> tuple[ToolRegistry, ContractToolExecutor]:
    """The example tool registry over a fresh orders database in `work_dir`, and its executor.

    The executor allows `DEFAULT_ALLOW_LIST` (as `haygraph ask` does).
    """
    registry = build_example_registry(OrdersDatabase(Path(work_dir) / "orders.sqlite"), retriever)
    return registry, ContractToolExecutor(registry, list(DEFAULT_ALLOW_LIST))


def example_agent(store_dir: str | Path, **agent_kwargs: Any) -> Agent:
    """The offline example agent over the handbook store in `store_dir` (indexed first if needed).

    The example tools are on (the labelled cases include order lookups); `agent_kwargs` go to
    `build_agent` (e.g. `query=` settings).
    """
    handbook_store(store_dir)
    return build_agent(store_dir, **{"example_tools": True, **agent_kwargs})
