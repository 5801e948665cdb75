"""Hostile and wrong-typed inputs for the Python API: `KnowledgeBase`, `build_agent`, `Agent.ask`.

Each call returns a correct result (search hits of the bound tenant only; a turn result with a
documented status and the tenant's evidence only) or raises one of the packages' typed errors —
`RetrievalError`, `ControlError`, `AdapterError` — with a message that says what was wrong. Any other
exception is a crash. The agent carries the example tools: no input may create a ticket or change
an address.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from haygraph.adapters.agent import build_agent
from haygraph.adapters.errors import AdapterError
from haygraph.adapters.tenancy import merge_filters, visible_to
from haygraph.control.api import Agent
from haygraph.control.errors import ControlError
from haygraph.control.graph.state import Status
from haygraph.retrieval import KnowledgeBase
from haygraph.retrieval.errors import RetrievalError
from tests.adapters.tenant_helpers import store_tenants
from tests.adversarial.conftest import Tally
from tests.adversarial.inputs import ALL_VALUES, BAD_STRINGS, ids

SURFACE = "python-api"
TYPED = (RetrievalError, ControlError, AdapterError)
STATUSES = set(get_args(Status))


@pytest.fixture(scope="module")
def env(bm25_tenant_store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    orders = tmp_path_factory.mktemp("adv-api") / "orders.db"
    agent = build_agent(bm25_tenant_store, tenant="A", example_tools=True, orders_db=orders)
    return {
        "kb": KnowledgeBase.open(bm25_tenant_store),
        "agent": agent,
        "owner": store_tenants(bm25_tenant_store),
        "orders": orders,
        "store": bm25_tenant_store,
    }


def effects(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        return sum(
            conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("tickets", "address_changes")
        )


def attempt(classify: Callable[..., None], tally: Tally, what: str, label: str, fn: Callable[[], Any]) -> Any:
    """Run `fn`; a typed error with a message is `clear_error`, any other exception a crash."""
    try:
        with tally.timed(SURFACE, label):
            return fn()
    except TYPED as exc:
        message = str(exc)
        ok = message.strip() and len(message) < 2000 and "Traceback" not in message
        classify(SURFACE, "clear_error" if ok else "unclear", f"{what}={label}: {message[:300]}")
    except Exception as exc:
        classify(SURFACE, "crash", f"{what}={label}: {type(exc).__name__}: {exc}"[:500])
    return None


def check_turn(
    classify: Callable[..., None], env: dict[str, Any], what: str, label: str, result: Any
) -> None:
    if result is None:
        return
    leaked = [e["id"] for e in result.get("evidence") or [] if not visible_to("A", env["owner"].get(e["id"]))]
    if leaked:
        classify(SURFACE, "foreign_chunk", f"{what}={label}: {leaked[:3]}")
    elif result.get("status") not in STATUSES or not isinstance(result.get("answer"), str | None):
        classify(SURFACE, "unclear", f"{what}={label}: status {result.get('status')!r}")
    else:
        classify(SURFACE, "ok", "")


@pytest.mark.parametrize(("label", "value"), ALL_VALUES, ids=ids(ALL_VALUES))
class TestHostileValues:
    def test_search_query(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        result = attempt(
            classify,
            tally,
            "search.query",
            label,
            lambda: env["kb"].search(value, filters=merge_filters("A", None)),
        )
        if result is not None:
            leaked = [h.id for h in result.hits if not visible_to("A", env["owner"].get(h.id))]
            classify(SURFACE, "foreign_chunk" if leaked else "ok", f"search.query={label}: {leaked[:3]}")

    def test_search_filters(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        result = attempt(
            classify, tally, "search.filters", label, lambda: env["kb"].search("leave policy", filters=value)
        )
        if result is not None:
            classify(SURFACE, "ok", "")

    def test_search_top_k(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        result = attempt(
            classify, tally, "search.top_k", label, lambda: env["kb"].search("leave policy", top_k=value)
        )
        if result is not None:
            classify(SURFACE, "ok", "")

    def test_ask_question(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        agent: Agent = env["agent"]
        before = effects(env["orders"])
        result = attempt(
            classify, tally, "ask.question", label, lambda: agent.ask(value, thread_id=f"adv-{label}")
        )
        if effects(env["orders"]) != before:
            classify(SURFACE, "side_effect", f"ask.question={label}")
        check_turn(classify, env, "ask.question", label, result)

    def test_ask_filters(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        agent: Agent = env["agent"]
        result = attempt(
            classify,
            tally,
            "ask.filters",
            label,
            lambda: agent.ask("How many days of annual leave?", filters=value),
        )
        check_turn(classify, env, "ask.filters", label, result)

    def test_ask_thread_id(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        agent: Agent = env["agent"]
        result = attempt(
            classify,
            tally,
            "ask.thread_id",
            label,
            lambda: agent.ask("What is the leave policy?", thread_id=value),
        )
        check_turn(classify, env, "ask.thread_id", label, result)

    def test_build_agent_tenant(
        self, env: dict[str, Any], classify: Callable[..., None], tally: Tally, label: str, value: Any
    ) -> None:
        if value is None:  # no tenant: an unbound agent, by design
            pytest.skip("tenant=None binds no tenant")
        agent = attempt(
            classify, tally, "build_agent.tenant", label, lambda: build_agent(env["store"], tenant=value)
        )
        if agent is not None:  # a valid (if odd) tenant name: it owns no chunks here, so nothing is found
            result = agent.ask("What is the leave policy?")
            ok = result["status"] in STATUSES and not result["evidence"]
            classify(
                SURFACE,
                "ok" if ok else "foreign_chunk",
                f"build_agent.tenant={label}: {result['evidence'][:1]}",
            )


@pytest.mark.parametrize(
    ("label", "value"), [*BAD_STRINGS, ("none", None), ("int", 3)], ids=[*ids(BAD_STRINGS), "none", "int"]
)
def test_open_store_path(classify: Callable[..., None], tally: Tally, label: str, value: Any) -> None:
    store = attempt(classify, tally, "KnowledgeBase.open", label, lambda: KnowledgeBase.open(value))
    if store is not None:
        classify(SURFACE, "unclear", f"KnowledgeBase.open({label}) opened something")
