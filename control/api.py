"""Convenience API: run one turn and get a stable, JSON-ready result dict.

Result object of `run_turn` / `Agent.ask` / `ask` (the `--json` output of the CLI):

```
{
  "status":       "completed" | "insufficient_evidence" | "needs_clarification" | "degraded" | "rejected",
  "route":        "retrieve" | "tool" | "answer" | "clarify",
  "answer":       str | None,       # None only when a model answer was rejected (not shown)
  "evidence_ids": [str],            # ids cited by the answer, each one in "evidence"
  "evidence":     [{"id": str, "text": str, "score": float, "source": str}],
                                    # everything retrieved this turn, best first
  "path":         [str],            # nodes visited this turn, e.g. ["analyze", "generate"]
  "query":        str,              # the rewritten retrieval query ("" when nothing was retrieved)
  "timings_ms":   {node: float, "total": float},
}
```

Statuses: `completed` — answered (from evidence, a tool result, or a greeting);
`insufficient_evidence` — nothing usable was found, nothing was invented; `needs_clarification` —
the answer is a question back to the user (missing order number, empty or unusable input);
`degraded` — a component failed (retriever, tool, model) and a fallback answered or apologised;
`rejected` — the model cited evidence that was not retrieved, so its answer is withheld.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from haygraph.control.context import Context
from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.graph import build_graph
from haygraph.control.threads import memory_checkpointer
from haygraph.control.tool_types import ToolExecutor

logger = logging.getLogger(__name__)

RESULT_KEYS = ("status", "route", "answer", "evidence_ids", "evidence", "path", "query", "timings_ms")


def result_from_state(state: dict[str, Any], total_ms: float) -> dict[str, Any]:
    """Project a final graph state onto the stable result object (see the module docstring)."""
    evidence: list[Evidence] = list(state.get("evidence") or [])
    return {
        "status": state.get("status", "degraded"),
        "route": state.get("route", "clarify"),
        "answer": state.get("answer"),
        "evidence_ids": list(state.get("evidence_ids") or []),
        "evidence": [{"id": e.id, "text": e.text, "score": e.score, "source": e.source} for e in evidence],
        "path": list(state.get("path") or []),
        "query": state.get("query") or "",
        "timings_ms": {**dict(state.get("timings_ms") or {}), "total": total_ms},
    }


def run_turn(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    question: str,
    *,
    context: Context,
    thread_id: str = "default",
) -> dict[str, Any]:
    """Run one conversation turn on `thread_id` and return the stable result object.

    Never raises for a failing run: an unexpected error is logged and reported as status
    `degraded` with a "try again later" answer (no stack trace reaches the caller). The thread is
    checkpointed once, when the turn ends (`durability="exit"`): a turn interrupted half-way leaves
    the previous turn's state intact, and a turn costs one checkpoint write instead of one per node.
    """
    start = time.perf_counter()
    persisted = isinstance(getattr(graph, "checkpointer", None), BaseCheckpointSaver)
    try:
        state = graph.invoke(
            {"question": question},
            context=context,
            config={"configurable": {"thread_id": thread_id}},
            durability="exit" if persisted else None,
        )
    except Exception:
        logger.exception("graph run failed on thread %s", thread_id)
        state = {"status": "degraded", "answer": "Something went wrong. Please try again later.", "path": []}
    return result_from_state(dict(state), (time.perf_counter() - start) * 1000.0)


class Agent:
    """A graph, its settings and a checkpointer, ready to answer questions on conversation threads."""

    def __init__(
        self,
        *,
        retriever: Retriever | None = None,
        model: BaseChatModel | str | None = None,
        tool_executor: ToolExecutor | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        **settings: Any,
    ) -> None:
        """Build the graph; `settings` are further `Context` fields (relevance_threshold, top_k, ...)."""
        self.context = Context(retriever=retriever, model=model, tool_executor=tool_executor, **settings)
        self.checkpointer = checkpointer if checkpointer is not None else memory_checkpointer()
        self.graph = build_graph(checkpointer=self.checkpointer)

    def ask(
        self, question: str, *, thread_id: str = "default", filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Answer one turn on `thread_id`; see the module docstring for the result object.

        `filters` (Haystack filter syntax) narrow this turn's retrieval: they are combined with AND with
        the agent's own `Context.filters`, so they can never widen what the agent may read.
        """
        context = self.context
        if filters:
            own = context.filters
            combined = filters if not own else {"operator": "AND", "conditions": [own, filters]}
            # the same token counter keeps its memoized counts across turns
            context = dataclasses.replace(context, filters=combined, token_counter=context.counter)
        return run_turn(self.graph, question, context=context, thread_id=thread_id)


def ask(question: str, **agent_kwargs: Any) -> dict[str, Any]:
    """One-shot question on a fresh in-memory agent (`agent_kwargs` as for `Agent`)."""
    return Agent(**agent_kwargs).ask(question)
