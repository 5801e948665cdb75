"""Hostile and wrong-typed arguments for every example tool, run by the contract executor.

Every call must come back as a `ToolResult` — `ok` with a valid result, or an error status whose
message names the argument (or the tool) on one short line — and no call may create a ticket or
change an address.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.tenancy import ScopedRetriever
from haygraph.control.tools import ContractToolExecutor
from haygraph.control.tools.types import ToolCall
from tests.adapters.tenant_helpers import TENANT_OF, FilteringRetriever
from tests.adversarial.conftest import Tally
from tests.adversarial.inputs import ALL_VALUES, ids

SURFACE = "tool-executor"
VALID = {
    "query_order": {"order_id": "202405120001", "detail_level": "summary"},
    "create_ticket": {
        "order_id": "202405120001",
        "category": "delivery",
        "description": "My parcel is late.",
    },
    "update_shipping_address": {"order_id": "202405120001", "address": "1 Main Street, Springfield"},
    "count_workdays": {"start": "2024-05-01", "end": "2024-05-10"},
    "search_knowledge_base": {"query": "travel policy", "top_k": 5},
}
SLOTS = [
    ("query_order", "order_id"),
    ("query_order", "detail_level"),
    ("create_ticket", "order_id"),
    ("create_ticket", "category"),
    ("update_shipping_address", "order_id"),
    ("count_workdays", "start"),
    ("search_knowledge_base", "query"),
    ("search_knowledge_base", "top_k"),
]
OK_STATUSES = {"ok", "invalid_arguments", "unknown_tool", "not_allowed", "error"}


def effects(db_path: Path) -> tuple[int, int]:
    with sqlite3.connect(db_path) as conn:
        tickets = conn.execute("SELECT COUNT(*) FROM tickets").fetchone()[0]
        changes = conn.execute("SELECT COUNT(*) FROM address_changes").fetchone()[0]
    return int(tickets), int(changes)


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[ContractToolExecutor, Path]:
    db_path = tmp_path_factory.mktemp("adv-tools") / "orders.db"
    registry = build_example_registry(OrdersDatabase(db_path), ScopedRetriever(FilteringRetriever(), "A"))
    return ContractToolExecutor(registry, DEFAULT_ALLOW_LIST, max_calls_per_turn=3), db_path


def judge(tool: str, argument: str, result: Any) -> tuple[str, str]:
    """(outcome, detail) of one call's result."""
    if result.status not in OK_STATUSES:
        return "unclear", f"status {result.status}"
    if result.status == "ok":
        if tool == "search_knowledge_base":
            leaked = {TENANT_OF[h["id"]] for h in result.content["hits"]} - {"A"}
            return ("foreign_chunk", str(leaked)) if leaked else ("ok", "")
        return "ok", ""
    error = result.error or ""
    one_line = "\n" not in error and len(error) < 2000 and "Traceback" not in error
    named = argument in error or tool in error
    return ("clear_error", error) if one_line and named else ("unclear", error[:300])


@pytest.mark.parametrize(("tool", "argument"), SLOTS)
@pytest.mark.parametrize(("label", "value"), ALL_VALUES, ids=ids(ALL_VALUES))
def test_hostile_argument(
    setup: tuple[ContractToolExecutor, Path],
    classify: Callable[..., None],
    tally: Tally,
    tool: str,
    argument: str,
    label: str,
    value: Any,
) -> None:
    executor, db_path = setup
    before = effects(db_path)
    call = ToolCall(id=f"c-{label}", name=tool, args={**VALID[tool], argument: value})
    with tally.timed(SURFACE, label):
        [result] = executor.execute([call], thread_id=f"adv-{tool}-{argument}-{label}")
    if effects(db_path) != before and not (tool == "create_ticket" and result.status == "ok"):
        classify(SURFACE, "side_effect", f"{tool}.{argument}={label}")
    outcome, detail = judge(tool, argument, result)
    classify(SURFACE, outcome, f"{tool}.{argument}={label}: {detail}")
    if tool == "update_shipping_address":
        assert result.status == "not_allowed"  # never allow-listed by default, whatever the arguments


@pytest.mark.parametrize(("label", "value"), ALL_VALUES, ids=ids(ALL_VALUES))
def test_hostile_tool_name(
    setup: tuple[ContractToolExecutor, Path], classify: Callable[..., None], label: str, value: Any
) -> None:
    executor, _ = setup
    name = value if isinstance(value, str) else str(value)
    [result] = executor.execute([ToolCall(id="c", name=name, args={})], thread_id="adv-names")
    error = result.error or ""
    ok = (
        result.status == "unknown_tool"
        and "unknown tool" in error
        and "\n" not in error
        and len(error) < 2000
    )
    classify(SURFACE, "clear_error" if ok else "unclear", f"name={label}: {result.status} {result.error}")
