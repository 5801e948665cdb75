"""`ContractToolExecutor`: runs one turn's tool calls under their contracts, never raising.

For each call, in order: per-turn call budget, registry lookup, allow-list, argument validation,
execution with a per-call timeout and bounded retries, result validation, and reduction of large
results to the contract's key fields. Every outcome — including every failure — is a `ToolResult`.

Timeouts: each attempt runs in its own daemon worker thread and the executor waits on its future
with `Future.result(timeout)`. A Python thread cannot be killed, so a timed-out attempt keeps
running in the background until its function returns; its result is discarded. Daemon threads are
used rather than a `ThreadPoolExecutor` on purpose: pool workers are joined at interpreter exit (a
hung tool would hang the CLI on exit) and a pool with stuck workers would make later calls queue
and spend their own timeout waiting for a worker.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from haygraph.control.errors import ToolContractError, ToolFailure
from haygraph.control.tools.contract import ToolContract, ToolRuntimeInfo, format_validation_error
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.types import ToolCall, ToolResult, ToolStatus

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _quoted(name: str, limit: int = 80) -> str:
    """`name` quoted for an error message, cut to `limit` characters (a 1 MB name is not echoed back)."""
    return repr(name) if len(name) <= limit else f"{name[:limit]!r}… ({len(name)} characters)"


def request_id_for(thread_id: str, call_id: str) -> str:
    """Return the idempotency key of a call: sha256(thread_id + ":" + call_id), first 24 hex chars."""
    return hashlib.sha256(f"{thread_id}:{call_id}".encode()).hexdigest()[:24]


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str))


def _shrink(value: Any) -> Any:
    """Return a smaller version of a list, string or dict (halve, or shrink its largest member)."""
    if isinstance(value, list):
        return value[: len(value) // 2]
    if isinstance(value, str):
        return value[: len(value) // 2]
    if isinstance(value, dict):
        key = max(value, key=lambda k: _size(value[k]))
        shrunk = dict(value)
        if isinstance(value[key], list | str | dict) and value[key]:
            shrunk[key] = _shrink(value[key])
        else:
            del shrunk[key]
        return shrunk
    return value


def reduce_result(content: dict[str, Any], key_fields: Iterable[str], char_cap: int) -> dict[str, Any]:
    """Reduce a tool result to at most `char_cap` JSON characters.

    A result within the cap is returned unchanged. Otherwise only `key_fields` are kept (all fields
    when none are declared), `truncated: true` and the list of `omitted` fields are added, and while
    still too large the largest list/string/dict value is halved. Pure function.
    """
    if _size(content) <= char_cap:
        return content
    keys = [k for k in key_fields if k in content] or list(content)
    reduced: dict[str, Any] = {k: content[k] for k in keys}
    reduced["truncated"] = True
    omitted = [k for k in content if k not in keys]
    if omitted:
        reduced["omitted"] = omitted
    while _size(reduced) > char_cap:
        candidates = [
            k for k in keys if k in reduced and isinstance(reduced[k], list | str | dict) and reduced[k]
        ]
        if not candidates:
            break
        key = max(candidates, key=lambda k: _size(reduced[k]))
        reduced[key] = _shrink(reduced[key])
    if _size(reduced) > char_cap:
        return {"truncated": True}
    return reduced


def run_with_timeout(fn: Callable[[], T], timeout_s: float, *, name: str = "tool") -> T:
    """Run `fn` in a fresh daemon thread and wait at most `timeout_s` seconds for it.

    Raises `TimeoutError` when it does not finish in time (the thread is abandoned, not killed) and
    re-raises whatever `fn` raised. `fn` runs in a copy of the caller's `contextvars` context, so
    LangChain callbacks and LangGraph's stream writer (token streaming) reach it as in the caller.
    """
    future: Future[T] = Future()
    context = contextvars.copy_context()

    def _target() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(fn))
        except BaseException as exc:  # handed to the waiting caller
            future.set_exception(exc)

    threading.Thread(target=_target, name=f"haygraph-tool-{name}", daemon=True).start()
    return future.result(timeout=timeout_s)


class ContractToolExecutor:
    """Executes tool calls under their contracts, a session allow-list and a per-turn call budget.

    Implements `haygraph.control.tools.types.ToolExecutor`. `execute` is one turn: at most
    `max_calls_per_turn` calls run, later ones get a `budget_exceeded` result. Results whose JSON
    exceeds `result_char_cap` characters are reduced to the contract's key fields.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        allow_list: Iterable[str],
        max_calls_per_turn: int = 2,
        result_char_cap: int = 4000,
    ) -> None:
        if max_calls_per_turn < 0:
            raise ToolContractError(f"max_calls_per_turn must be >= 0, but got {max_calls_per_turn}")
        if result_char_cap < 16:
            raise ToolContractError(f"result_char_cap must be >= 16, but got {result_char_cap}")
        self.registry = registry
        self.allow_list = tuple(allow_list)
        self.max_calls_per_turn = max_calls_per_turn
        self.result_char_cap = result_char_cap

    def execute(
        self, calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
    ) -> list[ToolResult]:
        """Run `calls` in order and return one `ToolResult` per call; never raises.

        `filters` (the session's retrieval filters) reach every tool as `ToolRuntimeInfo.filters`.
        """
        results: list[ToolResult] = []
        for index, call in enumerate(calls):
            started = time.perf_counter()
            try:
                if index >= self.max_calls_per_turn:
                    result = self._refuse(
                        call,
                        "budget_exceeded",
                        f"per-turn tool call budget of {self.max_calls_per_turn} exhausted; "
                        f"call {_quoted(call.name)} was not executed",
                    )
                else:
                    result = self._execute_one(call, thread_id, filters)
            except Exception as exc:  # the executor never raises into the graph
                logger.exception("unexpected failure executing tool call %s", call.id)
                result = self._refuse(call, "error", f"internal error: {type(exc).__name__}: {exc}")
            elapsed = (time.perf_counter() - started) * 1000.0
            results.append(result.model_copy(update={"elapsed_ms": elapsed}))
        return results

    @staticmethod
    def _refuse(call: ToolCall, status: ToolStatus, error: str, attempts: int = 0) -> ToolResult:
        return ToolResult(call_id=call.id, name=call.name, status=status, error=error, attempts=attempts)

    def _execute_one(self, call: ToolCall, thread_id: str, filters: dict[str, Any] | None) -> ToolResult:
        contract = self.registry.get(call.name)
        if contract is None:
            return self._refuse(
                call, "unknown_tool", f"unknown tool {_quoted(call.name)}; available: {self.registry.names()}"
            )
        if call.name not in self.allow_list:
            logger.warning("refused tool %r: not in this session's allow-list", call.name)
            return self._refuse(call, "not_allowed", f"tool {call.name!r} is not allowed in this session")
        try:
            args = contract.validate_args(call.args)
        except ValidationError as exc:
            return self._refuse(
                call,
                "invalid_arguments",
                f"invalid arguments for {call.name}: {format_validation_error(exc)}",
            )
        runtime = ToolRuntimeInfo(
            request_id=request_id_for(thread_id, call.id),
            thread_id=thread_id,
            call_id=call.id,
            filters=filters,
        )
        return self._run_with_retries(call, contract, args, runtime)

    def _run_with_retries(
        self, call: ToolCall, contract: ToolContract, args: BaseModel, runtime: ToolRuntimeInfo
    ) -> ToolResult:
        status: ToolStatus = "error"
        error = ""
        attempts = 0
        for attempts in range(1, contract.max_retries + 2):
            try:
                raw = run_with_timeout(
                    lambda: contract.run(args, runtime), contract.timeout_s, name=contract.name
                )
            except TimeoutError:
                status = "timeout"
                error = f"tool {contract.name!r} did not finish within {contract.timeout_s:g} s"
                logger.warning("%s (attempt %d)", error, attempts)
                continue
            except ToolFailure as exc:
                return self._refuse(call, "error", str(exc), attempts)
            except Exception as exc:
                status = "error"
                error = f"tool {contract.name!r} failed: {type(exc).__name__}: {exc}"
                logger.warning("%s (attempt %d)", error, attempts)
                continue
            try:
                result = contract.validate_result(raw)
            except ValidationError as exc:
                return self._refuse(
                    call,
                    "error",
                    f"tool {contract.name!r} returned an invalid result: {format_validation_error(exc)}",
                    attempts,
                )
            content = reduce_result(result.model_dump(mode="json"), contract.key_fields, self.result_char_cap)
            return ToolResult(
                call_id=call.id, name=call.name, status="ok", content=content, attempts=attempts
            )
        if attempts > 1:
            error += f" (after {attempts} attempts)"
        return self._refuse(call, status, error, attempts)
