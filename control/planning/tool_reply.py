"""The reply of a tool turn: each result rendered for the user, and the turn's status.

Pure functions, the same in both modes (no model writes a tool answer, so nothing in a tool result
can be embellished): an `ok` result is shown through its contract's key fields; `invalid_arguments`
becomes a question back to the user — the contract's own clarification when the rejected argument
is the one its offline trigger's entity fills (e.g. the example `query_order` asks for the 12-digit
order number) — while the validation message stays in `tool_results` for the model or a reviewer;
every other failure gets a clear message and status `degraded`. The messages are in
`haygraph.control.texts`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from haygraph.control.outcomes import Status
from haygraph.control.texts import (
    NO_TOOL_CALL,
    TOOL_BAD_ARGUMENTS,
    TOOL_BUDGET_EXCEEDED,
    TOOL_DECLINED,
    TOOL_FAILED,
    TOOL_NOT_ALLOWED,
    TOOL_UNKNOWN,
)
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.types import ToolCall, ToolResult

MAX_RESULT_CHARS = 800
"""Longest rendering of one ok result in the reply."""
_MAX_ITEMS = 3
_MAX_TEXT = 240


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
    "not_allowed": TOOL_NOT_ALLOWED,
    "unknown_tool": TOOL_UNKNOWN,
    "budget_exceeded": TOOL_BUDGET_EXCEEDED,
}


def _failure_line(result: ToolResult, question: str) -> str:
    if result.status in _FAILURES:
        return _FAILURES[result.status].for_question(question, name=result.name)
    details = result.error or "no details"
    return TOOL_FAILED.for_question(question, name=result.name, status=result.status, details=details)


def _names_argument(error: str, argument: str) -> bool:
    """Whether a validation message (`format_validation_error`) names `argument` as a failing field."""
    return re.search(rf"(?:^|[:;]\s*){re.escape(argument)}:", error) is not None


def _clarify_line(
    result: ToolResult, call: ToolCall | None, question: str, registry: ToolRegistry | None
) -> str:
    contract = registry.get(result.name) if registry is not None else None
    trigger = contract.offline_trigger if contract is not None else None
    entity = trigger.entity if trigger is not None else None
    if entity is not None and _names_argument(result.error or "", entity.argument):
        wrong = call.args.get(entity.argument) if call is not None else None
        return entity.clarification(question, str(wrong) if wrong is not None else None)
    details = result.error or "invalid arguments"
    return TOOL_BAD_ARGUMENTS.for_question(question, name=result.name, details=details)


def summarize_tool_results(
    results: Sequence[ToolResult],
    question: str,
    *,
    calls: Sequence[ToolCall] = (),
    registry: ToolRegistry | None = None,
) -> tuple[str, Status]:
    """Turn a tool turn's results into the reply and the turn's status.

    ok -> `name: key fields` (completed); invalid_arguments -> a question back (needs_clarification,
    which wins over the others); declined (not confirmed by the user) -> "nothing was done"
    (completed); not_allowed / unknown_tool / budget_exceeded / timeout / error -> a
    clear message (degraded). `calls` supply the rejected argument values; `registry` the contracts'
    key fields and clarifications. No results at all -> degraded.
    """
    by_id = {c.id: c for c in calls}
    lines: list[str] = []
    statuses: set[Status] = set()
    for result in results:
        if result.status == "ok":
            contract = registry.get(result.name) if registry is not None else None
            fields = contract.key_fields if contract is not None else ()
            lines.append(f"{result.name}: {render_result_content(result.content, fields)}")
            statuses.add("completed")
        elif result.status == "declined":
            lines.append(TOOL_DECLINED.for_question(question, name=result.name))
            statuses.add("completed")
        elif result.status == "invalid_arguments":
            lines.append(_clarify_line(result, by_id.get(result.call_id), question, registry))
            statuses.add("needs_clarification")
        else:
            lines.append(_failure_line(result, question))
            statuses.add("degraded")
    if not lines:
        return NO_TOOL_CALL.for_question(question), "degraded"
    text = "\n".join(dict.fromkeys(lines))
    for status in ("needs_clarification", "degraded"):
        if status in statuses:
            return text, status  # type: ignore[return-value]
    return text, "completed"
