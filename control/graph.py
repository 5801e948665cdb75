"""The control-plane graph, wired in exactly one place (`build_graph`).

```
START -> analyze ─retrieve─> retrieve -> evaluate ─good / retries exhausted─> generate -> END
            │                               └─poor, retry_count < max_retries─> expand -> evaluate
            ├─tool──> tool_exec -> generate
            └─answer / clarify──> generate
```
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from haygraph.control import nodes
from haygraph.control.context import Context
from haygraph.control.routers import route_after_analyze, route_after_evaluate
from haygraph.control.state import InputState, State

NodeFn = Callable[[State, Runtime[Context]], dict[str, Any]]


class Node(Protocol):
    """A graph node as LangGraph calls it (the runtime is injected by keyword)."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        """Run the node and return the state update."""
        ...


def instrumented(name: str, fn: NodeFn, *, starts_turn: bool = False) -> Node:
    """Wrap a node so it appends its name to `path` and its duration to `timings_ms`.

    The turn's entry node (`starts_turn`) overwrites both instead, so they start fresh each turn.
    """

    def node(state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        start = time.perf_counter()
        update = fn(state, runtime)
        elapsed = {name: (time.perf_counter() - start) * 1000.0}
        if starts_turn:
            return {**update, "path": Overwrite([name]), "timings_ms": Overwrite(elapsed)}
        return {**update, "path": [name], "timings_ms": elapsed}

    node.__name__ = name
    node.__doc__ = fn.__doc__
    return node


def build_graph(
    *, checkpointer: BaseCheckpointSaver[Any] | None = None
) -> CompiledStateGraph[State, Context, InputState, State]:
    """Build and compile the graph; pass a checkpointer to keep conversation threads.

    Run it with `graph.invoke({"question": ...}, context=Context(...),
    config={"configurable": {"thread_id": ...}})` (the thread id is needed only with a checkpointer).
    """
    builder = StateGraph(State, input_schema=InputState, context_schema=Context)
    builder.add_node("analyze", instrumented("analyze", nodes.analyze, starts_turn=True))
    builder.add_node("retrieve", instrumented("retrieve", nodes.retrieve))
    builder.add_node("evaluate", instrumented("evaluate", nodes.evaluate))
    builder.add_node("expand", instrumented("expand", nodes.expand))
    builder.add_node("tool_exec", instrumented("tool_exec", nodes.tool_exec))
    builder.add_node("generate", instrumented("generate", nodes.generate))

    builder.add_edge(START, "analyze")
    builder.add_conditional_edges("analyze", route_after_analyze)
    builder.add_edge("retrieve", "evaluate")
    builder.add_conditional_edges("evaluate", route_after_evaluate)
    builder.add_edge("expand", "evaluate")
    builder.add_edge("tool_exec", "generate")
    builder.add_edge("generate", END)
    return builder.compile(checkpointer=checkpointer, name="haygraph")
