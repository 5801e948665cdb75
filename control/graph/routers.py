"""Routers: named functions choosing the next node, returning `Literal` keys."""

from __future__ import annotations

from typing import Literal

from langgraph.runtime import Runtime

from haygraph.control.graph.context import Context
from haygraph.control.graph.state import State


def route_after_analyze(state: State) -> Literal["retrieve", "tool_exec", "generate"]:
    """Map the route: retrieve -> retrieve; tool -> tool_exec; answer / clarify -> generate (no retrieval)."""
    route = state.get("route")
    if route == "retrieve":
        return "retrieve"
    if route == "tool":
        return "tool_exec"
    return "generate"


def route_after_evaluate(state: State, runtime: Runtime[Context]) -> Literal["generate", "expand"]:
    """Expand while the best relevance (or the answerability) is below its threshold and retries remain.

    The loop is bounded by `retry_count < max_retries`, never by the recursion limit. Nothing is
    expanded without a retriever (there is nothing to search again).
    """
    ctx = runtime.context
    quality = state.get("quality")
    poor = quality is None or quality < ctx.relevance_threshold
    answerable = state.get("answerable")
    if ctx.answerability is not None and answerable is not None:
        poor = poor or answerable < ctx.answerability.threshold
    if poor and ctx.retriever is not None and state.get("retry_count", 0) < ctx.max_retries:
        return "expand"
    return "generate"
