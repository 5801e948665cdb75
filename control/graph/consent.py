"""Consent for side effects: which calls of a turn need the user's confirmation, and the answer to it.

A tool whose contract says `side_effects=True` (e.g. the example `create_ticket`,
`update_shipping_address`) never runs on the strength of a model's or a document's say-so alone:
`tool_exec` pauses the graph with LangGraph's `interrupt()` and the payload built here
(`confirmation_request`), unless the caller pre-approved the tool (`Context.preapproved_tools`). The
run is resumed with `Command(resume=True | False)` (`haygraph.control.Agent.resume`); a denied
call gets a `declined` result and nothing is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from haygraph.control.errors import ConfigError
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.types import ToolCall

CONFIRMATION_KIND = "confirm_tool_calls"
"""The `kind` of the interrupt payload `tool_exec` raises."""


def calls_needing_consent(
    calls: Sequence[ToolCall],
    registry: ToolRegistry | None,
    *,
    allow_list: Sequence[str] | None,
    preapproved: Sequence[str],
) -> list[dict[str, Any]]:
    """Return the pending-call records (`call_id`, `tool`, validated `args`) that need confirmation.

    A call needs it when its contract has side effects, the session allows the tool (`allow_list`
    None = no list to check), the caller did not pre-approve it and its arguments validate (a call
    the executor would refuse anyway is not shown to the user). `args` are the validated arguments,
    defaults filled in, as JSON.
    """
    if registry is None:
        return []
    pending = []
    for call in calls:
        contract = registry.get(call.name)
        if contract is None or not contract.side_effects or call.name in preapproved:
            continue
        if allow_list is not None and call.name not in allow_list:
            continue
        try:
            args = contract.validate_args(call.args)
        except ValidationError:
            continue
        pending.append({"call_id": call.id, "tool": call.name, "args": args.model_dump(mode="json")})
    return pending


def confirmation_request(pending: list[dict[str, Any]]) -> dict[str, Any]:
    """The interrupt payload: `{"kind": "confirm_tool_calls", "pending": [...]}`."""
    return {"kind": CONFIRMATION_KIND, "pending": pending}


def approval(value: Any) -> bool:
    """Read the resume value of a confirmation as approve (True) or deny (False).

    Accepted: `True`/`False`, "yes"/"no" (y/n, approve/deny), or `{"approve": bool}`. Anything else
    raises `ConfigError` (nothing runs).
    """
    if isinstance(value, dict) and set(value) == {"approve"}:
        value = value["approve"]
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in {"y", "yes", "approve", "approved", "true"}:
            return True
        if word in {"n", "no", "deny", "denied", "false"}:
            return False
    raise ConfigError(f"a confirmation must be approve (true / yes) or deny (false / no), but got {value!r}")


def describe_calls(pending: Sequence[dict[str, Any]]) -> str:
    """Render pending calls for the user: `create_ticket(summary='…', priority='normal')`, `; `-joined."""
    return "; ".join(
        f"{p['tool']}({', '.join(f'{k}={v!r}' for k, v in p['args'].items() if v is not None)})"
        for p in pending
    )
