"""`ask_turn` / `stream_turn` on the real graph with a tiny real retriever (no server, no embedding model)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from haygraph.adapters.service.errors import DeadlineExceededError
from haygraph.adapters.service.turns import RunCounter, TurnEvent, TurnRequest, ask_turn, stream_turn
from haygraph.control import Context, build_graph, memory_checkpointer
from tests.adapters.service.chat_models import ANSWER, CitingChatModel, SlowChatModel
from tests.control.graph_helpers import handbook_retriever

QUESTION = "How many days of annual leave do I get?"


def turn(
    model: Any = None, *, thread: str | None = None, timeout: float = 30.0, saver: Any = None
) -> TurnRequest:
    graph = build_graph(checkpointer=saver) if thread else build_graph()
    return TurnRequest(
        graph=graph,
        inputs={"question": QUESTION},
        context=Context(retriever=handbook_retriever(), model=model),
        thread_key=thread,
        timeout_s=timeout,
        runs=RunCounter(),
    )


def assert_no_turn_stored(saver: Any, key: str) -> None:
    """The cancelled turn changed nothing: no turn, no messages (LangGraph may keep the pending input)."""
    stored = saver.get_tuple({"configurable": {"thread_id": key}})
    values = stored.checkpoint["channel_values"] if stored else {}
    assert not values.get("turn") and not values.get("messages") and "answer" not in values


async def collect(request: TurnRequest) -> list[TurnEvent]:
    return [event async for event in stream_turn(request)]


class TestStreamTurn:
    def test_offline_progress_then_tokens_then_result(self) -> None:
        request = turn()
        events = asyncio.run(collect(request))
        kinds = [e.kind for e in events]
        assert kinds[-1] == "result"
        first_token = kinds.index("token")
        assert set(kinds[:first_token]) == {"progress"} and set(kinds[first_token:-1]) == {"token"}
        assert [e.data["node"] for e in events if e.kind == "progress"] == [
            "analyze",
            "retrieve",
            "evaluate",
            "generate",
        ]
        assert all(e.data["ms"] >= 0 for e in events if e.kind == "progress")
        result = events[-1].data
        assert result["status"] == "completed" and "[hr.md::leave]" in result["answer"]
        assert "".join(e.data["text"] for e in events if e.kind == "token") == result["answer"]
        assert sum(1 for k in kinds if k == "token") >= 2  # a few pieces, not one blob
        assert request.runs is not None and request.runs.active == 0

    def test_model_tokens_stream_before_generate_finishes(self) -> None:
        events = asyncio.run(collect(turn(CitingChatModel())))
        kinds = [e.kind for e in events]
        tokens = [e.data["text"] for e in events if e.kind == "token"]
        assert "".join(tokens) == ANSWER and len(tokens) > 3
        generate_done = next(
            i for i, e in enumerate(events) if e.kind == "progress" and e.data["node"] == "generate"
        )
        assert kinds.index("token") < generate_done  # produced while the model was generating
        result = events[-1].data
        assert (result["status"], result["answer"], result["evidence_ids"]) == (
            "completed",
            ANSWER,
            ["hr.md::leave"],
        )

    def test_rejected_citations_end_in_a_rejected_result(self) -> None:
        events = asyncio.run(collect(turn(CitingChatModel(bad_id="made-up.md::0000"))))
        assert events[-1].kind == "result"
        assert events[-1].data["status"] == "rejected" and events[-1].data["answer"] is None
        assert (
            "".join(e.data["text"] for e in events if e.kind == "token") == ANSWER
        )  # streamed, then withdrawn

    def test_deadline_sends_an_error_event_and_stores_nothing(self) -> None:
        saver = memory_checkpointer()
        request = turn(SlowChatModel(delay_s=1.0), thread="A::t", timeout=0.3, saver=saver)

        async def scenario() -> list[TurnEvent]:
            events = await collect(request)
            await asyncio.sleep(0.05)
            return events

        events = asyncio.run(scenario())
        assert [e.kind for e in events] == ["error"]
        assert events[0].data["error"]["type"] == "deadline_exceeded"
        assert request.runs is not None and request.runs.active == 0
        assert_no_turn_stored(saver, "A::t")

    def test_consumer_closing_early_cancels_the_run(self) -> None:
        saver = memory_checkpointer()
        request = turn(SlowChatModel(delay_s=0.5), thread="A::gone", saver=saver)

        async def scenario() -> int:
            stream = stream_turn(request)
            consumer = asyncio.create_task(stream.__anext__())
            await asyncio.sleep(0.1)
            consumer.cancel()  # what a client disconnect does to the response task
            with pytest.raises(asyncio.CancelledError):
                await consumer
            await stream.aclose()
            await asyncio.sleep(0.05)
            return request.runs.active if request.runs else -1

        assert asyncio.run(scenario()) == 0
        assert_no_turn_stored(saver, "A::gone")


class TestAskTurn:
    def test_thread_turn_is_checkpointed(self) -> None:
        saver = memory_checkpointer()
        result = asyncio.run(ask_turn(turn(thread="A::t1", saver=saver)))
        assert result["status"] == "completed" and result["path"][-1] == "generate"
        stored = saver.get_tuple({"configurable": {"thread_id": "A::t1"}})
        assert stored is not None and stored.checkpoint["channel_values"]["turn"] == 1

    def test_deadline_raises_and_stores_nothing(self) -> None:
        saver = memory_checkpointer()
        request = turn(SlowChatModel(delay_s=1.0), thread="A::slow", timeout=0.3, saver=saver)
        with pytest.raises(DeadlineExceededError, match=r"0\.3 s deadline"):
            asyncio.run(ask_turn(request))
        assert request.runs is not None and request.runs.active == 0
        assert_no_turn_stored(saver, "A::slow")


class TestConfirmation:
    """A side-effect tool pauses the service turn too; the resume run (as `/confirm` sends it) finishes it."""

    @staticmethod
    def paused(tmp_path: Any, saver: Any) -> tuple[TurnRequest, Any]:
        from haygraph.adapters.examples.orders_db import OrdersDatabase
        from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
        from haygraph.control.tools import ContractToolExecutor
        from tests.control.tool_helpers import ScriptedChatModel, call

        db = OrdersDatabase(tmp_path / "orders.sqlite")
        model = ScriptedChatModel(
            script=[
                call("RouteDecision", route="tool", intent="support"),
                call("create_ticket", category="delivery", description="Parcel arrived damaged."),
            ]
        )
        executor = ContractToolExecutor(build_example_registry(db, None), DEFAULT_ALLOW_LIST)
        request = TurnRequest(
            graph=build_graph(checkpointer=saver),
            inputs={"question": "my parcel is damaged, open a ticket"},
            context=Context(model=model, tool_executor=executor),
            thread_key="tenant-a:t1",
            runs=RunCounter(),
        )
        return request, db

    def test_ask_turn_reports_needs_confirmation_then_the_resume_runs_the_call(self, tmp_path: Any) -> None:
        from langgraph.types import Command

        request, db = self.paused(tmp_path, memory_checkpointer())
        result = asyncio.run(ask_turn(request))
        assert result["status"] == "needs_confirmation" and result["pending"][0]["tool"] == "create_ticket"
        assert db.tickets() == []
        resumed = TurnRequest(
            graph=request.graph,
            inputs=Command(resume=True),
            context=request.context,
            thread_key="tenant-a:t1",
        )
        done = asyncio.run(ask_turn(resumed))
        assert done["status"] == "completed" and len(db.tickets()) == 1

    def test_the_stream_ends_in_a_needs_confirmation_result(self, tmp_path: Any) -> None:
        request, db = self.paused(tmp_path, memory_checkpointer())

        async def collect() -> list[TurnEvent]:
            return [e async for e in stream_turn(request)]

        events = asyncio.run(collect())
        assert events[-1].kind == "result" and events[-1].data["status"] == "needs_confirmation"
        assert db.tickets() == []
