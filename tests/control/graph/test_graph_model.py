"""Model mode, driven by a scripted fake chat model that replays AIMessages with tool calls."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from haygraph.control.errors import ConfigError
from haygraph.control.graph import build_graph
from haygraph.control.graph.context import Context
from haygraph.control.planning.extractive import extractive_answer
from haygraph.control.tools.types import ToolCall, ToolResult
from tests.control.graph_helpers import handbook_retriever
from tests.control.tool_helpers import ScriptedChatModel

GRAPH = build_graph()


def call(name: str, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"tc_{name}"}])


ROUTE_RETRIEVE = call("RouteDecision", route="retrieve", reason="policy question")
REWRITE_LEAVE = call("RewrittenQueries", queries=["annual leave days"])
QUESTION = "How many vacation days do I get?"


def run(question: str, model: ScriptedChatModel, **settings: Any) -> dict[str, Any]:
    return GRAPH.invoke({"question": question}, context=Context(model=model, **settings))


class TestGroundedGeneration:
    def test_valid_citation_completes(self) -> None:
        model = ScriptedChatModel(
            script=[
                ROUTE_RETRIEVE,
                REWRITE_LEAVE,
                call("GroundedAnswer", answer="You get 20 days per year.", evidence_ids=["hr.md::leave"]),
            ]
        )
        retriever = handbook_retriever()
        state = run(QUESTION, model, retriever=retriever)
        assert state["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert retriever.calls == [("annual leave days", 5, None)]
        assert (state["status"], state["answer"], state["evidence_ids"]) == (
            "completed",
            "You get 20 days per year.",
            ["hr.md::leave"],
        )
        assert model.tools_seen == [["RouteDecision"], ["RewrittenQueries"], ["GroundedAnswer"]]
        prompt = model.prompts[2][-1].content
        assert "[hr.md::leave]" in prompt and "20 days of annual leave" in prompt
        assert "zh.md::nianjia" not in prompt  # not retrieved, never shown

    def test_unknown_evidence_id_rejected(self) -> None:
        model = ScriptedChatModel(
            script=[
                ROUTE_RETRIEVE,
                REWRITE_LEAVE,
                call(
                    "GroundedAnswer", answer="You get 30 days.", evidence_ids=["hr.md::leave", "made-up::1"]
                ),
            ]
        )
        state = run(QUESTION, model, retriever=handbook_retriever())
        assert (state["status"], state["answer"], state["evidence_ids"]) == ("rejected", None, [])
        assert "messages" not in state or all(m.type != "ai" for m in state["messages"])

    def test_answer_without_citation_rejected(self) -> None:
        model = ScriptedChatModel(
            script=[ROUTE_RETRIEVE, REWRITE_LEAVE, call("GroundedAnswer", answer="20 days.", evidence_ids=[])]
        )
        state = run(QUESTION, model, retriever=handbook_retriever())
        assert (state["status"], state["answer"], state["evidence_ids"]) == ("rejected", None, [])

    def test_empty_answer_is_insufficient(self) -> None:
        model = ScriptedChatModel(
            script=[ROUTE_RETRIEVE, REWRITE_LEAVE, call("GroundedAnswer", answer="", evidence_ids=[])]
        )
        state = run(QUESTION, model, retriever=handbook_retriever())
        assert state["status"] == "insufficient_evidence"
        assert state["evidence_ids"] == []

    def test_no_evidence_never_calls_generation(self) -> None:
        model = ScriptedChatModel(
            script=[ROUTE_RETRIEVE, call("RewrittenQueries", queries=["summer dress code"])]
        )
        state = run("What should I wear to the summer party?", model, retriever=handbook_retriever())
        assert state["status"] == "insufficient_evidence"
        assert len(model.prompts) == 2  # route + rewrite; the model never sees an empty-evidence prompt


class TestModelRouting:
    def test_scripted_tool_route_followed(self) -> None:
        calls: list[list[ToolCall]] = []

        class Executor:
            def execute(
                self, tool_calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
            ) -> list[ToolResult]:
                calls.append(tool_calls)
                return [
                    ToolResult(
                        call_id="call_1", name="query_order", status="ok", content={"status": "packed"}
                    )
                ]

        model = ScriptedChatModel(
            script=[
                call(
                    "RouteDecision",
                    route="tool",
                    reason="order status",
                    tool_name="query_order",
                    tool_args={"order_id": "123456789012", "detail_level": "full"},
                )
            ]
        )
        retriever = handbook_retriever()
        # the rules alone would retrieve for this wording; the model's decision wins
        state = run("Check 123456789012 for me", model, retriever=retriever, tool_executor=Executor())
        assert state["path"] == ["analyze", "tool_exec", "generate"]
        assert calls == [
            [
                ToolCall(
                    id="call_1", name="query_order", args={"order_id": "123456789012", "detail_level": "full"}
                )
            ]
        ]
        assert retriever.calls == []
        assert (state["status"], state["answer"]) == ("completed", "query_order: status: packed")

    def test_scripted_clarify_route(self) -> None:
        model = ScriptedChatModel(
            script=[call("RouteDecision", route="clarify", clarification="Which product do you mean?")]
        )
        state = run("Is it waterproof?", model, retriever=handbook_retriever())
        assert state["path"] == ["analyze", "generate"]
        assert (state["status"], state["answer"]) == ("needs_clarification", "Which product do you mean?")


class TestModelFailures:
    def test_malformed_outputs_fall_back_to_rules_and_extractive(self) -> None:
        model = ScriptedChatModel(
            script=[
                call("RouteDecision", route="dance"),  # not a valid route
                AIMessage(content="annual leave"),  # plain text instead of the RewrittenQueries call
                call("GroundedAnswer", answer=42),  # wrong field types
            ]
        )
        retriever = handbook_retriever()
        question = "Could you please tell me how many days of annual leave employees get?"
        state = run(question, model, retriever=retriever)
        assert state["route"] == "retrieve"  # rules
        assert state["query"] == "how many days of annual leave employees get"  # rules rewrite
        expected = extractive_answer(
            state["query"], [e for e in state["evidence"] if (e.relevance or 0) >= 0.5]
        )
        assert expected is not None
        assert (state["status"], state["answer"], state["evidence_ids"]) == (
            "degraded",
            expected.answer,
            expected.evidence_ids,
        )
        assert state["evidence_ids"] == ["hr.md::leave"]
        # each fallback is recorded in the result with its reason
        routing, rewriting, answering = state["notes"]
        assert routing.startswith("model routing failed (ValidationError") and "'dance'" in routing
        assert rewriting.startswith("model rewriting failed (ModelOutputError: expected RewrittenQueries")
        assert "GroundedAnswer" in answering and answering.endswith("answered extractively")

    def test_model_exceptions_degrade_not_crash(self) -> None:
        model = ScriptedChatModel(script=[RuntimeError("rate limited")] * 3)
        state = run("how many days of annual leave do employees get", model, retriever=handbook_retriever())
        assert state["status"] == "degraded"
        assert state["evidence_ids"] == ["hr.md::leave"]
        assert state["answer"].endswith("[hr.md::leave]")

    def test_model_greeting_route_uses_canned_reply(self) -> None:
        model = ScriptedChatModel(script=[call("RouteDecision", route="answer", reason="greeting")])
        state = run("hey there!", model, retriever=handbook_retriever())
        assert state["path"] == ["analyze", "generate"]
        assert (state["status"], state["answer"]) == (
            "completed",
            "Hello! Ask me anything about the knowledge base.",
        )


class TestModelSpec:
    def test_provider_string_without_langchain_is_config_error(self) -> None:
        try:
            import langchain  # noqa: F401
        except ImportError:
            with pytest.raises(ConfigError, match=r"`langchain` package"):
                Context(model="openai:gpt-4o-mini")
        else:
            pytest.skip("langchain is installed here")

    def test_malformed_spec_is_config_error(self) -> None:
        with pytest.raises(ConfigError, match="provider:model"):
            Context(model="openai:")
