"""The reply of a tool turn: each result rendered for the user, and the turn's status.

Pure functions, the same in both modes (no model writes a tool answer, so nothing in a tool result
can be embellished): an `ok` result is shown through its contract's key fields; `invalid_arguments`
becomes a question back to the user (for an order number: the 12-digit order number request) while
the validation message stays in `tool_results` for the model or a reviewer; every other failure gets
a clear message and status `degraded`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from haygraph.control.rules import is_chinese, order_number_request
from haygraph.control.state import Status
from haygraph.control.tool_types import ToolCall, ToolResult

MAX_RESULT_CHARS = 800
"""Longest rendering of one ok result in the reply."""
_MAX_ITEMS = 3
_MAX_TEXT = 240
_ORDER_ID_ERROR = re.compile(r"(?:^|[:;]\s*)order_id:")


def _render(value: Any, depth: int = 0) -> str:
    """Render a JSON-like value compactly: nested dicts as `k=v`, lists cut to a few items."""
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    if isinstance(value, Mapping):
        parts = [f"{k}={_render(v, depth + 1)}" for k, v in value.items() if v not in (None, "", [], {})]
        return "(" + ", ".join(parts) + ")" if depth else ", ".join(parts)
    if isinstance(value, list):
        shown = [_render(v, depth + 1) for v in value[:_MAX_ITEMS]]
        more = f" … (+{len(value) - _MAX_ITEMS} more)" if len(value) > _MAX_ITEMS else ""
        return "[" + ", ".join(shown) + more + "]"
    text = " ".join(str(value).split())
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 1] + "…"


def render_result_content(content: Any, key_fields: Sequence[str] = ()) -> str:
    """Render an ok result's content: its `key_fields` (all fields when none), `key: value; ...`.

    Empty values are skipped and the whole rendering is cut at `MAX_RESULT_CHARS`. Pure function.
    """
    if hasattr(content, "model_dump"):
        content = content.model_dump(mode="json")
    if not isinstance(content, Mapping):
        text = _render(content)
    else:
        keys = [k for k in key_fields if k in content] or list(content)
        text = "; ".join(
            f"{key}: {_render(content[key], 1)}" for key in keys if content[key] not in (None, "", [], {})
        )
    return text if len(text) <= MAX_RESULT_CHARS else text[: MAX_RESULT_CHARS - 1] + "…"


_FAILURES = {
    "not_allowed": (
        "本次会话无权使用 {name}，未执行任何操作。",
        "I am not permitted to use {name} in this session, so nothing was done.",
    ),
    "unknown_tool": (
        "{name} 不是可用的工具，未执行任何操作。",
        "{name} is not an available tool, so nothing was done.",
    ),
    "budget_exceeded": (
        "{name} 未执行：本轮工具调用次数已达上限，请单独再问一次。",
        "{name} was not run: this turn's tool call limit was reached. Please ask for it separately.",
    ),
}


def _failure_line(result: ToolResult, zh: bool) -> str:
    if result.status in _FAILURES:
        return _FAILURES[result.status][0 if zh else 1].format(name=result.name)
    later = "请稍后再试。" if zh else "Please try again later."
    return f"{result.name} failed ({result.status}: {result.error or 'no details'}). {later}"


def _clarify_line(result: ToolResult, call: ToolCall | None, question: str, zh: bool) -> str:
    if _ORDER_ID_ERROR.search(result.error or ""):
        wrong = (call.args.get("order_id") if call is not None else None) or None
        return order_number_request(question, str(wrong) if wrong is not None else None)
    detail = result.error or "invalid arguments"
    return f"{result.name}: {detail}. " + (
        "请检查您提供的信息后再试。" if zh else "Please check the details you gave."
    )


def summarize_tool_results(
    results: Sequence[ToolResult],
    question: str,
    *,
    calls: Sequence[ToolCall] = (),
    key_fields: Mapping[str, Sequence[str]] | None = None,
) -> tuple[str, Status]:
    """Turn a tool turn's results into the reply and the turn's status.

    ok -> `name: key fields` (completed); invalid_arguments -> a question back (needs_clarification,
    which wins over the others); not_allowed / unknown_tool / budget_exceeded / timeout / error -> a
    clear message (degraded). `calls` supply the rejected argument values; `key_fields` maps a tool
    name to its contract's key fields. No results at all -> degraded.
    """
    zh = is_chinese(question)
    by_id = {c.id: c for c in calls}
    lines: list[str] = []
    statuses: set[Status] = set()
    for result in results:
        if result.status == "ok":
            fields = (key_fields or {}).get(result.name, ())
            lines.append(f"{result.name}: {render_result_content(result.content, fields)}")
            statuses.add("completed")
        elif result.status == "invalid_arguments":
            lines.append(_clarify_line(result, by_id.get(result.call_id), question, zh))
            statuses.add("needs_clarification")
        else:
            lines.append(_failure_line(result, zh))
            statuses.add("degraded")
    if not lines:
        return ("没有可执行的工具调用。" if zh else "No tool call was made."), "degraded"
    text = "\n".join(dict.fromkeys(lines))
    for status in ("needs_clarification", "degraded"):
        if status in statuses:
            return text, status  # type: ignore[return-value]
    return text, "completed"
