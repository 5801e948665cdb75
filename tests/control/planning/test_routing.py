"""The offline router: chit-chat, a tool's `OfflineTrigger`, or retrieval; it has no domain of its own.

A toy room-booking tool stands in for any domain; the order tool's trigger is tested with the
example tools (tests/adapters/test_example_tools.py).
"""

from __future__ import annotations

import pytest

from haygraph.control.planning.routing import RouteDecision, route_question
from haygraph.control.tools import Cues, ToolRegistry
from haygraph.control.tools.types import ToolCall
from tests.control.tool_helpers import ROOM, ROOMS, room_tool


def room_call(room: str) -> ToolCall:
    return ToolCall(id="call_1", name="room_status", args={"room": room, "floor_plan": False})


class TestRouteQuestion:
    @pytest.mark.parametrize(
        "text",
        ["Hi, what is the refund policy?", "hello how many leave days do I have", "谢谢，那退货政策呢",
         "What are the meeting room rules?", "会议室预订规定是什么", "What is the order of the steps?"],
    )  # fmt: skip
    def test_knowledge_questions_retrieve(self, text: str) -> None:
        decision = route_question(text, None, ROOMS)
        assert (decision.route, decision.tool_call) == ("retrieve", None)

    @pytest.mark.parametrize(
        ("text", "room"),
        [("Is room B204 free?", "B204"), ("会议室 C101 现在有人吗", "C101"), ("B204", "B204")],
    )
    def test_entity_in_an_on_topic_or_bare_message_calls_the_tool(self, text: str, room: str) -> None:
        decision = route_question(text, None, ROOMS)
        assert (decision.route, decision.intent) == ("tool", "rooms")
        assert decision.tool_call == room_call(room)

    @pytest.mark.parametrize(
        ("text", "clarification"),
        [
            ("Is the meeting room free?", "Which room (e.g. B204)?"),
            ("会议室现在空吗", "请问是哪个会议室（例如 B204）？"),
            ("is room B20 free", "'B20' is not a room number. Which room (e.g. B204)?"),
        ],
    )
    def test_missing_entity_asks_with_the_declared_clarification(self, text: str, clarification: str) -> None:
        decision = route_question(text, None, ROOMS)
        assert (decision.route, decision.intent, decision.clarification) == (
            "clarify",
            "rooms",
            clarification,
        )
        assert decision.tool_call is None

    def test_remembered_entity_is_used(self) -> None:
        decision = route_question("is the room free now?", {"rooms": ["A100", "B204"]}, ROOMS)
        assert decision.tool_call == room_call("B204")

    def test_without_tools_nothing_but_chitchat_and_retrieval(self) -> None:
        for text in ("Is room B204 free?", "B204", "Where is my order 123456789012?", "我的快递怎么还没到"):
            assert route_question(text).route == "retrieve"
        assert route_question("thanks!").route == "answer"

    def test_a_bare_entity_needs_bare_entity(self) -> None:
        strict = ToolRegistry(
            [
                room_tool(
                    keywords=Cues(en=("room",)), entity=ROOM, bare_entity=False, args={"floor_plan": False}
                )
            ]
        )
        assert route_question("B204", None, strict).route == "retrieve"
        assert route_question("room B204", None, strict).tool_call == room_call("B204")

    def test_trigger_without_entity_calls_with_fixed_arguments(self) -> None:
        plain = ToolRegistry(
            [room_tool(keywords=Cues(en=("floor plan",)), args={"room": "A000", "floor_plan": True})]
        )
        decision = route_question("show me the floor plan", None, plain)
        assert decision.tool_call == ToolCall(
            id="call_1", name="room_status", args={"room": "A000", "floor_plan": True}
        )

    def test_contracts_without_trigger_are_skipped(self) -> None:
        silent = ToolRegistry([room_tool(keywords=Cues(en=("room",)))])
        object.__setattr__(silent.get("room_status"), "offline_trigger", None)
        assert route_question("room B204", None, silent).route == "retrieve"

    def test_tool_call_only_for_tool_route(self) -> None:
        assert RouteDecision(route="retrieve", tool_name="room_status").tool_call is None
