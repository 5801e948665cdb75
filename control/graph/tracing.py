"""Spans around the graph's nodes, for a tracer the adapters install (`haygraph.adapters.tracing`).

The control plane imports no tracing library: it calls the `NodeTracer` set by `set_node_tracer`
around each node (`builder.instrumented`), and nothing at all while none is set (the default). The
adapters' OpenTelemetry tracer opens a span per node, current while the node runs, so the retriever's
pipeline components and the reader called inside the node are its children.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

NodeRecord = Callable[[dict[str, Any]], None]
"""Called with a node's state update when the node returns (to note what it decided)."""


class NodeTracer(Protocol):
    """Opens a span around one node's run."""

    def node_span(self, node: str) -> AbstractContextManager[NodeRecord]:
        """A context entered around the node `node`; it yields the function that records its update."""
        ...


_tracer: NodeTracer | None = None


def set_node_tracer(tracer: NodeTracer | None) -> NodeTracer | None:
    """Trace every graph node of this process with `tracer` from now on (None: stop); the previous one."""
    global _tracer
    previous, _tracer = _tracer, tracer
    return previous


def node_tracer() -> NodeTracer | None:
    """The node tracer in force (None: nodes are not traced)."""
    return _tracer
