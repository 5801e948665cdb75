"""The reply of a tool turn (`haygraph.control.planning.tool_reply`, pure functions)."""

from __future__ import annotations

import dataclasses

import pytest

from haygraph.control.planning.tool_reply import render_result_content, summarize_tool_results
from haygraph.control.tools import ToolRegistry
from haygraph.control.tools.types import ToolCall, ToolResult
from tests.control.tool_helpers import ROOMS

ROOMS_WITH_KEYS = ToolRegistry([dataclasses.replace(ROOMS.get("room_status"), key_fields=("free",))])  # type: ignore[type-var]


class TestSummarizeToolResults:
    def test_key_fields_render_nested_values_and_skip_empty_ones(self) -> None:
        content = {"id": "1", "event": {"at": "10:00", "where": "Hub"}, "items": [1, 2, 3, 4], "eta": None}
        assert render_result_content(content, ["event", "items", "eta"]) == (
            "event: (at=10:00, where=Hub); items: [1, 2, 3 … (+1 more)]"
        )
        assert render_result_content({"long": "x" * 2000}).endswith("…")
        assert len(render_result_content({"long": "x" * 2000})) <= 800

    def test_invalid_entity_argument_asks_with_the_contracts_clarification(self) -> None:
        result = ToolResult(
            call_id="c1",
            name="room_status",
            status="invalid_arguments",
            error="invalid: room: bad (got 'B2')",
        )
        call = ToolCall(id="c1", name="room_status", args={"room": "B2"})
        answer, status = summarize_tool_results([result], "会议室B2空吗", calls=[call], registry=ROOMS)
        assert (answer, status) == (
            "“B2”不是会议室编号。请问是哪个会议室（例如 B204）？",
            "needs_clarification",
        )
        # without the contract (or for another argument) the validation message is shown
        assert summarize_tool_results([result], "is B2 free", calls=[call])[0] == (
            "room_status: invalid: room: bad (got 'B2'). Please check the details you gave."
        )

    def test_ok_results_show_the_contracts_key_fields(self) -> None:
        ok = ToolResult(call_id="a", name="room_status", status="ok", content={"room": "B204", "free": True})
        assert summarize_tool_results([ok], "q", registry=ROOMS_WITH_KEYS) == (
            "room_status: free: True",
            "completed",
        )
        assert summarize_tool_results([ok], "q") == ("room_status: room: B204; free: True", "completed")

    @pytest.mark.parametrize(
        ("status", "en", "zh"),
        [
            ("not_allowed", "I am not permitted to use t in this session, so nothing was done.",
             "本次会话无权使用 t，未执行任何操作。"),
            ("unknown_tool", "t is not an available tool, so nothing was done.",
             "t 不是可用的工具，未执行任何操作。"),
            ("timeout", "t failed (timeout: slow). Please try again later.",
             "t failed (timeout: slow). 请稍后再试。"),
        ],
    )  # fmt: skip
    def test_failures_are_explained_in_the_users_language(self, status: str, en: str, zh: str) -> None:
        result = ToolResult(call_id="a", name="t", status=status, error="slow")  # type: ignore[arg-type]
        assert summarize_tool_results([result], "status?") == (en, "degraded")
        assert summarize_tool_results([result], "状态？") == (zh, "degraded")

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
