"""Unit tests of `control.tool_routing` helpers and `control.tool_answer` (pure functions)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from haygraph.control.errors import ModelOutputError
from haygraph.control.rules import RouteDecision
from haygraph.control.tool_answer import render_result_content, summarize_tool_results
from haygraph.control.tool_routing import calls_from_message, known_intents, resolve_intent, tool_catalogue
from haygraph.control.tool_types import ToolCall, ToolResult
from haygraph.control.tools import ANY_INTENT, ToolContract, ToolRegistry


class NoArgs(BaseModel):
    pass


class Out(BaseModel):
    value: str = ""


def contract(name: str, intents: tuple[str, ...]) -> ToolContract:
    return ToolContract(
        name=name,
        purpose=f"Purpose of {name}.",
        when_to_use=f"Use {name} when needed.",
        when_not_to_use="Never otherwise.",
        on_failure="Say it failed.",
        args_model=NoArgs,
        result_model=Out,
        func=lambda args: {"value": "x"},
        intents=intents,
    )


REGISTRY = ToolRegistry(
    [contract("lookup", ("order",)), contract("secret", ("order",)), contract("anywhere", (ANY_INTENT,))]
)


class TestToolCatalogue:
    def test_lists_only_allowed_tools_with_intents_and_no_failure_rule(self) -> None:
        text = tool_catalogue(REGISTRY, ["lookup", "anywhere"])
        assert text.splitlines() == [
            "Intents: order. Tools of this session:",
            "- lookup (intent: order): Purpose of lookup. When to use: Use lookup when needed. "
            "When not to use: Never otherwise.",
            "- anywhere (intent: any): Purpose of anywhere. When to use: Use anywhere when needed. "
            "When not to use: Never otherwise.",
        ]
        assert "secret" not in text

    def test_empty_when_nothing_is_allowed(self) -> None:
        assert tool_catalogue(REGISTRY, []) == ""
        assert known_intents(REGISTRY, ["anywhere"]) == []


class TestResolveIntent:
    @pytest.mark.parametrize(
        ("decision", "allow", "expected"),
        [
            ({"intent": "order"}, ["lookup"], "order"),
            ({"intent": "billing", "tool_name": "lookup"}, ["lookup"], "order"),  # from the named tool
            ({"intent": "order"}, [], None),  # nothing allowed serves it
            ({"tool_name": "secret"}, ["lookup"], None),  # a forbidden tool never yields an intent
            ({"intent": "billing"}, ["anywhere"], "billing"),  # `*` tools serve every intent
            ({"tool_name": "nope"}, ["lookup"], None),
        ],
    )
    def test_cases(self, decision: dict[str, Any], allow: list[str], expected: str | None) -> None:
        assert resolve_intent(RouteDecision(route="tool", **decision), REGISTRY, allow) == expected


class TestCallsFromMessage:
    def test_ids_are_prefixed_and_missing_ids_numbered(self) -> None:
        message = AIMessage(
            content="",
            tool_calls=[
                {"name": "lookup", "args": {"a": 1}, "id": "abc"},
                {"name": "lookup", "args": {}, "id": None},
            ],
        )
        assert calls_from_message(message, id_prefix="t3_") == [
            ToolCall(id="t3_abc", name="lookup", args={"a": 1}),
            ToolCall(id="t3_call_2", name="lookup", args={}),
        ]

    def test_non_ai_message_is_a_model_output_error(self) -> None:
        with pytest.raises(ModelOutputError, match="expected an AIMessage"):
            calls_from_message(HumanMessage(content="hi"), id_prefix="")


class TestSummarizeToolResults:
    def test_key_fields_render_nested_values_and_skip_empty_ones(self) -> None:
        content = {"id": "1", "event": {"at": "10:00", "where": "Hub"}, "items": [1, 2, 3, 4], "eta": None}
        assert render_result_content(content, ["event", "items", "eta"]) == (
            "event: (at=10:00, where=Hub); items: [1, 2, 3 … (+1 more)]"
        )
        assert render_result_content({"long": "x" * 2000}).endswith("…")
        assert len(render_result_content({"long": "x" * 2000})) <= 800

    def test_invalid_order_id_asks_for_the_number_in_chinese(self) -> None:
        result = ToolResult(
            call_id="c1",
            name="query_order",
            status="invalid_arguments",
            error="invalid: order_id: bad (got '12')",
        )
        call = ToolCall(id="c1", name="query_order", args={"order_id": "12"})
        answer, status = summarize_tool_results([result], "查订单12", calls=[call])
        assert status == "needs_clarification"
        assert answer == "“12”不是有效的订单号。请提供您的 12 位订单号，我来帮您查询。"

    def test_other_invalid_arguments_show_the_message(self) -> None:
        result = ToolResult(call_id="c", name="count_workdays", status="invalid_arguments", error="end: bad")
        assert summarize_tool_results([result], "workdays?") == (
            "count_workdays: end: bad. Please check the details you gave.",
            "needs_clarification",
        )

    def test_clarification_wins_over_failure_and_failure_over_success(self) -> None:
        ok = ToolResult(call_id="a", name="t", status="ok", content={"v": 1})
        timeout = ToolResult(call_id="b", name="t", status="timeout", error="slow")
        invalid = ToolResult(call_id="c", name="t", status="invalid_arguments", error="x: bad")
        assert summarize_tool_results([ok, timeout], "q")[1] == "degraded"
        assert summarize_tool_results([ok, timeout, invalid], "q")[1] == "needs_clarification"
        assert summarize_tool_results([ok], "q") == ("t: v: 1", "completed")
        assert summarize_tool_results([], "q") == ("No tool call was made.", "degraded")
