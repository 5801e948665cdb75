"""Run one conversation turn on the graph asynchronously: whole (`ask_turn`) or as events (`stream_turn`).

Both use the compiled graph's async API (`ainvoke` / `astream`); LangGraph runs our synchronous
nodes in worker threads, so the event loop is never blocked. A turn on a thread is checkpointed once,
when it ends (`durability="exit"`). A turn that times out or whose client disconnects is cancelled
before `analyze`'s results reach the thread: its conversation (messages, summary, entities, turn
count, last result) is unchanged — LangGraph only records the pending input, which the next turn
replaces.

Streamed events (`TurnEvent.kind`):

- `progress` `{"node": "retrieve", "ms": 41.7}` — one per graph node, when it finishes;
- `token` `{"text": "..."}` — answer text: a model's tokens as they are generated, or the finished
  extractive answer in a few pieces (offline);
- `result` — the verified result object (as `haygraph ask --json`); its `status` is `rejected` when
  the model's citations failed validation (the streamed text is then withdrawn), `degraded` with a
  `threads unavailable` note when the threads database failed and the turn was answered without it;
- `error` `{"error": {"type", "message"}}` — the deadline passed (`deadline_exceeded`) or the service
  is shutting down and its grace has passed (`shutting_down`); the run is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from langgraph.types import Command

from haygraph.adapters.service.errors import DeadlineExceededError, ServiceError, ShuttingDownError
from haygraph.adapters.service.metrics import observe_turn, set_database_up
from haygraph.adapters.service.streaming import AnswerTokens, answer_pieces, closing_text
from haygraph.adapters.service.threads import is_threads_error
from haygraph.adapters.tracing import turn_span
from haygraph.control import Context, result_from_state

logger = logging.getLogger(__name__)

EventKind = Literal["progress", "token", "result", "error"]
FAILED_ANSWER = "Something went wrong. Please try again later."


@dataclass(frozen=True)
class TurnEvent:
    """One streamed event of a turn."""

    kind: EventKind
    data: dict[str, Any]


class RunCounter:
    """Counts graph runs in flight; a cancelled run counts until its task has really ended."""

    def __init__(self) -> None:
        self.active = 0

    def enter(self) -> None:
        """A run started."""
        self.active += 1

    def exit(self) -> None:
        """A run ended (finished, failed or cancelled)."""
        self.active -= 1


@dataclass(frozen=True)
class TurnRequest:
    """Everything one graph run needs."""

    graph: Any
    """A compiled graph (with a checkpointer for thread turns, without for stateless ones)."""
    inputs: dict[str, Any] | Command[Any]
    """The graph input: `{"question": ...}` and optional earlier `messages`, or the `Command(resume=...)`
    answering a turn paused for confirmation."""
    context: Context
    """The per-request settings (tenant-scoped retriever, filters, tool allow-list)."""
    thread_key: str | None = None
    """The namespaced checkpointer thread id; None = a stateless turn."""
    timeout_s: float = 60.0
    """The deadline of the run."""
    runs: RunCounter | None = field(default=None, compare=False)
    """The service's in-flight counter: entered when the run starts, left when it has ended."""
    stop: asyncio.Event | None = field(default=None, compare=False)
    """Set when the service stops running turns (shutdown grace over): the run is cancelled."""
    fallback_graph: Any = field(default=None, compare=False)
    """The graph without a checkpointer, for answering a thread turn when the threads database fails."""
    no_documents: str | None = None
    """Set when the caller's key sees no documents at all: an `insufficient_evidence` answer says this
    instead of "could not find evidence" (the operator's fix, not the user's question, is the problem)."""

    def run_kwargs(self, **extra: Any) -> dict[str, Any]:
        """Keyword arguments of `ainvoke` / `astream`."""
        config = {"configurable": {"thread_id": self.thread_key}} if self.thread_key else {}
        return {
            "context": self.context,
            "config": config,
            "durability": "exit" if self.thread_key else None,
            **extra,
        }


THREADS_UNAVAILABLE = (
    "threads unavailable ({error}): answered without the conversation's history; this turn was not saved"
)


def _can_fall_back(request: TurnRequest, exc: BaseException) -> bool:
    return (
        request.thread_key is not None
        and request.fallback_graph is not None
        and isinstance(request.inputs, dict)
        and is_threads_error(exc)
    )


async def _without_thread(request: TurnRequest, exc: BaseException, timeout_s: float) -> dict[str, Any]:
    """Answer the turn on the graph without a checkpointer; the state, marked degraded with a note."""
    error = " ".join(f"{type(exc).__name__}: {exc}".split())[:160]
    logger.warning("threads database failed (thread %s): %s; answering without it", request.thread_key, error)
    set_database_up("threads", False)
    inputs = {"question": request.inputs["question"]} if isinstance(request.inputs, dict) else {}
    state = dict(
        await _first_of(
            request.fallback_graph.ainvoke(inputs, context=request.context, config={}), request, timeout_s
        )
    )
    state["status"] = "degraded"
    state["notes"] = [*(state.get("notes") or []), THREADS_UNAVAILABLE.format(error=error)]
    return state


def failed_state() -> dict[str, Any]:
    """The state reported for a run that raised (as `haygraph.control.run_turn` does)."""
    return {"status": "degraded", "answer": FAILED_ANSWER, "path": []}


def _deadline_error(request: TurnRequest) -> DeadlineExceededError:
    return DeadlineExceededError(
        f"the answer took longer than the {request.timeout_s:g} s deadline; the run was cancelled"
    )


SHUTDOWN_MESSAGE = "the service is shutting down; the run was stopped: retry on another instance"


async def _first_of(work: Awaitable[Any], request: TurnRequest, timeout_s: float) -> Any:
    """`work`'s result, or `DeadlineExceededError` / `ShuttingDownError` (then `work` is cancelled).

    The latter when the service stops turns (shutdown grace over) before `work` ends.
    """
    run = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(request.stop.wait()) if request.stop is not None else None
    try:
        waiting = {run} if stopper is None else {run, stopper}
        done, _ = await asyncio.wait(waiting, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        if run in done:
            return run.result()
        raise ShuttingDownError(SHUTDOWN_MESSAGE) if stopper in done else _deadline_error(request)
    finally:
        if stopper is not None:
            stopper.cancel()
        if not run.done():
            run.cancel()
            with contextlib.suppress(BaseException):
                await run


async def ask_turn(request: TurnRequest) -> dict[str, Any]:
    """Run the turn to the end; the result object, or `DeadlineExceededError` at the deadline.

    `ShuttingDownError` when the service stops turns (shutdown grace over) first. While tracing, the run
    is a `haygraph.turn` span with the result's status, decision, margin and evidence counts.
    """
    with turn_span() as record:
        result = await _ask_turn(request)
        record(result)
        return result


async def _ask_turn(request: TurnRequest) -> dict[str, Any]:
    start = time.perf_counter()
    if request.stop is not None and request.stop.is_set():
        raise ShuttingDownError(SHUTDOWN_MESSAGE)
    if request.runs is not None:
        request.runs.enter()
    try:
        try:
            state = await _first_of(
                request.graph.ainvoke(request.inputs, **request.run_kwargs()), request, request.timeout_s
            )
        except Exception as exc:
            if isinstance(exc, ServiceError) or not _can_fall_back(request, exc):
                raise
            left = request.timeout_s - (time.perf_counter() - start)
            state = await _without_thread(request, exc, left)
    except ServiceError:
        raise
    except Exception:
        logger.exception("graph run failed (thread %s)", request.thread_key)
        state = failed_state()
    finally:
        if request.runs is not None:
            request.runs.exit()
    result = explain_refusal(result_from_state(dict(state), (time.perf_counter() - start) * 1000.0), request)
    observe_turn(result)
    return result


def explain_refusal(result: dict[str, Any], request: TurnRequest) -> dict[str, Any]:
    """The result, its refusal replaced by `request.no_documents` when the key sees no documents."""
    if request.no_documents is None or result.get("status") != "insufficient_evidence":
        return result
    return {**result, "answer": request.no_documents}


def _node_ms(update: Any, node: str) -> float:
    timings = update.get("timings_ms") if isinstance(update, dict) else None
    timings = getattr(timings, "value", timings)  # the entry node writes an Overwrite
    return round(float((timings or {}).get(node, 0.0)), 3)


async def _run_events(request: TurnRequest) -> AsyncIterator[TurnEvent]:
    with turn_span() as record:
        async for event in _turn_events(request):
            if event.kind == "result":
                record(event.data)
            yield event


async def _turn_events(request: TurnRequest) -> AsyncIterator[TurnEvent]:
    start = time.perf_counter()
    tokens = AnswerTokens()
    final: dict[str, Any] | None = None
    stream = request.graph.astream(
        request.inputs, **request.run_kwargs(stream_mode=["updates", "messages", "values"])
    )
    try:
        async with aclosing(stream) as events:
            async for mode, payload in events:
                if mode == "updates":
                    for node, update in payload.items():
                        yield TurnEvent("progress", {"node": node, "ms": _node_ms(update, node)})
                elif mode == "messages":
                    delta = tokens.feed(*payload)
                    if delta:
                        yield TurnEvent("token", {"text": delta})
                elif mode == "values":
                    final = dict(payload)
    except Exception as exc:
        final = None
        if _can_fall_back(request, exc):
            left = request.timeout_s - (time.perf_counter() - start)
            try:
                final = await _without_thread(request, exc, left)
            except Exception:
                logger.exception("graph run without the thread failed (thread %s)", request.thread_key)
        else:
            logger.exception("graph run failed (thread %s)", request.thread_key)
        final = final or failed_state()
    result = explain_refusal(
        result_from_state(final or failed_state(), (time.perf_counter() - start) * 1000.0), request
    )
    observe_turn(result)
    rest = closing_text(tokens.text, result["answer"]) if result["status"] != "rejected" else ""
    for piece in answer_pieces(rest):
        yield TurnEvent("token", {"text": piece})
    yield TurnEvent("result", result)


async def stream_turn(request: TurnRequest) -> AsyncIterator[TurnEvent]:
    """Run the turn and yield its events (see the module docstring) until `result` or the deadline.

    The graph runs in its own task feeding a queue, so the deadline and a client disconnect
    (closing this generator) cancel it cleanly; `request.runs` counts it until that task has ended.
    """
    queue: asyncio.Queue[TurnEvent | None] = asyncio.Queue()

    async def produce() -> None:
        try:
            async for event in _run_events(request):
                queue.put_nowait(event)
        finally:
            queue.put_nowait(None)

    task = asyncio.create_task(produce())
    if request.runs is not None:
        runs = request.runs
        runs.enter()
        task.add_done_callback(lambda _t: runs.exit())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.timeout_s
    try:
        while True:
            try:
                event = await _first_of(queue.get(), request, max(deadline - loop.time(), 0.0))
            except ServiceError as exc:
                yield TurnEvent("error", {"error": {"type": exc.error_type, "message": str(exc)}})
                return
            if event is None:
                return
            yield event
    finally:
        task.cancel()  # no-op when finished; otherwise the graph run (and its stream) is cancelled
