"""Bounded waits for the graph's external calls: retriever and chat model (SPEC §6).

Every call a node makes to something that may hang or fail — the retriever, the chat model — goes
through `call_with_deadline`: it runs in a daemon worker thread (`run_with_timeout`, the tool
executor's helper) and the node waits at most the remaining time of one deadline for all attempts.
Transient failures (`is_transient`: rate limits, connection errors, 5xx) are retried with a short
backoff while time remains; anything else, and the last failure, is raised for the node to take its
degradation branch (extractive answer, rules, status `degraded`).

Why not LangGraph's `RetryPolicy`: it retries a whole node and re-raises after the last attempt,
which would end the run instead of letting the node degrade; and a node waiting on a hung call is
not interrupted by it. The deadline here bounds the wait and keeps the fallback inside the node.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import TypeVar

from haygraph.control.errors import ConfigError
from haygraph.control.tools.executor import run_with_timeout

logger = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT_STATUS_CODES = frozenset({408, 429, 500, 502, 503, 504, 529})
"""HTTP status codes of provider errors worth retrying."""
_TRANSIENT_NAMES = ("ratelimit", "timeout", "connection", "unavailable", "overloaded", "serviceunavailable")
MAX_BACKOFF_S = 2.0


def check_timeout(name: str, value: float) -> None:
    """Raise `ConfigError` naming `name` unless `value` is a finite number of seconds > 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a finite number of seconds > 0, but got {value!r}")


def is_transient(exc: BaseException) -> bool:
    """Whether a failed call may succeed if retried: connection errors, rate limits, 5xx statuses.

    Provider SDKs have no common base class, so their errors are recognised by an HTTP status code
    attribute (`status_code` / `status`) or by a class name such as `RateLimitError`,
    `APIConnectionError`, `ServiceUnavailableError`.
    """
    if isinstance(exc, ConnectionError):
        return True
    for attr in ("status_code", "status", "http_status"):
        code = getattr(exc, attr, None)
        if isinstance(code, int) and code in TRANSIENT_STATUS_CODES:
            return True
    name = type(exc).__name__.lower().replace("_", "")
    return any(part in name for part in _TRANSIENT_NAMES)


def call_with_deadline(
    fn: Callable[[], T],
    timeout_s: float,
    *,
    name: str,
    retries: int = 0,
    transient: Callable[[BaseException], bool] = is_transient,
) -> T:
    """Call `fn`, retrying transient failures up to `retries` times, all within `timeout_s` seconds.

    Raises `TimeoutError` (naming `name` and the deadline) when the deadline passes, otherwise the
    last exception `fn` raised. Backoff between attempts: 0.25 s, doubling, at most `MAX_BACKOFF_S`
    and never past the deadline.
    """
    deadline = time.monotonic() + timeout_s
    attempt = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"{name} did not answer within {timeout_s:g} s")
        try:
            return run_with_timeout(fn, remaining, name=name)
        except TimeoutError as exc:
            raise TimeoutError(f"{name} did not answer within {timeout_s:g} s") from exc
        except Exception as exc:
            if attempt >= retries or not transient(exc):
                raise
            attempt += 1
            pause = min(0.25 * 2 ** (attempt - 1), MAX_BACKOFF_S, max(deadline - time.monotonic(), 0.0))
            logger.warning(
                "%s failed (%s: %s); retry %d in %.2f s", name, type(exc).__name__, exc, attempt, pause
            )
            time.sleep(pause)


def describe_failure(exc: BaseException) -> str:
    """One line for the result's notes: `TypeName: message` (the message cut to 200 characters)."""
    text = " ".join(str(exc).split())
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
