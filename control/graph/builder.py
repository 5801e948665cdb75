"""The control-plane graph, wired in exactly one place (`build_graph`).

```
START -> analyze ─retrieve─> retrieve -> evaluate ─good / retries exhausted─> generate -> END
            │                               └─poor, retry_count < max_retries─> expand -> evaluate
            ├─tool──> tool_exec -> generate
            └─answer / clarify──> generate
```
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, Literal, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from haygraph.control.graph import nodes
from haygraph.control.graph.checkpointers import allow_state_types
from haygraph.control.graph.context import Context
from haygraph.control.graph.routers import route_after_analyze, route_after_evaluate
from haygraph.control.graph.state import InputState, State

NodeFn = Callable[[State, Runtime[Context]], dict[str, Any]]
ContextFallback = Callable[[Runtime[Context]], Runtime[Context]]


class Node(Protocol):
    """A graph node as LangGraph calls it (the runtime is injected by keyword)."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the node and return the state update."""
        ...


def default_context(context: Context | None = None) -> ContextFallback:
    """Return a function giving a runtime without a context this `context` (default: `Context()`).

    `Context()` is built on first use, not when the graph is built; it is shared by the graph's runs.
    """

    @functools.cache
    def fallback() -> Context:
        return context if context is not None else Context()

    def apply(runtime: Runtime[Context]) -> Runtime[Context]:
        if runtime.context is not None:
            return runtime
        return runtime.override(context=fallback())

    return apply


def instrumented(
    name: str, fn: NodeFn, *, starts_turn: bool = False, fallback: ContextFallback | None = None
) -> Node:
    """Wrap a node so it appends its name to `path` and its duration to `timings_ms`.

    The turn's entry node (`starts_turn`) overwrites both instead, so they start fresh each turn.
    `fallback` supplies the context of a run invoked without one (see `default_context`).
    """
    with_context = fallback if fallback is not None else default_context()

    def node(state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        start = time.perf_counter()
        update = fn(state, with_context(runtime))
        elapsed = {name: (time.perf_counter() - start) * 1000.0}
        if starts_turn:
            return {**update, "path": Overwrite([name]), "timings_ms": Overwrite(elapsed)}
        return {**update, "path": [name], "timings_ms": elapsed}

    node.__name__ = name
    node.__doc__ = fn.__doc__
    return node


def build_graph(
    *, checkpointer: BaseCheckpointSaver[Any] | None = None, context: Context | None = None
) -> CompiledStateGraph[State, Context, InputState, State]:
    """Build and compile the graph; pass a checkpointer to keep conversation threads.

    Run it with `graph.invoke({"question": ...}, context=Context(...),
    config={"configurable": {"thread_id": ...}})` (the thread id is needed only with a checkpointer).
    Without `context=` a run uses `context` given here, else `Context()` (offline, no retriever).
    The checkpointer's serializer is given the state's own types (`allow_state_types`), so loading
    a thread neither warns about nor blocks `Evidence`, `ToolCall` and `ToolResult`.
    """
    fallback = default_context(context)

    def route_evaluated(state: State, runtime: Runtime[Context]) -> Literal["generate", "expand"]:
        return route_after_evaluate(state, fallback(runtime))

    route_evaluated.__name__ = route_after_evaluate.__name__
    route_evaluated.__doc__ = route_after_evaluate.__doc__

    builder = StateGraph(State, input_schema=InputState, context_schema=Context)
    for name, fn in (
        ("analyze", nodes.analyze),
        ("retrieve", nodes.retrieve),
        ("evaluate", nodes.evaluate),
        ("expand", nodes.expand),
        ("tool_exec", nodes.tool_exec),
        ("generate", nodes.generate),
    ):
        builder.add_node(name, instrumented(name, fn, starts_turn=name == "analyze", fallback=fallback))

    builder.add_edge(START, "analyze")
    builder.add_conditional_edges("analyze", route_after_analyze)
    builder.add_edge("retrieve", "evaluate")
    builder.add_conditional_edges("evaluate", route_evaluated, ["generate", "expand"])
    builder.add_edge("expand", "evaluate")
    builder.add_edge("tool_exec", "generate")
    builder.add_edge("generate", END)
    return builder.compile(checkpointer=allow_state_types(checkpointer), name="haygraph")
