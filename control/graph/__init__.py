"""The LangGraph graph: its state, per-run context, nodes, routers, prompt of a turn and checkpointers.

- `state` — `InputState` (what a caller sends) and `State` (what the nodes share), with reducers;
- `context` — `Context`, the per-run settings (retriever, model, tools, budget, filters);
- `nodes` / `routers` — small node functions and named routers;
- `turn_prompt` — the budgeted generation prompt of a turn (`build_turn_prompt`);
- `deadlines` — bounded, retried calls to the retriever and the chat model (per-node deadlines);
- `consent` — which side-effect calls need confirmation (the `interrupt()` payload) and the answer;
- `checkpointers` — in-memory and SQLite thread persistence with the state's types registered;
- `builder` — `build_graph`, the one place the graph is wired.

The top of the control plane below `haygraph.control.api`: it may import every other part of
`haygraph.control`; only `api` and the package `__init__` import it.
"""

from haygraph.control.graph.builder import build_graph
from haygraph.control.graph.context import Context
from haygraph.control.graph.state import InputState, State

__all__ = ["Context", "InputState", "State", "build_graph"]
