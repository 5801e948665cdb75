"""Convenience API: run one turn and get a stable, JSON-ready result dict.

Result object of `run_turn` / `Agent.ask` / `ask` (the `--json` output of the CLI):

```
{
  "status":       "completed" | "insufficient_evidence" | "needs_clarification" | "needs_confirmation"
                  | "degraded" | "rejected",
  "route":        "retrieve" | "tool" | "answer" | "clarify",
  "answer":       str | None,       # None only when a model answer was rejected (not shown)
  "evidence_ids": [str],            # ids cited by the answer, each one in "evidence"
  "evidence":     [{"id": str, "text": str, "score": float, "source": str,
                    "page": int | None, "page_breaks": [[int, int]],
                    "char_start": int | None, "char_end": int | None}],
                                    # everything retrieved this turn, best first; page (where the
                                    # chunk starts), page_breaks ([offset in text, page] where a
                                    # later page begins) and the offsets into the source text
                                    # locate the citation
  "path":         [str],            # nodes visited this turn, e.g. ["analyze", "generate"]
  "query":        str,              # the rewritten retrieval query ("" when nothing was retrieved)
  "timings_ms":   {node: float, "total": float},
  "notes":        [str],            # why the turn degraded or what was withheld, e.g.
                                    # "model unavailable (RateLimitError: ...); answered extractively",
                                    # "retrieval failed: TimeoutError: ...", "model answer rejected: ...",
                                    # a model's malformed output with the reason; [] when none
  "pending":      [{"call_id": str, "tool": str, "args": {...}}],
                                    # side-effect calls waiting for confirmation (needs_confirmation only)
  "decision":     {"answerable": bool, "probability": float, "threshold": float,
                   "signals": {name: float}, "rule": str | None} | None,
                                    # the turn's last answer-or-refuse decision (None: none was made,
                                    # e.g. chit-chat or a tool turn); see answerability.Decision
  "answer_spans": [{"evidence_id": str, "start": int, "end": int, "text": str, "margin": float,
                    "page": int | None}],
                                    # the reader's answer spans in the cited evidence, best first:
                                    # offsets into that evidence item's text (what the page highlights)
                                    # and the page that holds the span (not just the chunk's first)
}
```

Statuses: `completed` — answered (from evidence, a tool result, or a greeting);
`insufficient_evidence` — nothing usable was found, nothing was invented; `needs_clarification` —
the answer is a question back to the user (a value a tool needs is missing, unusable input);
`needs_confirmation` — the turn is paused before a tool with side effects (`create_ticket`,
`update_shipping_address`...) runs; `pending` lists the calls with their validated arguments and
nothing has been done yet. Resume with `Agent.resume(thread_id, approve=True | False)` (CLI:
`haygraph ask --thread T --confirm yes|no`); a denied call gets a `declined` tool result.
`degraded` — a component failed (retriever down or past `retrieve_timeout_s`, tool, model error,
rate limit or past `model_timeout_s`) and a fallback answered or apologised; `notes` says why;
`rejected` — the model cited evidence that was not retrieved, or its answer relayed instruction-like
text from a document ("SYSTEM: ...", "ignore previous instructions"), so its answer is withheld
(`answer` None, the reason in `notes`).

Evidence is data: the extractive answer never quotes instruction-like spans of a chunk
(`haygraph.control.planning.injection`), and a side-effect tool never runs without the caller's consent.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.graph.builder import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.consent import CONFIRMATION_KIND, approval, describe_calls
from haygraph.control.graph.context import Context
from haygraph.control.texts import CONFIRM_TOOL_CALLS, RUN_FAILED
from haygraph.control.tools.types import ToolExecutor

logger = logging.getLogger(__name__)

RESULT_KEYS = (
    "status",
    "route",
    "answer",
    "evidence_ids",
    "evidence",
    "path",
    "query",
    "timings_ms",
    "notes",
    "pending",
    "decision",
    "answer_spans",
)


def pending_confirmation(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The side-effect calls a paused run waits on (its `__interrupt__`), or [] when it is not paused."""
    pending: list[dict[str, Any]] = []
    for item in state.get("__interrupt__") or ():
        value = getattr(item, "value", None)
        if isinstance(value, dict) and value.get("kind") == CONFIRMATION_KIND:
            pending.extend(value.get("pending") or [])
    return pending


def result_from_state(state: dict[str, Any], total_ms: float) -> dict[str, Any]:
    """Project a final graph state onto the stable result object (see the module docstring).

    A run paused by the consent interrupt (`__interrupt__` in the returned state) is reported as
    `needs_confirmation`, its answer asking the user to approve the `pending` calls.
    """
    evidence: list[Evidence] = list(state.get("evidence") or [])
    pending = pending_confirmation(state)
    status = state.get("status", "degraded")
    answer = state.get("answer")
    evidence_ids = list(state.get("evidence_ids") or [])
    if pending:
        status = "needs_confirmation"
        answer = CONFIRM_TOOL_CALLS.for_question(
            str(state.get("question") or ""), calls=describe_calls(pending)
        )
        evidence_ids = []
    return {
        "status": status,
        "route": state.get("route", "clarify"),
        "answer": answer,
        "evidence_ids": evidence_ids,
        "evidence": [
            {
                "id": e.id,
                "text": e.text,
                "score": e.score,
                "source": e.source,
                "page": e.page,
                "page_breaks": [list(item) for item in e.page_breaks],
                "char_start": e.char_start,
                "char_end": e.char_end,
            }
            for e in evidence
        ],
        "path": list(state.get("path") or []),
        "query": state.get("query") or "",
        "timings_ms": {**dict(state.get("timings_ms") or {}), "total": total_ms},
        "notes": list(state.get("notes") or []),
        "pending": pending,
        "decision": state.get("decision"),
        "answer_spans": cited_spans(state.get("reading"), evidence_ids, evidence),
    }


def cited_spans(
    reading: dict[str, Any] | None, cited: list[str], evidence: list[Evidence] | None = None
) -> list[dict[str, Any]]:
    """The reader's spans (`haygraph.control.reading.AnswerSpan` dicts) that lie in cited evidence.

    Each gets ``page``: the page of its evidence item that holds the span's start (`Evidence.page_at`;
    a chunk of merged short pages names the page of the quoted part), None when the source has no pages.
    """
    if not reading or not cited:
        return []
    wanted = set(cited)
    items = {e.id: e for e in evidence or []}
    out = []
    for span in reading.get("spans") or []:
        if span.get("evidence_id") not in wanted:
            continue
        item = items.get(span["evidence_id"])
        start = span.get("start")
        page = item.page_at(start) if item is not None and isinstance(start, int) else None
        out.append({**dict(span), "page": page})
    return out


MAX_THREAD_ID_CHARS = 512
"""The longest thread id the control plane keeps (the service allows 128; its key adds the tenant)."""


def check_thread_id(thread_id: Any) -> str:
    """`thread_id` if a checkpointer can store it, else `ConfigError` (before anything runs).

    A thread id is a non-empty string of at most `MAX_THREAD_ID_CHARS` characters that UTF-8 can
    encode (no lone surrogates, as a command line of undecodable bytes gives) and holds no control
    characters. Unchecked, such an id reached the SQLite checkpointer and the turn was only
    reported `degraded` with a stack trace in the log.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise ConfigError("a thread id must be a non-empty string")
    shown = thread_id[:40].encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    if len(thread_id) > MAX_THREAD_ID_CHARS:
        raise ConfigError(f"thread id {shown!r}... is longer than {MAX_THREAD_ID_CHARS} characters")
    try:
        thread_id.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(f"thread id {shown!r} is not valid text (undecodable bytes?)") from None
    if any(ord(c) < 32 or ord(c) == 127 for c in thread_id):
        raise ConfigError(f"thread id {shown!r} holds control characters")
    return thread_id


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
    An invalid `thread_id` raises `ConfigError` (`check_thread_id`).
    """
    check_thread_id(thread_id)
    return _invoke(graph, {"question": question}, context.with_filters(filters), thread_id, str(question))


def _invoke(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    inputs: dict[str, Any] | Command[Any],
    context: Context,
    thread_id: str,
    question: str,
) -> dict[str, Any]:
    start = time.perf_counter()
    persisted = isinstance(getattr(graph, "checkpointer", None), BaseCheckpointSaver)
    try:
        state = graph.invoke(
            inputs,
            context=context,
            config={"configurable": {"thread_id": thread_id}},
            durability="exit" if persisted else None,
        )
    except Exception:
        logger.exception("graph run failed on thread %s", thread_id)
        state = {"status": "degraded", "answer": RUN_FAILED.for_question(question), "path": []}
    return result_from_state(dict(state), (time.perf_counter() - start) * 1000.0)


def resume_turn(
    graph: CompiledStateGraph[Any, Any, Any, Any], *, context: Context, thread_id: str, approve: bool | str
) -> dict[str, Any]:
    """Resume the turn paused for confirmation on `thread_id` (`Command(resume=approve)`).

    `approve` True / "yes" runs the pending side-effect calls; False / "no" declines them (nothing is
    done). Raises `ConfigError` for an unreadable `approve`, or when the thread has no pending
    confirmation (a checkpointer is needed to pause and resume), and for an invalid `thread_id`.
    """
    approved = approval(approve)
    check_thread_id(thread_id)
    if getattr(graph, "checkpointer", None) is None:
        raise ConfigError("resuming a turn needs a graph with a checkpointer")
    snapshot = graph.get_state({"configurable": {"thread_id": thread_id}})
    pending = pending_confirmation({"__interrupt__": snapshot.interrupts})
    if not pending:
        raise ConfigError(f"thread {thread_id!r} has no tool call waiting for confirmation")
    question = str(snapshot.values.get("question") or "")
    return _invoke(graph, Command(resume=approved), context, thread_id, question)


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

    def resume(self, thread_id: str, approve: bool | str) -> dict[str, Any]:
        """Answer the confirmation a `needs_confirmation` turn on `thread_id` waits for.

        `approve` True (or "yes") runs the `pending` side-effect calls, False (or "no") declines them;
        the result object of the finished turn is returned. `ConfigError` when nothing is pending.
        """
        return resume_turn(self.graph, context=self.context, thread_id=thread_id, approve=approve)


def ask(question: str, **agent_kwargs: Any) -> dict[str, Any]:
    """One-shot question on a fresh in-memory agent (`agent_kwargs` as for `Agent`)."""
    return Agent(**agent_kwargs).ask(question)
