"""Run a Haystack query pipeline's components directly, in topological order, with Haystack's tracing spans.

`Pipeline.run` deep-copies and type-checks every component input on every call (including each float
of the query vector and every candidate document); measured here that costs 100+ ms per query and
hid a 21× speed-up of our retrievers (2,000 chunks: 150.7 ms via `Pipeline.run` vs 21.0 ms calling the
same components). Query pipelines are small DAGs without loops or variadic sockets, so they are
executed here by walking the graph Haystack built: the `Pipeline` stays the definition (same
components, same connections, same YAML), only the scheduling is ours.

Tracing is not lost: like `Pipeline.run`, `run_direct` opens a ``haystack.pipeline.run`` span and one
``haystack.component.run`` span per component (same operation names and tags, content tags for
inputs and outputs) through `haystack.tracing.tracer`, so a tracer enabled with
`haystack.tracing.enable_tracing` (OpenTelemetry, Langfuse, ...) sees every stage. Unlike
`Pipeline.run`, inputs are not deep-copied before a tracer sees them (that copy is the cost avoided).
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from haystack import Pipeline, tracing
from haystack.core.serialization import generate_qualified_class_name

from haygraph.retrieval.errors import RetrievalError

# Tag names of haystack.core.pipeline.base (private constants there).
COMPONENT_INPUT = "haystack.component.input"
COMPONENT_OUTPUT = "haystack.component.output"
COMPONENT_VISITS = "haystack.component.visits"


def run_direct(
    pipeline: Pipeline,
    data: dict[str, dict[str, Any]],
    include_outputs_from: set[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every component once in topological order and return the outputs of the leaves.

    Outputs of `include_outputs_from` are returned too. Inputs come from `data` (per component name,
    e.g. from `haygraph.retrieval.pipelines.query_inputs`) and from connected outputs (connections win).
    Component failures are raised as `RetrievalError` naming the component.
    """
    graph = pipeline.graph
    if not nx.is_directed_acyclic_graph(graph):
        raise RetrievalError("run_direct only runs pipelines without loops")
    outputs: dict[str, dict[str, Any]] = {}
    keep = {n for n in graph.nodes if graph.out_degree(n) == 0} | (include_outputs_from or set())
    with tracing.tracer.trace(
        "haystack.pipeline.run",
        tags={
            "haystack.pipeline.input_data": data,
            "haystack.pipeline.metadata": pipeline.metadata,
            "haystack.pipeline.max_runs_per_component": pipeline._max_runs_per_component,
            "haystack.pipeline.execution_mode": "sync",
        },
    ) as pipeline_span:
        for name in nx.topological_sort(graph):
            kwargs = dict(data.get(name, {}))
            for sender, _receiver, edge in graph.in_edges(name, data=True):
                kwargs[edge["to_socket"].name] = outputs[sender][edge["from_socket"].name]
            outputs[name] = _run_component(name, graph.nodes[name]["instance"], kwargs, pipeline_span)
        result = {name: out for name, out in outputs.items() if name in keep}
        pipeline_span.set_content_tag("haystack.pipeline.output_data", result)
    return result


def _run_component(name: str, instance: Any, kwargs: dict[str, Any], parent: tracing.Span) -> dict[str, Any]:
    """Run one component inside a ``haystack.component.run`` span tagged as `Pipeline.run` tags it."""
    with tracing.tracer.trace(
        "haystack.component.run", tags=_component_tags(name, instance, kwargs), parent_span=parent
    ) as span:
        span.set_content_tag(COMPONENT_INPUT, kwargs)
        try:
            output: dict[str, Any] = instance.run(**kwargs)
        except RetrievalError:
            raise
        except Exception as exc:
            raise RetrievalError(f"component {name!r} ({type(instance).__name__}) failed: {exc}") from exc
        span.set_tag(COMPONENT_VISITS, 1)
        span.set_content_tag(COMPONENT_OUTPUT, output)
    return output


def _component_tags(name: str, instance: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The tags of Haystack's component span (`PipelineBase._create_component_span`)."""
    if not tracing.is_tracing_enabled():
        return {}  # the null tracer ignores tags: skip building them on the hot path
    return {
        "haystack.component.name": name,
        "haystack.component.type": type(instance).__name__,
        "haystack.component.fully_qualified_type": generate_qualified_class_name(type(instance)),
        "haystack.component.input_types": {k: type(v).__name__ for k, v in kwargs.items()},
        "haystack.component.input_spec": _socket_spec(instance.__haystack_input__._sockets_dict, "senders"),
        "haystack.component.output_spec": _socket_spec(
            instance.__haystack_output__._sockets_dict, "receivers"
        ),
    }


def _socket_spec(sockets: dict[str, Any], peers: str) -> dict[str, dict[str, Any]]:
    return {
        key: {
            "type": value.type.__name__ if type(value.type) is type else str(value.type),
            peers: getattr(value, peers),
        }
        for key, value in sockets.items()
    }
