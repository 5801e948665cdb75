"""Load control of the service: bounded work in flight, a bounded queue, per-key rate limits, slow clients.

Overload is answered, not queued forever. Every request that makes the service work (each `POST` under
`/v1/`: search, ask, stream, chat completions, confirmations; each `POST` to `/mcp`) needs one of
`max_in_flight` slots; when they are all taken it waits in a queue of at most `max_queue` requests for
at most `queue_timeout_s`.
A request that finds the queue full — or waits past that — is answered at once with **429**
`overloaded`, a `Retry-After` header and the usual error shape. A streamed answer keeps its slot until
the stream ends. `/healthz`, `/readyz` and thread reads never wait for a slot.

An API key with `requests_per_minute` in the keys file gets a token bucket of that size, refilled
continuously: past it, **429** `rate_limited` with the seconds until the next token in `Retry-After`.

Slow and vanishing clients hold no slot past a deadline: a request body is read in full, within
`body_timeout_s`, before a slot is taken (**408** `request_timeout` otherwise); a response write that
the client does not read within `send_timeout_s` aborts the response, which cancels its run; a client
that disconnects mid-stream cancels its run (see `turns.stream_turn`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from dataclasses import dataclass

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from haygraph.adapters.service.asgi import is_api_path
from haygraph.adapters.service.errors import error_response
from haygraph.adapters.service.keys import Caller

logger = logging.getLogger(__name__)

_LIMITED_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def too_many(error_type: str, what: str, retry_s: int) -> JSONResponse:
    """A 429 in the error shape with `Retry-After: retry_s`."""
    return error_response(429, error_type, f"{what}; retry in {retry_s} s", {"Retry-After": str(retry_s)})


def is_work(scope: Scope) -> bool:
    """Whether a request makes the service work (needs a slot): any `POST`-like request to the API.

    The API is `/v1/...` and `/mcp` (every MCP message is one `POST`).
    """
    if scope["type"] != "http":
        return False
    return scope["method"] in _LIMITED_METHODS and is_api_path(scope["path"])


@dataclass
class AdmissionStats:
    """Counters for `/readyz`: slots in use, requests waiting, and how many were turned away."""

    in_flight: int = 0
    waiting: int = 0
    rejected: int = 0
    rate_limited: int = 0


class Admission:
    """At most `max_in_flight` requests working and `max_queue` waiting; the rest get 429 at once."""

    def __init__(self, max_in_flight: int, max_queue: int, queue_timeout_s: float) -> None:
        self.max_in_flight = max_in_flight
        self.max_queue = max_queue
        self.queue_timeout_s = queue_timeout_s
        self.stats = AdmissionStats()
        self._slots: asyncio.Semaphore | None = None  # created in the server's event loop
        self._mean_s = 0.25  # running mean of a slot's hold time, for Retry-After

    def retry_after_s(self) -> int:
        """Seconds a turned-away client should wait: the queue's expected drain time (at least 1)."""
        backlog = self.stats.waiting + self.stats.in_flight
        return max(1, math.ceil(self._mean_s * backlog / max(self.max_in_flight, 1)))

    async def acquire(self) -> bool:
        """Take a slot, waiting in the queue if there is room; False when the request must be turned away."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_in_flight)
        if self._slots.locked():
            if self.stats.waiting >= self.max_queue:
                self.stats.rejected += 1
                return False
            self.stats.waiting += 1
            try:
                await asyncio.wait_for(self._slots.acquire(), self.queue_timeout_s)
            except TimeoutError:
                self.stats.rejected += 1
                return False
            finally:
                self.stats.waiting -= 1
        else:
            await self._slots.acquire()
        self.stats.in_flight += 1
        return True

    def release(self, held_s: float) -> None:
        """Give a slot back after holding it `held_s` seconds."""
        self.stats.in_flight -= 1
        self._mean_s = 0.9 * self._mean_s + 0.1 * held_s
        assert self._slots is not None
        self._slots.release()


class RateLimiter:
    """Token buckets per API key: `requests_per_minute` tokens, refilled continuously."""

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key id -> (tokens, at)
        self._lock = threading.Lock()

    def take(self, key_id: str, per_minute: int) -> float:
        """Spend one token of `key_id`'s bucket: 0.0 when allowed, else the seconds until the next token."""
        now: float = self._clock()  # type: ignore[operator]
        rate = per_minute / 60.0
        with self._lock:
            tokens, at = self._buckets.get(key_id, (float(per_minute), now))
            tokens = min(float(per_minute), tokens + (now - at) * rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / rate


class RateLimitMiddleware:
    """429 `rate_limited` for a key past its `requests_per_minute` (keys without one are not limited)."""

    def __init__(self, app: ASGIApp, limiter: RateLimiter, stats: AdmissionStats) -> None:
        self.app = app
        self.limiter = limiter
        self.stats = stats

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Spend a token of the caller's key before anything else is done for the request."""
        caller: Caller | None = scope.get("state", {}).get("caller") if scope["type"] == "http" else None
        if caller is not None and caller.requests_per_minute and caller.key_id:
            wait_s = self.limiter.take(caller.key_id, caller.requests_per_minute)
            if wait_s > 0:
                self.stats.rate_limited += 1
                what = (
                    f"rate limit of {caller.requests_per_minute} requests per minute for this API key reached"
                )
                await too_many("rate_limited", what, max(1, math.ceil(wait_s)))(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ClientTooSlowError(Exception):
    """The client did not read a response write within the send deadline (the response is aborted)."""


class LoadControlMiddleware:
    """Reads a working request's body within a deadline, then admits it to a slot (or answers 429).

    The body is read in full (it is already limited by `BodySizeLimitMiddleware`) before a slot is
    taken, so a client sending its body slowly never holds one; the app then receives the buffered
    body. Each response write must be taken by the client within `send_timeout_s`.
    """

    def __init__(
        self, app: ASGIApp, admission: Admission, *, body_timeout_s: float, send_timeout_s: float
    ) -> None:
        self.app = app
        self.admission = admission
        self.body_timeout_s = body_timeout_s
        self.send_timeout_s = send_timeout_s

    async def _read_body(self, receive: Receive) -> list[Message]:
        messages: list[Message] = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                return messages

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Buffer the body (deadline), take a slot (or 429), run the app with a send deadline."""
        if not is_work(scope):
            await self.app(scope, receive, send)
            return
        try:
            messages = await asyncio.wait_for(self._read_body(receive), self.body_timeout_s)
        except TimeoutError:
            message = f"the request body was not received within {self.body_timeout_s:g} s"
            await error_response(408, "request_timeout", message, {"Connection": "close"})(
                scope, receive, send
            )
            return
        except StarletteHTTPException as exc:  # the body size limit, raised while counting
            await error_response(exc.status_code, "request_too_large", str(exc.detail))(scope, receive, send)
            return
        if any(m["type"] == "http.disconnect" for m in messages):
            return  # the client left while sending: nothing to answer
        if not await self.admission.acquire():
            what = (
                f"the service is at capacity ({self.admission.max_in_flight} requests in flight, "
                f"{self.admission.max_queue} waiting)"
            )
            await too_many("overloaded", what, self.admission.retry_after_s())(scope, receive, send)
            return
        start = time.monotonic()
        try:
            await self.app(scope, _replay(messages, receive), self._deadline_send(send))
        except ClientTooSlowError as exc:  # the response is left incomplete: uvicorn closes the connection
            logger.warning("%s %s: %s; response aborted", scope["method"], scope["path"], exc)
        finally:
            self.admission.release(time.monotonic() - start)

    def _deadline_send(self, send: Send) -> Send:
        timeout = self.send_timeout_s

        async def deadline_send(message: Message) -> None:
            try:
                await asyncio.wait_for(send(message), timeout)
            except TimeoutError as exc:
                reason = f"the client did not read the response within {timeout:g} s"
                raise ClientTooSlowError(reason) from exc

        return deadline_send


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """A `receive` giving the buffered body messages first, then the connection's own (disconnect)."""
    pending = list(messages)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
