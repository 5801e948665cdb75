"""The control-plane graph, wired in exactly one place (`build_graph`).

```
START -> analyze ─retrieve─> retrieve -> evaluate ─good / retries exhausted─> generate -> END
            │                               └─poor, retry_count < max_retries─> expand -> evaluate
            ├─tool──> tool_exec -> generate
            └─answer / clarify──> generate
```
"""

from __future__ import annotations

import dataclasses
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
from haygraph.control.graph.tracing import node_tracer

NodeFn = Callable[[State, Runtime[Context]], dict[str, Any]]
ContextFallback = Callable[[Runtime[Context]], Runtime[Context]]


class Node(Protocol):
    """A graph node as LangGraph calls it (the runtime is injected by keyword)."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the node and return the state update."""
        ...


BOUND_FIELDS = ("retriever", "model", "tool_executor", "tool_registry", "tool_allow_list", "token_counter")
"""What a graph built with `context=` is bound to; a run context leaving one of these None inherits it."""


def default_context(context: Context | None = None) -> ContextFallback:
    """Return the function that gives each run of a graph its context.

    - A run without a context uses `context` (default: `Context()`, built on first use).
    - A run with a context uses it; when the graph has a `context`, every `BOUND_FIELDS` entry the
      run's context leaves None is taken from the graph's. So a graph bound to a retriever and tools
      (as `haygraph.adapters.studio.make_graph` builds it for LangGraph Studio, whose server always
      passes a `Context` built from the run's settings) keeps them when a run changes only `top_k`.
    """

    @functools.cache
    def fallback() -> Context:
        return context if context is not None else Context()

    last: list[Context | None] = [None, None]  # (run context, its merged copy) of the latest run

    def apply(runtime: Runtime[Context]) -> Runtime[Context]:
        given = runtime.context
        if given is None:
            return runtime.override(context=fallback())
        if context is None or given is context:
            return runtime
        if last[0] is given and last[1] is not None:
            return runtime.override(context=last[1])
        inherited = {
            name: getattr(context, name)
            for name in BOUND_FIELDS
            if getattr(given, name) is None and getattr(context, name) is not None
        }
        if not inherited:
            return runtime
        merged = dataclasses.replace(given, **inherited)
        last[:] = [given, merged]
        return runtime.override(context=merged)

    return apply


def instrumented(
    name: str, fn: NodeFn, *, starts_turn: bool = False, fallback: ContextFallback | None = None
) -> Node:
    """Wrap a node so it appends its name to `path` and its duration to `timings_ms`.

    With a node tracer set (`haygraph.control.graph.tracing`), the node runs inside its span.

    The turn's entry node (`starts_turn`) overwrites both instead, so they start fresh each turn.
    `fallback` supplies the context of a run invoked without one (see `default_context`).
    """
    with_context = fallback if fallback is not None else default_context()

    def node(state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        start = time.perf_counter()
        tracer = node_tracer()
        if tracer is None:
            update = fn(state, with_context(runtime))
        else:
            with tracer.node_span(name) as record:
                update = fn(state, with_context(runtime))
                record(update)
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
    `context` binds the graph (see `default_context`): a run without a context uses it, a run whose
    context leaves the retriever, model or tools None inherits them; without it, `Context()`.
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
