"""OpenTelemetry traces of `haygraph serve` and `haygraph ask` (the `otel` extra).

Off by default. On with `--tracing`, or when `OTEL_TRACES_EXPORTER` names an exporter (`otlp`,
`console`); `OTEL_SDK_DISABLED=true` keeps it off either way (`tracing_requested`). Everything else
comes from the standard `OTEL_*` variables, read by the OpenTelemetry SDK itself:
`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (default
`http://localhost:4318/v1/traces`), `..._HEADERS`, `..._TIMEOUT`, `..._COMPRESSION`, `..._CERTIFICATE`,
`OTEL_SERVICE_NAME` (default `haygraph`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` /
`OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*` (the batch processor). Spans go over OTLP/HTTP with protobuf;
`OTEL_EXPORTER_OTLP_PROTOCOL=grpc` is refused (`TracingConfigError`) rather than silently ignored.

What a `Tracing` traces while it runs (`start` .. `close`):

- the graph's nodes (`graph.analyze`, `graph.retrieve`, ...: `haygraph.control.graph.tracing`), with
  what each decided: route, evidence count, the decision's probability, threshold and reader margin;
- Haystack's pipeline components (`haystack.component.run`), through deepset's `OpenTelemetryTracer`
  (the `opentelemetry-haystack` integration), composed with the metrics' `ComponentTimer` when both run:
  Haystack holds one tracer, the timer wraps this one;
- the reader (`haygraph.reader`, `haygraph.adapters.evidence_reader`);
- a turn (`turn_span`): status, decision, route, margin, evidence counts.

No question, answer or document text is recorded unless `content` is set (`--trace-content`), which
also turns on Haystack's content tracing (components' inputs and outputs) for as long as it runs;
`HAYSTACK_CONTENT_TRACING_ENABLED` alone does not.

Log records get `trace_id` and `span_id` attributes (`TraceContextFilter` on the root logger's
handlers; empty outside a span), and the CLI's log lines end with them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from haygraph.adapters.errors import TracingConfigError
from haygraph.control.graph.tracing import NodeRecord, node_tracer, set_node_tracer
from haygraph.control.outcomes import OUTCOMES

logger = logging.getLogger(__name__)

EXPORTERS = ("otlp", "console", "none")
"""The values of `OTEL_TRACES_EXPORTER` haygraph supports (a comma-separated list of them)."""
DEFAULT_SERVICE_NAME = "haygraph"
DEFAULT_ENDPOINT = "http://localhost:4318"
LOG_FORMAT = "%(levelname)s: %(message)s"
"""The CLI's log format."""
TRACED_LOG_FORMAT = "%(levelname)s: %(message)s%(trace)s"
"""The CLI's log format while tracing: ` trace_id=... span_id=...` after a message logged inside a span."""

_active: Tracing | None = None


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def tracing_requested(flag: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to trace: `flag` (`--tracing`) or `OTEL_TRACES_EXPORTER` naming an exporter.

    Never when `OTEL_SDK_DISABLED` is true.
    """
    env = os.environ if environ is None else environ
    if _flag(env.get("OTEL_SDK_DISABLED")):
        return False
    named = {n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")} - {"", "none"}
    return flag or bool(named)


def exporter_names(environ: Mapping[str, str] | None = None) -> list[str]:
    """The exporters `OTEL_TRACES_EXPORTER` names (default `otlp`); `TracingConfigError` for others."""
    env = os.environ if environ is None else environ
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    unknown = [n for n in names if n not in EXPORTERS]
    if unknown:
        raise TracingConfigError(
            f"OTEL_TRACES_EXPORTER={env.get('OTEL_TRACES_EXPORTER')!r}: haygraph exports traces with "
            f"{', '.join(EXPORTERS)} (not {', '.join(unknown)})"
        )
    for variable in ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        protocol = env.get(variable, "").strip().lower()
        if protocol and protocol != "http/protobuf":
            raise TracingConfigError(
                f"{variable}={protocol!r}: haygraph exports over OTLP/HTTP with protobuf only "
                "(http/protobuf; point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's HTTP port, 4318)"
            )
        if protocol:
            break
    return [n for n in names if n != "none"] if names else ["otlp"]


def endpoint(environ: Mapping[str, str] | None = None) -> str:
    """Where the OTLP exporter sends spans (as the SDK resolves it from the environment)."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    return f"{base.rstrip('/')}/v1/traces"


def shown_endpoint(url: str) -> str:
    """`url` as it may be logged: a user name and password in it (`https://user:secret@host`) hidden."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _ignore(_update: dict[str, Any]) -> None:
    return None


class TraceContextFilter(logging.Filter):
    """Adds `trace_id`, `span_id` (hex, empty outside a span) and `trace` (both as text, or empty)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Annotate `record`; never drops it."""
        from opentelemetry import trace

        context = trace.get_current_span().get_span_context()
        if context.is_valid:
            trace_id, span_id = format(context.trace_id, "032x"), format(context.span_id, "016x")
            text = f" trace_id={trace_id} span_id={span_id}"
        else:
            trace_id = span_id = text = ""
        record.__dict__.update(trace_id=trace_id, span_id=span_id, trace=text)
        return True


class Tracing:
    """The process's OpenTelemetry tracing: a tracer provider, its exporters, and the hooks it installs.

    Built from the environment (checked at once: `TracingConfigError`); `start` installs it, `close`
    flushes the spans and gives back what it replaced. One runs at a time (a later `start` wins; `close`
    only undoes what is still its own).
    """

    def __init__(self, *, content: bool = False, environ: Mapping[str, str] | None = None) -> None:
        self.content = content
        """Whether question, answer and document text may be recorded (`--trace-content`)."""
        self.environ = dict(os.environ if environ is None else environ)
        self.exporters = exporter_names(self.environ)
        try:
            import haystack_integrations.tracing.opentelemetry  # noqa: F401
            import opentelemetry.sdk.trace  # noqa: F401
        except ImportError as exc:
            raise TracingConfigError(
                f"tracing needs the `otel` extra ({exc.name} is missing): pip install 'haygraph[otel]'"
            ) from exc
        self.provider: Any = None
        self.tracer: Any = None
        """The OpenTelemetry tracer of haygraph's own spans (None until `start`)."""
        self._haystack: Any = None
        self._haystack_before: Any = None
        self._content_before = False
        self._node_before: Any = None
        self._active_before: Tracing | None = None
        self._handlers: list[tuple[logging.Handler, logging.Formatter | None]] = []
        self._filter = TraceContextFilter()

    def describe(self) -> str:
        """One line for the operator: where spans go, the service name, whether text is recorded."""
        where = ", ".join(
            f"OTLP/HTTP to {shown_endpoint(endpoint(self.environ))}" if n == "otlp" else "the console"
            for n in self.exporters
        )
        name = self.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
        sampler = self.environ.get("OTEL_TRACES_SAMPLER") or "parentbased_always_on"
        return (
            f"tracing: spans to {where or 'no exporter (trace ids in logs and X-Trace-Id only)'} as service "
            f"{name!r}, sampler {sampler}; "
            + ("text recorded (--trace-content)" if self.content else "no question or document text")
        )

    def start(self) -> Tracing:
        """Make the provider and exporters; trace nodes, Haystack components and the reader from now on."""
        global _active
        from haystack import tracing as haystack_tracing
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

        from haygraph import __version__

        resource = Resource.create({"service.version": str(__version__)})
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))
        provider = TracerProvider(resource=resource)  # the sampler from OTEL_TRACES_SAMPLER(_ARG)
        for name in self.exporters:
            if name == "otlp":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            else:  # on stderr: `ask --json` keeps stdout for its result
                provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        self.provider = provider
        self.tracer = provider.get_tracer("haygraph", str(__version__))
        self._haystack = _haystack_tracer(provider.get_tracer("haystack"))
        proxy = haystack_tracing.tracer
        actual: Any = proxy.actual_tracer
        if hasattr(actual, "inner"):  # a tracer wrapping another (the metrics' ComponentTimer): go inside
            self._haystack_before, actual.inner = actual.inner, self._haystack
        else:
            self._haystack_before, proxy.actual_tracer = actual, self._haystack
        self._content_before = proxy.is_content_tracing_enabled
        if self._content_before and not self.content:
            logger.warning(
                "HAYSTACK_CONTENT_TRACING_ENABLED is ignored while haygraph traces: pass --trace-content to "
                "record question and document text in spans"
            )
        proxy.is_content_tracing_enabled = self.content
        self._node_before = set_node_tracer(self)
        for handler in logging.getLogger().handlers:
            handler.addFilter(self._filter)
            formatter = handler.formatter
            if formatter is not None and getattr(formatter, "_fmt", None) == LOG_FORMAT:
                self._handlers.append((handler, formatter))
                handler.setFormatter(logging.Formatter(TRACED_LOG_FORMAT))
            else:
                self._handlers.append((handler, None))
        self._active_before, _active = _active, self
        return self

    def close(self) -> None:
        """Flush and export the spans left, and give back the hooks it replaced (idempotent)."""
        global _active
        if self.provider is None:
            return
        from haystack import tracing as haystack_tracing

        proxy = haystack_tracing.tracer
        actual: Any = proxy.actual_tracer
        if actual is self._haystack:
            proxy.actual_tracer = self._haystack_before
        elif getattr(actual, "inner", None) is self._haystack:
            actual.inner = self._haystack_before
        proxy.is_content_tracing_enabled = self._content_before
        if node_tracer() is self:
            set_node_tracer(self._node_before)
        for handler, formatter in self._handlers:
            handler.removeFilter(self._filter)
            if formatter is not None:
                handler.setFormatter(formatter)
        self._handlers.clear()
        if _active is self:
            _active = self._active_before
        provider, self.provider, self.tracer = self.provider, None, None
        provider.shutdown()

    @contextlib.contextmanager
    def node_span(self, node: str) -> Iterator[NodeRecord]:
        """The span of one graph node (`haygraph.control.graph.tracing.NodeTracer`)."""
        tracer = self.tracer
        if tracer is None:
            yield _ignore
            return
        with tracer.start_as_current_span(f"graph.{node}", attributes={"langgraph.node": node}) as span:
            yield lambda update: span.set_attributes(node_attributes(update))

    @contextlib.contextmanager
    def turn_span(
        self, name: str, *, tenant: str | None = None, question: str | None = None
    ) -> Iterator[Callable[[dict[str, Any]], None]]:
        """A span around one turn; it yields the function that records the turn's result on it."""
        if self.tracer is None:
            yield _ignore
            return
        attributes: dict[str, Any] = {}
        if tenant is not None:
            attributes["haygraph.tenant"] = tenant
        if self.content and question is not None:
            attributes["haygraph.question"] = question
        with self.tracer.start_as_current_span(name, attributes=attributes) as span:
            yield lambda result: span.set_attributes(turn_attributes(result, content=self.content))


HAYSTACK_TEXT_TAGS = frozenset({"haystack.pipeline.input_data"})
"""Tags Haystack sets as plain tags though they hold the pipeline's inputs (the query): kept only while
content tracing is on, like its content tags (`haystack.component.input`, `...output`)."""
HAYSTACK_STATIC_TAGS = frozenset(
    {
        "haystack.component.fully_qualified_type",
        "haystack.component.input_types",
        "haystack.component.input_spec",
        "haystack.component.output_spec",
        "haystack.pipeline.metadata",
    }
)
"""Tags that describe the pipeline's wiring, the same on every run (sockets' types and senders, as JSON):
left out, since they are most of the bytes of a component's span and of the time to export it."""


def _haystack_tracer(tracer: Any) -> Any:
    """The `OpenTelemetryTracer` of `opentelemetry-haystack` over `tracer`, less some of Haystack's tags.

    `HAYSTACK_STATIC_TAGS` always; `HAYSTACK_TEXT_TAGS` unless content tracing is on.
    """
    from haystack import tracing as haystack_tracing
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer

    class PrivateOpenTelemetryTracer(OpenTelemetryTracer):
        @contextlib.contextmanager
        def trace(
            self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Any = None
        ) -> Iterator[Any]:
            if tags:
                dropped = HAYSTACK_STATIC_TAGS
                if not haystack_tracing.tracer.is_content_tracing_enabled:
                    dropped = dropped | HAYSTACK_TEXT_TAGS
                tags = {k: v for k, v in tags.items() if k not in dropped}
            with super().trace(operation_name, tags=tags, parent_span=parent_span) as span:
                yield span

    return PrivateOpenTelemetryTracer(tracer)


def active() -> Tracing | None:
    """The `Tracing` that runs in this process (None: not tracing)."""
    return _active


@contextlib.contextmanager
def turn_span(
    name: str = "haygraph.turn", *, tenant: str | None = None, question: str | None = None
) -> Iterator[Callable[[dict[str, Any]], None]]:
    """A span around one turn while tracing runs (nothing otherwise); yields the result's recorder.

    The question is recorded only with `--trace-content`.
    """
    tracing = _active
    if tracing is None:
        yield _ignore
        return
    with tracing.turn_span(name, tenant=tenant, question=question) as record:
        yield record


def _decision_attributes(decision: Any) -> dict[str, Any]:
    if not isinstance(decision, dict):
        return {}
    out: dict[str, Any] = {}
    for key in ("answerable", "probability", "threshold", "margin", "margin_needed", "rule"):
        value = decision.get(key)
        if isinstance(value, bool | int | float | str):
            out[f"haygraph.decision.{key}"] = value
    if "haygraph.decision.margin" in out:
        out["haygraph.margin"] = out["haygraph.decision.margin"]
    return out


def node_attributes(update: dict[str, Any]) -> dict[str, Any]:
    """What a node's state update says, as span attributes: never a text, only kinds, counts and scores."""
    if not isinstance(update, dict):
        return {}
    out: dict[str, Any] = {}
    if isinstance(update.get("route"), str):
        out["haygraph.route"] = update["route"]
    evidence = update.get("evidence")
    if isinstance(evidence, list):
        out["haygraph.evidence.count"] = len(evidence)
    reading = update.get("reading")
    if isinstance(reading, dict) and isinstance(reading.get("margin"), int | float):
        out["haygraph.reader.margin"] = float(reading["margin"])
    if isinstance(update.get("retry_count"), int):
        out["haygraph.retry_count"] = update["retry_count"]
    if update.get("retrieval_error"):
        out["haygraph.retrieval.failed"] = True
    out.update(_decision_attributes(update.get("decision")))
    return out


def turn_attributes(result: dict[str, Any], *, content: bool = False) -> dict[str, Any]:
    """A turn's result object as span attributes: status, decision, route, margin, evidence counts.

    With `content`, the answer too.
    """
    status = str(result.get("status"))
    out: dict[str, Any] = {
        "haygraph.status": status,
        "haygraph.decision": OUTCOMES.get(status, "other"),
        "haygraph.route": str(result.get("route")),
        "haygraph.evidence.count": len(result.get("evidence") or []),
        "haygraph.evidence.cited": len(result.get("evidence_ids") or []),
        "haygraph.path": [str(n) for n in result.get("path") or []],
    }
    out.update(_decision_attributes(result.get("decision")))
    if content and isinstance(result.get("answer"), str):
        out["haygraph.answer"] = result["answer"]
    return out
