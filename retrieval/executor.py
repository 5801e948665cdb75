"""Run a Haystack query pipeline's components directly, in topological order.

`Pipeline.run` deep-copies and type-checks every component input on every call (including each float
of the query vector and every candidate document); measured here that costs 100+ ms per query and
hid a 21× speed-up of our retrievers (2,000 chunks: 150.7 ms via `Pipeline.run` vs 21.0 ms calling the
same components). Query pipelines are small DAGs without loops or variadic sockets, so they are
executed here by walking the graph Haystack built: the `Pipeline` stays the definition (same
components, same connections, same YAML), only the scheduling is ours.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
from haystack import Pipeline

from haygraph.retrieval.errors import RetrievalError


def run_direct(
    pipeline: Pipeline,
    data: dict[str, dict[str, Any]],
    include_outputs_from: set[str] | None = None,
    precomputed: dict[str, dict[str, Any]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every component once in topological order and return the outputs of the leaves.

    Outputs of `include_outputs_from` are returned too. Inputs come from `data` and from connected
    outputs (connections win). A component named in `precomputed` is not run: its given outputs are
    used (e.g. a query embedding computed once and shared by several pipelines).
    """
    graph = pipeline.graph
    if not nx.is_directed_acyclic_graph(graph):
        raise RetrievalError("run_direct only runs pipelines without loops")
    outputs: dict[str, dict[str, Any]] = {}
    for name in nx.topological_sort(graph):
        if precomputed and name in precomputed:
            outputs[name] = precomputed[name]
            continue
        kwargs = dict(data.get(name, {}))
        for sender, _receiver, edge in graph.in_edges(name, data=True):
            kwargs[edge["to_socket"].name] = outputs[sender][edge["from_socket"].name]
        instance = graph.nodes[name]["instance"]
        try:
            outputs[name] = instance.run(**kwargs)
        except RetrievalError:
            raise
        except Exception as exc:
            raise RetrievalError(f"component {name!r} ({type(instance).__name__}) failed: {exc}") from exc
    keep = {n for n in graph.nodes if graph.out_degree(n) == 0} | (include_outputs_from or set())
    return {name: out for name, out in outputs.items() if name in keep}
