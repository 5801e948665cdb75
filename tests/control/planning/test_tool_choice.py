"""Unit tests of the tool-choice helpers (`haygraph.control.planning.tool_choice`, pure functions)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import BaseModel

from haygraph.control.errors import ModelOutputError
from haygraph.control.planning.routing import RouteDecision
from haygraph.control.planning.tool_choice import (
    calls_from_message,
    known_intents,
    resolve_intent,
    tool_catalogue,
)
from haygraph.control.tools import ANY_INTENT, ToolContract, ToolRegistry
from haygraph.control.tools.types import ToolCall


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
