"""Context engineering through the real graph (offline): token budget, history, entities, tool results."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, QueryOrderArgs, build_example_registry
from haygraph.control.api import run_turn
from haygraph.control.errors import ConfigError, ContextError, ControlError, ModelOutputError
from haygraph.control.graph import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.graph.nodes import budget_failure_message
from haygraph.control.graph.turn_prompt import build_turn_prompt
from haygraph.control.planning.decision.model import AnswerabilityModel
from haygraph.control.tools import ContractToolExecutor, ToolRegistry
from haygraph.control.window.budget import BudgetConfig
from haygraph.control.window.tokens import ChatModelCounter, MiniLMCounter
from tests.control.graph_helpers import HANDBOOK, CountingRetriever, KeywordRetriever, ev

_TRAVEL = (
    "Travel expenses for international trips are reimbursed after the trip. Economy class is the "
    "standard for flights under six hours; business class needs director approval. Hotels are "
    "reimbursed up to the city limit published by finance each year. Meals are covered by a daily "
    "allowance that depends on the destination country. Receipts must be uploaded to the expense "
    "tool within thirty days, otherwise the claim is rejected. Taxis are reimbursed when public "
    "transport is not available or unsafe. Visa fees and travel insurance are paid by the company. "
)
DOCS = [
    *HANDBOOK,
    ev("travel.md::international", _TRAVEL * 5, 0.8),
    ev("travel.md::approval", "International travel policy: trips need approval. " + _TRAVEL * 4, 0.75),
    ev(
        "zh.md::travel",
        "出差报销标准：国内出差住宿每晚不超过五百元，国际出差按城市标准执行。"
        "餐补按天发放，报销需在出差结束后三十天内提交发票。" * 6,
        0.78,
    ),
    ev("hr.md::equipment", "Equipment for remote work: a laptop, a monitor and a headset are provided.", 0.7),
]

TURN_2 = (
    "My order 123456789012 was placed on 2024-05-12 and cost $120. "
    "我的另一个订单210987654321是2024年5月20日下的。"
)
CYCLE = [
    "How many days of annual leave do I get per year?",
    "年假有多少天？需要提前多久申请？",
    "Does remote work need approval from my manager?",
    "thanks!",
    "When does the parking garage open?",
    "where is my order?",
    "Tell me about the travel expense policy for international trips",
    "出差报销的标准是什么？",
    "你好",
    "What equipment is provided for remote work?",
]


def question(turn: int) -> str:
    """Turn 1 greets, turn 2 gives order ids, dates and an amount, then a 10-question cycle."""
    if turn == 1:
        return "hello"
    if turn == 2:
        return TURN_2
    return CYCLE[turn % len(CYCLE)]


def checkpoint_bytes(graph: Any, cfg: dict[str, Any], *, without: tuple[str, ...] = ()) -> int:
    """Size of the thread's persisted values, serialized by the checkpointer's own serializer."""
    values = {k: v for k, v in graph.get_state(cfg).values.items() if k not in without}
    return len(graph.checkpointer.serde.dumps_typed(values)[1])


def retriever() -> CountingRetriever:
    return CountingRetriever(KeywordRetriever(list(DOCS)))


def order_tools(tmp_path: Path) -> dict[str, Any]:
    """Context settings offering the example tools (order ids become a remembered entity kind)."""
    registry = build_example_registry(OrdersDatabase(tmp_path / "orders.sqlite"))
    return {"tool_registry": registry, "tool_allow_list": DEFAULT_ALLOW_LIST}


class TestLongConversation:
    def test_sixty_turns_stay_in_budget_and_remember_turn_two(self, tmp_path: Path) -> None:
        graph = build_graph(checkpointer=memory_checkpointer())
        ctx = Context(
            retriever=retriever(), budget=BudgetConfig(context_window=1024), **order_tools(tmp_path)
        )
        cfg = {"configurable": {"thread_id": "long"}}
        limit = 1024 - 51  # window - floor(5% reserve)
        budgeted, dropped_any = 0, False
        state: dict[str, Any] = {}
        for turn in range(1, 61):
            state = graph.invoke({"question": question(turn)}, context=ctx, config=cfg)
            budget = state["context_budget"]
            if budget:
                assert "error" not in budget, (turn, budget)
                assert budget["limit"] == limit
                assert budget["measured_total"] <= limit, (turn, budget)
                budgeted += 1
                dropped_any = dropped_any or bool(budget["dropped_evidence_ids"])
            kept = graph.get_state(cfg).values["messages"]
            assert sum(m.type == "human" for m in kept) <= 3, turn
            assert len(kept) <= 6, turn
        assert budgeted >= 40  # every retrieval and tool turn builds the prompt
        assert dropped_any  # the 1024-token window really forced low-ranked chunks out

        # turn 60 is a handbook question; the facts of turn 2 are still remembered and injected
        assert state["route"] == "retrieve" and state["status"] == "completed"
        entities = state["entities"]
        assert {"123456789012", "210987654321"} <= set(entities["order_ids"])
        assert {"2024-05-12", "2024-05-20"} <= set(entities["dates"])
        assert "120 USD" in entities["money"]
        assert state["context_budget"]["fixed"]["entities"] > 0
        system_text = build_turn_prompt(ctx, state, evidence=state["evidence"]).messages[0][1]
        for value in ("123456789012", "210987654321", "2024-05-12", "2024-05-20", "120 USD"):
            assert value in system_text
        # at 1024 tokens the history share holds only the recent turns; at the default 8192 the
        # running summary of the 57 folded turns fits as well
        roomy = build_turn_prompt(Context(), state, evidence=state["evidence"]).messages[0][1]
        assert "Summary of earlier conversation" in roomy and "Summary" not in system_text
        assert 0 < ctx.counter.count(state["summary"]) <= ctx.history.summary_max_tokens

    def test_persisted_state_after_200_turns_is_no_larger_than_after_20(self, tmp_path: Path) -> None:
        graph = build_graph(checkpointer=memory_checkpointer())
        ctx = Context(retriever=retriever(), **order_tools(tmp_path))
        cfg = {"configurable": {"thread_id": "size"}}
        sizes: dict[int, int] = {}
        whole: dict[int, int] = {}
        for turn in range(1, 201):
            graph.invoke({"question": question(turn)}, context=ctx, config=cfg)
            if turn in (20, 200):
                # the thread's turn number is a counter: msgpack spends 1 byte on 20, 2 on 200 (at
                # most 9 ever); everything else must not grow at all
                sizes[turn] = checkpoint_bytes(graph, cfg, without=("turn",))
                whole[turn] = checkpoint_bytes(graph, cfg)
        values = graph.get_state(cfg).values
        assert len(values["messages"]) == 6  # 3 turns of question + answer
        assert values["turn"] == 200
        assert sizes[200] <= sizes[20], sizes
        assert whole[200] - whole[20] <= 1, whole
        assert "123456789012" in values["entities"]["order_ids"]


class TestBudgetViolation:
    @pytest.mark.parametrize("text", ["How many days of annual leave do I get per year?", "年假有多少天？"])
    def test_window_too_small_is_degraded_not_raised(self, text: str) -> None:
        ctx = Context(retriever=retriever(), budget=BudgetConfig(context_window=128))
        state = build_graph().invoke({"question": text}, context=ctx)
        assert state["status"] == "degraded"
        assert state["answer"] == budget_failure_message(text)
        assert state["evidence_ids"] == []
        assert state["context_budget"]["error"].startswith("WindowTooSmallError")
        assert state["context_budget"]["limit"] == 128 - 6
        assert state["path"][-1] == "generate"

    def test_run_turn_reports_degraded(self) -> None:
        # answerable evidence (a decision on relevance alone), so the turn reaches the prompt budget
        by_relevance = AnswerabilityModel(weights={"en_relevance": 10.0, "en_bias": -5.0})
        budget = BudgetConfig(context_window=100)
        ctx = Context(retriever=retriever(), budget=budget, answerability=by_relevance)
        result = run_turn(build_graph(), "When does the parking garage open?", context=ctx)
        assert (result["status"], result["evidence_ids"]) == ("degraded", [])
        assert "context window" in result["answer"]

    def test_context_errors_are_control_errors(self) -> None:
        assert issubclass(ContextError, ControlError)


def _full_tracking_registry(db: OrdersDatabase) -> ToolRegistry:
    """The example registry, with query_order always returning the whole tracking history.

    The offline rules ask for the summary; this stands for a user who asked for every scan.
    """
    registry = build_example_registry(db)
    summary = registry.get("query_order")
    assert summary is not None

    def full(args: QueryOrderArgs) -> Any:
        return summary.func(args.model_copy(update={"detail_level": "full"}))

    tools = [dataclasses.replace(summary, func=full), *(c for c in registry if c.name != "query_order")]
    return ToolRegistry(tools)


class TestToolResultReduction:
    def test_fifty_tracking_events_reduced_to_key_fields_within_share(self, tmp_path: Path) -> None:
        registry = _full_tracking_registry(OrdersDatabase(tmp_path / "orders.sqlite"))
        executor = ContractToolExecutor(registry, DEFAULT_ALLOW_LIST, result_char_cap=1_000_000)
        ctx = Context(tool_executor=executor)
        query_order = registry.get("query_order")
        assert query_order is not None
        full = query_order.func(QueryOrderArgs(order_id="202405120001")).model_dump(mode="json")
        assert len(full["tracking_events"]) == 50
        share = ctx.budget.nominal("tool_results")
        assert ctx.counter.count_json(full) > max(share, ctx.full_result_cap_tokens)

        state = build_graph().invoke({"question": "Where is my order 202405120001?"}, context=ctx)
        assert state["path"] == ["analyze", "tool_exec", "generate"]
        assert state["status"] == "completed"
        part = state["context_budget"]["parts"]["tool_results"]
        assert (part["kept"], part["dropped"]) == (1, 0)
        assert 0 < part["used"] <= share
        # over the full-content cap: state keeps the contract key fields only
        stored = state["tool_results"][0].content
        assert set(stored) == set(query_order.key_fields)
        assert stored["tracking_event_count"] == 50
        assert stored["latest_event"]["description"] == full["tracking_events"][-1]["description"]
        assert "SF1234567890" in state["answer"]

    def test_small_result_kept_in_full(self, tmp_path: Path) -> None:
        registry = build_example_registry(OrdersDatabase(tmp_path / "orders.sqlite"))
        ctx = Context(tool_executor=ContractToolExecutor(registry, DEFAULT_ALLOW_LIST))
        state = build_graph().invoke({"question": "Where is my order 202405120001?"}, context=ctx)
        stored = state["tool_results"][0].content
        assert stored["customer_name"] == "Alice Chen"  # not a key field: nothing was reduced
        assert state["context_budget"]["parts"]["tool_results"]["kept"] == 1

    def test_only_routed_intent_schemas_are_charged(self, tmp_path: Path) -> None:
        registry = build_example_registry(
            OrdersDatabase(tmp_path / "orders.sqlite"), retriever=KeywordRetriever(list(DOCS))
        )
        ctx = Context(tool_executor=ContractToolExecutor(registry, DEFAULT_ALLOW_LIST))
        state = build_graph().invoke({"question": "Where is my order 202405120001?"}, context=ctx)
        assert state["intent"] == "order"
        part = state["context_budget"]["parts"]["tool_schemas"]
        order_tools = registry.schemas_for("order", DEFAULT_ALLOW_LIST)
        assert part["kept"] == len(order_tools) == 4  # not update_shipping_address, not the KB search
        assert part["used"] == sum(ctx.counter.count_json(s) for s in order_tools)
        everything = sum(ctx.counter.count_json(c.model_schema()) for c in registry)
        assert part["used"] < everything


class TestBudgetSettings:
    def test_counter_is_resolved_lazily_and_cached(self) -> None:
        ctx = Context()
        assert ctx._counter is None
        assert isinstance(ctx.counter, MiniLMCounter) and ctx.counter is ctx.counter

    def test_model_counter_when_model_set(self) -> None:
        ctx = Context(model=FakeListChatModel(responses=["x"]))
        assert isinstance(ctx.counter, ChatModelCounter)

    def test_explicit_counter_wins(self) -> None:
        counter = MiniLMCounter()
        assert Context(token_counter=counter).counter is counter

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"budget": {"context_window": 10}}, "budget must be a BudgetConfig, but got dict"),
            ({"full_result_cap_tokens": 0}, "full_result_cap_tokens must be > 0, but got 0"),
        ],
    )
    def test_invalid_settings(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ConfigError, match=message):
            Context(**kwargs)


class TestModelModePrompt:
    def test_model_may_cite_only_evidence_kept_in_the_prompt(self) -> None:
        from tests.control.graph.test_graph_model import ScriptedChatModel, call

        model = ScriptedChatModel(
            script=[
                call("RouteDecision", route="retrieve", reason="policy question"),
                call("RewrittenQueries", queries=["travel expense policy international trips"]),
                call("GroundedAnswer", answer="Trips need approval.", evidence_ids=["travel.md::approval"]),
            ]
        )
        ctx = Context(model=model, retriever=retriever(), budget=BudgetConfig(context_window=1024))
        state = build_graph().invoke(
            {"question": "Tell me about the travel expense policy for international trips"}, context=ctx
        )
        retrieved = [e.id for e in state["evidence"]]
        assert retrieved[:2] == ["travel.md::international", "travel.md::approval"]
        assert state["context_budget"]["dropped_evidence_ids"] == ["travel.md::approval"]
        sent = "\n".join(str(m.content) for m in model.prompts[2])
        assert "[travel.md::international]" in sent and "[travel.md::approval]" not in sent
        assert state["context_budget"]["measured_total"] <= ctx.budget.limit
        # retrieved this run, but not in the prompt: the model could not have read it
        assert (state["status"], state["answer"], state["evidence_ids"]) == ("rejected", None, [])

    def test_model_summary_and_its_fallback(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage

        from haygraph.control.window.memory import model_summarizer

        folded = [HumanMessage(content="Order 123456789012?"), AIMessage(content="It is packed.")]
        summarize = model_summarizer(FakeListChatModel(responses=["User asked about order 123456789012."]))
        assert summarize("", folded) == "User asked about order 123456789012."
        with pytest.raises(ModelOutputError):
            model_summarizer(FakeListChatModel(responses=[" "]))("", folded)
