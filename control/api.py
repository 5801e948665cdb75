"""Convenience API: run one turn and get a stable, JSON-ready result dict.

Result object of `run_turn` / `Agent.ask` / `ask` (the `--json` output of the CLI):

```
{
  "status":       "completed" | "insufficient_evidence" | "needs_clarification" | "degraded" | "rejected",
  "route":        "retrieve" | "tool" | "answer" | "clarify",
  "answer":       str | None,       # None only when a model answer was rejected (not shown)
  "evidence_ids": [str],            # ids cited by the answer, each one in "evidence"
  "evidence":     [{"id": str, "text": str, "score": float, "source": str,
                    "page": int | None, "char_start": int | None, "char_end": int | None}],
                                    # everything retrieved this turn, best first; page and the
                                    # offsets into the source text locate the citation
  "path":         [str],            # nodes visited this turn, e.g. ["analyze", "generate"]
  "query":        str,              # the rewritten retrieval query ("" when nothing was retrieved)
  "timings_ms":   {node: float, "total": float},
}
```

Statuses: `completed` — answered (from evidence, a tool result, or a greeting);
`insufficient_evidence` — nothing usable was found, nothing was invented; `needs_clarification` —
the answer is a question back to the user (a value a tool needs is missing, unusable input);
`degraded` — a component failed (retriever, tool, model) and a fallback answered or apologised;
`rejected` — the model cited evidence that was not retrieved, so its answer is withheld.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph

from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.graph.builder import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.texts import RUN_FAILED
from haygraph.control.tools.types import ToolExecutor

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
        "evidence": [
            {
                "id": e.id,
                "text": e.text,
                "score": e.score,
                "source": e.source,
                "page": e.page,
                "char_start": e.char_start,
                "char_end": e.char_end,
            }
            for e in evidence
        ],
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
    filters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run one conversation turn on `thread_id` and return the stable result object.

    `filters` (Haystack filter syntax) apply to every retrieval of this turn only, on top of
    `context.filters` (`Context.with_filters`: both must match). Never raises for a failing run: an
    unexpected error is logged and reported as status `degraded` with a "try again later" answer
    in the question's language (no stack trace reaches the caller); invalid `filters` raise
    `ConfigError` before the run starts. The thread is
    checkpointed once, when the turn ends (`durability="exit"`): a turn interrupted half-way leaves
    the previous turn's state intact, and a turn costs one checkpoint write instead of one per node.
    """
    start = time.perf_counter()
    turn_context = context.with_filters(filters)
    persisted = isinstance(getattr(graph, "checkpointer", None), BaseCheckpointSaver)
    try:
        state = graph.invoke(
            {"question": question},
            context=turn_context,
            config={"configurable": {"thread_id": thread_id}},
            durability="exit" if persisted else None,
        )
    except Exception:
        logger.exception("graph run failed on thread %s", thread_id)
        state = {"status": "degraded", "answer": RUN_FAILED.for_question(str(question)), "path": []}
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
        """Build the graph; `settings` are further `Context` fields (relevance_threshold, filters, ...)."""
        self.context = Context(retriever=retriever, model=model, tool_executor=tool_executor, **settings)
        self.graph = build_graph(
            checkpointer=checkpointer if checkpointer is not None else memory_checkpointer()
        )
        self.checkpointer: BaseCheckpointSaver[Any] = self.graph.checkpointer  # type: ignore[assignment]

    def ask(
        self, question: str, *, thread_id: str = "default", filters: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Answer one turn on `thread_id`; see the module docstring for the result object.

        `filters` are Haystack-style metadata filters for this call only, e.g.
        `{"field": "meta.source_id", "operator": "==", "value": "leave-policy.md"}`: every retrieval
        of the turn (first search and expansion) applies them together with the agent's own
        `filters` setting (both must match), so a per-call filter narrows what the session may see.
        """
        return run_turn(self.graph, question, context=self.context, thread_id=thread_id, filters=filters)


def ask(question: str, **agent_kwargs: Any) -> dict[str, Any]:
    """One-shot question on a fresh in-memory agent (`agent_kwargs` as for `Agent`)."""
    return Agent(**agent_kwargs).ask(question)
