"""Reduce long tool results to their contract-declared key fields before they enter the prompt.

A key-field spec is one of:

- `"status"` or `"carrier.name"` — the value at a (dotted) path;
- `"events[-1]"` / `"events[0]"` — one element of a list (e.g. the latest tracking event when the
  list is chronological);
- `"count(events)"` — the length of a list, dict or string.

The reduced result is a dict keyed by the specs themselves, so the model reads e.g.
`{"order_id": "...", "status": "in_transit", "events[-1]": {...}, "eta": "...",
"count(events)": 50}`. Fields missing from a result are left out (and logged at debug level).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from haygraph.control.errors import ReductionError
from haygraph.control.prompts import TOOL_RESULT_HEADER
from haygraph.control.tools.types import ToolResult
from haygraph.control.window.tokens import TokenCounter, to_compact_json, truncate_to_tokens

logger = logging.getLogger(__name__)

_SPEC = re.compile(r"^(?:count\((?P<count>[\w.]+)\)|(?P<path>[\w.]+)(?:\[(?P<index>-?[0-9]+)\])?)$")
_MISSING = object()


def _plain(content: Any) -> Any:
    if isinstance(content, BaseModel):
        return content.model_dump(mode="json")
    return content


def _lookup(content: Any, path: str) -> Any:
    value = content
    for key in path.split("."):
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        if not isinstance(value, Mapping) or key not in value:
            return _MISSING
        value = value[key]
    return _plain(value)


def reduce_to_key_fields(content: Any, key_fields: Sequence[str]) -> dict[str, Any]:
    """Return the key fields of a tool result's content (see the module docstring for specs).

    Pydantic models are dumped first; a list is read as `{"items": list}`, so `count(items)` and
    `items[-1]` apply to it. Content that is neither a mapping nor a list has no fields:
    `ReductionError` is raised, as for a malformed spec.
    """
    content = _plain(content)
    if isinstance(content, list):
        content = {"items": content}
    if not isinstance(content, Mapping):
        raise ReductionError(f"cannot take key fields of a {type(content).__name__} result")
    reduced: dict[str, Any] = {}
    for spec in key_fields:
        match = _SPEC.match(spec.strip())
        if match is None:
            raise ReductionError(
                f"bad key field spec {spec!r}; use 'name', 'a.b', 'name[-1]' or 'count(name)'"
            )
        if match["count"]:
            value = _lookup(content, match["count"])
            if isinstance(value, Sequence | Mapping):
                reduced[spec] = len(value)
                continue
        else:
            value = _lookup(content, match["path"])
            if match["index"] is not None and value is not _MISSING:
                index = int(match["index"])
                ok = (
                    isinstance(value, Sequence)
                    and not isinstance(value, str)
                    and -len(value) <= index < len(value)
                )
                value = _plain(value[index]) if ok else _MISSING
            if value is not _MISSING:
                reduced[spec] = value
                continue
        logger.debug("key field %r not found in tool result", spec)
    return reduced


@dataclass(frozen=True)
class PreparedToolResult:
    """A tool result rendered for the prompt, with its cost and (if small enough) its full content."""

    call_id: str
    name: str
    status: str
    text: str
    tokens: int
    reduced: bool
    #: The full, unreduced content for inspection, or None when it exceeded the configured cap.
    full_content: Any = None


def render_tool_result(result: ToolResult, content: Any) -> str:
    """Render one result as a header line plus compact JSON content (or the error message)."""
    header = TOOL_RESULT_HEADER.format(name=result.name, call_id=result.call_id, status=result.status)
    if result.status != "ok":
        return f"{header}\nerror: {result.error or 'no details'}"
    return f"{header}\n{content if isinstance(content, str) else to_compact_json(_plain(content))}"


def prepare_tool_results(
    results: Sequence[ToolResult],
    *,
    counter: TokenCounter,
    allowance: int,
    key_fields: Mapping[str, Sequence[str]] | None = None,
    full_content_cap_tokens: int = 2000,
) -> list[PreparedToolResult]:
    """Render results for the prompt, reducing them to key fields when they exceed `allowance`.

    If the rendered results together exceed `allowance`, each result whose tool declares key
    fields (`key_fields[tool name]`) is reduced to them; a text result without declared fields is
    cut at a sentence boundary to the allowance. Results are returned in input order with their
    token cost; the budget allocator then keeps the prefix that fits. `full_content` keeps the
    original content for inspection only when it is at most `full_content_cap_tokens` tokens.
    """
    key_fields = key_fields or {}
    rendered = [render_tool_result(result, result.content) for result in results]
    costs = [counter.count(text) for text in rendered]
    over = sum(costs) > allowance
    prepared = []
    for result, text, cost in zip(results, rendered, costs, strict=True):
        reduced = False
        fields = key_fields.get(result.name)
        if over and result.status == "ok" and result.content is not None:
            if fields:
                text = render_tool_result(result, reduce_to_key_fields(result.content, fields))
                reduced = True
            elif isinstance(result.content, str) and cost > allowance:
                text = truncate_to_tokens(text, counter, allowance)
                reduced = True
            cost = counter.count(text) if reduced else cost
        full_tokens = counter.count_json(_plain(result.content)) if result.content is not None else 0
        prepared.append(
            PreparedToolResult(
                call_id=result.call_id,
                name=result.name,
                status=result.status,
                text=text,
                tokens=cost,
                reduced=reduced,
                full_content=result.content if full_tokens <= full_content_cap_tokens else None,
            )
        )
    return prepared
