"""One OpenTelemetry trace per HTTP request of `haygraph serve --tracing` (see `haygraph.adapters.tracing`).

`TracingMiddleware` is the outermost middleware: a server span named by the route template
(`POST /v1/ask`, `GET /v1/jobs/{job_id}`: never the path with its ids, nor the query string) that is
current while the request runs, so the turn, the graph's nodes, Haystack's components and the reader
are its descendants. It continues a trace whose W3C `traceparent` header the request carries (an
upstream proxy's), and answers every response, errors and 429s included, with `X-Trace-Id`.
Attributes: `http.request.method`, `http.route`, `http.response.status_code`, `haygraph.tenant` (the
authenticated caller's; none without one); the span's status is an error for a 5xx.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import propagate
from opentelemetry.trace import SpanKind, StatusCode
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from haygraph.adapters.service.asgi import RouteTemplates, StatusRecorder
from haygraph.adapters.tracing import Tracing

TRACE_ID_HEADER = "X-Trace-Id"


class TracingMiddleware:
    """A server span around each HTTP request, and its trace id in the `X-Trace-Id` response header."""

    def __init__(self, app: ASGIApp, routes: Any, tracing: Tracing) -> None:
        self.app = app
        self.templates = RouteTemplates(routes)
        self.tracing = tracing
        """Its tracer exists between the app's start and shutdown (None before: requests pass untraced)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request inside its span; note its status and tenant when it has ended."""
        tracer = self.tracing.tracer
        if scope["type"] != "http" or tracer is None:
            await self.app(scope, receive, send)
            return
        method, route = scope["method"], self.templates.of(scope)
        parent = propagate.extract(Headers(scope=scope))
        with tracer.start_as_current_span(
            method if route == "unmatched" else f"{method} {route}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "http.route": route},
            record_exception=False,  # an exception's message may quote a request: its type only, below
            set_status_on_exception=False,
        ) as span:
            context = span.get_span_context()
            trace_id = format(context.trace_id, "032x") if context.is_valid else None
            recorder = StatusRecorder(send)

            async def send_traced(message: Message) -> None:
                if message["type"] == "http.response.start" and trace_id is not None:
                    MutableHeaders(scope=message)[TRACE_ID_HEADER] = trace_id
                await recorder(message)

            error: str | None = None
            try:
                await self.app(scope, receive, send_traced)
            except BaseException as exc:
                error = type(exc).__qualname__
                raise
            finally:
                status = recorder.status
                caller = (scope.get("state") or {}).get("caller")
                span.set_attribute("http.response.status_code", status)
                if caller is not None and caller.tenant is not None:
                    span.set_attribute("haygraph.tenant", caller.tenant)
                if status >= 500 or error is not None:
                    span.set_status(StatusCode.ERROR)
                    span.set_attribute("error.type", error or str(status))
