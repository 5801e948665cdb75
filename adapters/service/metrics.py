"""Prometheus metrics of `haygraph serve`, with the official `prometheus-client`.

`GET /metrics` answers the text exposition format when `--metrics` allows it (`settings.metrics`):
`off` (the default: no route), `loopback` (open to clients on 127.0.0.1 / ::1 only), `key` (a bearer
key from the environment variable `HAYGRAPH_METRICS_KEY`, separate from the API keys). Each `serve`
process keeps its own figures and is scraped on its own (one target per process, see
docs/operations.md); nothing is shared between processes.

What is measured (every label takes a bounded set of values: route templates, never paths with ids;
tenants from the keys file; enum statuses; component and node names from the code. No question text,
no chunk, thread, job or source id is ever a label):

- `haygraph_http_requests_total{route,method,status,tenant}` and
  `haygraph_http_request_duration_seconds{route,method,status}` (`MetricsMiddleware`, outermost: 401s, 413s
  and 429s included; a stream counts until its last byte);
- `haygraph_graph_node_duration_seconds{node}`: each graph node's time in a turn (the turn's own
  `timings_ms`, summed when a node ran more than once);
- `haygraph_pipeline_component_duration_seconds{component,type}`: each Haystack component's run
  (`ComponentTimer`, a Haystack tracer; it passes spans on to a tracer that was enabled before it);
- `haygraph_turns_total{outcome,status}`: `answered` (completed), `refused` (insufficient_evidence,
  rejected), `degraded`, `needs_clarification`, `needs_confirmation`;
- `haygraph_admission_*`: slots and slots in use, queue limit and depth, and
  `haygraph_admission_rejected_total{reason}` (`overloaded`, `rate_limited`: the 429s);
- `haygraph_index_jobs_total{kind,outcome}`, `haygraph_index_job_duration_seconds{kind,outcome}`,
  `haygraph_index_documents_total`, `haygraph_index_chunks_total`, `haygraph_index_embedded_total`;
- `haygraph_store_chunks{backend,tenant}`: chunks of the served store version per tenant (`none`: no
  tenant, `shared`: every tenant's);
- `haygraph_database_up{database}` (`store`, `threads`: the last readiness probe or request),
  `haygraph_database_connections_total{database}` (connections opened: reconnects after the first),
  `haygraph_database_connection_errors_total{database}`, `haygraph_database_connections_lost_total`;
- the client library's process and Python collectors (CPU, memory, open files, GC).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import time
import weakref
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from haystack import tracing
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Receive, Scope, Send

from haygraph.adapters.service.asgi import RouteTemplates, StatusRecorder
from haygraph.control.outcomes import OUTCOMES

if TYPE_CHECKING:
    from haygraph.adapters.service.service import HaygraphService

METRICS_KEY_ENV = "HAYGRAPH_METRICS_KEY"
"""The environment variable holding the bearer key of `GET /metrics` with `--metrics key`."""
LOOPBACK = frozenset({"127.0.0.1", "::1"})

disable_created_metrics()  # no `*_created` series: they double the output and nobody queries them here
REGISTRY = CollectorRegistry()
"""The service's registry (not the library's global one, so importing it registers nothing elsewhere)."""
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_STEP = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_JOB = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)

REQUESTS = Counter(
    "haygraph_http_requests",
    "HTTP requests answered, by route template, method, status code and the caller's tenant",
    ["route", "method", "status", "tenant"],
    registry=REGISTRY,
)
REQUEST_SECONDS = Histogram(
    "haygraph_http_request_duration_seconds",
    "Time from a request's arrival to its response's last byte",
    ["route", "method", "status"],
    buckets=_LATENCY,
    registry=REGISTRY,
)
NODE_SECONDS = Histogram(
    "haygraph_graph_node_duration_seconds",
    "Time in each graph node per turn (summed when the node ran more than once)",
    ["node"],
    buckets=_STEP,
    registry=REGISTRY,
)
COMPONENT_SECONDS = Histogram(
    "haygraph_pipeline_component_duration_seconds",
    "Time of each Haystack pipeline component's run",
    ["component", "type"],
    buckets=_STEP,
    registry=REGISTRY,
)
TURNS = Counter(
    "haygraph_turns",
    "Turns ended, by outcome (answered, refused, degraded, needs_*) and the result's status",
    ["outcome", "status"],
    registry=REGISTRY,
)
INDEX_JOBS = Counter(
    "haygraph_index_jobs",
    "Indexing jobs ended (upload, reindex), by outcome (done, failed)",
    ["kind", "outcome"],
    registry=REGISTRY,
)
INDEX_JOB_SECONDS = Histogram(
    "haygraph_index_job_duration_seconds",
    "Time of an indexing job from its start to its end",
    ["kind", "outcome"],
    buckets=_JOB,
    registry=REGISTRY,
)
INDEX_DOCUMENTS = Counter(
    "haygraph_index_documents", "Source documents (files, pages) indexed by jobs", registry=REGISTRY
)
INDEX_CHUNKS = Counter("haygraph_index_chunks", "Chunks written by indexing jobs", registry=REGISTRY)
INDEX_EMBEDDED = Counter(
    "haygraph_index_embedded", "Chunks embedded by indexing jobs (not found in the cache)", registry=REGISTRY
)
DATABASE_UP = Gauge(
    "haygraph_database_up",
    "Whether the database answered the last readiness probe or request (1) or not (0)",
    ["database"],
    registry=REGISTRY,
)


def observe_turn(result: dict[str, Any]) -> None:
    """Count a turn's outcome and observe its nodes' times (its `timings_ms`)."""
    status = str(result.get("status"))
    status = status if status in OUTCOMES else "other"
    TURNS.labels(OUTCOMES.get(status, "other"), status).inc()
    for node, ms in (result.get("timings_ms") or {}).items():
        if node != "total" and isinstance(ms, int | float):
            NODE_SECONDS.labels(str(node)).observe(float(ms) / 1000.0)


def observe_job(kind: str, outcome: str, seconds: float, report: dict[str, Any] | None) -> None:
    """Count an indexing job that ended, its time and (when done) its documents and chunks."""
    INDEX_JOBS.labels(kind, outcome).inc()
    INDEX_JOB_SECONDS.labels(kind, outcome).observe(max(seconds, 0.0))
    if report:
        INDEX_DOCUMENTS.inc(int(report.get("sources") or 0))
        INDEX_CHUNKS.inc(int(report.get("chunks") or 0))
        INDEX_EMBEDDED.inc(int(report.get("embedded") or 0))


def set_database_up(database: str, up: bool) -> None:
    """Record whether `database` (`store` or `threads`) answered."""
    DATABASE_UP.labels(database).set(1.0 if up else 0.0)


def tenant_label(tenant: str | None) -> str:
    """The tenant as a label value: `none` without one, `shared` for the documents every tenant sees."""
    from haygraph.adapters.tenancy import SHARED_TENANT

    if tenant is None:
        return "none"
    return "shared" if tenant == SHARED_TENANT else tenant


class ServiceCollector(Collector):
    """The figures read from the live service at scrape time: admission, chunks, database pools."""

    def __init__(self) -> None:
        self._service: weakref.ReferenceType[HaygraphService] | None = None

    def bind(self, service: HaygraphService) -> None:
        """Report `service` (the process's service; a test process's latest one)."""
        self._service = weakref.ref(service)

    def collect(self) -> Iterable[Metric]:
        """Yield the metric families (nothing before a service is bound)."""
        service = self._service() if self._service is not None else None
        if service is None:
            return
        yield from _admission(service)
        yield from _chunks(service)
        yield from _pools(service)


def _admission(service: HaygraphService) -> Iterator[Metric]:
    admission, stats = service.admission, service.admission.stats
    for name, text, value in (
        ("slots", "Requests that may work at once (--max-in-flight)", admission.max_in_flight),
        ("in_flight", "Working requests holding a slot", stats.in_flight),
        ("queue_limit", "Requests that may wait for a slot (--max-queue)", admission.max_queue),
        ("queue_depth", "Requests waiting for a slot", stats.waiting),
    ):
        name = f"haygraph_admission_{name}"
        yield GaugeMetricFamily(name, text, value=float(value))
    rejected = CounterMetricFamily(
        "haygraph_admission_rejected", "Requests answered 429, by reason", labels=["reason"]
    )
    rejected.add_metric(["overloaded"], float(stats.rejected))
    rejected.add_metric(["rate_limited"], float(stats.rate_limited))
    yield rejected


def _chunks(service: HaygraphService) -> Iterator[Metric]:
    family = GaugeMetricFamily(
        "haygraph_store_chunks", "Chunks of the served store version per tenant", labels=["backend", "tenant"]
    )
    documents, knowledge = service.documents, service.knowledge
    if documents is not None and knowledge is not None and knowledge.ready:
        backend = knowledge.current.kb.config.store.backend
        with contextlib.suppress(Exception):  # the store unreachable: no figure rather than a failed scrape
            for tenant, count in sorted(documents.tenant_chunks().items(), key=lambda kv: str(kv[0])):
                family.add_metric([backend, tenant_label(tenant)], float(count))
    yield family


def _pools(service: HaygraphService) -> Iterator[Metric]:
    labels = ["database"]
    opened = CounterMetricFamily(
        "haygraph_database_connections", "Connections opened (reconnects after the first)", labels=labels
    )
    errors = CounterMetricFamily(
        "haygraph_database_connection_errors", "Failed attempts to connect", labels=labels
    )
    lost = CounterMetricFamily(
        "haygraph_database_connections_lost", "Pooled connections found broken and replaced", labels=labels
    )
    for database, stats in service.pool_stats().items():
        opened.add_metric([database], float(stats.get("connections_num", 0)))
        errors.add_metric([database], float(stats.get("connections_errors", 0)))
        lost.add_metric([database], float(stats.get("connections_lost", 0)))
    yield from (opened, errors, lost)


SERVICE_COLLECTOR = ServiceCollector()
REGISTRY.register(SERVICE_COLLECTOR)


def exposition() -> tuple[bytes, str]:
    """The current figures in the text format, and its content type."""
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def check_access(mode: str, client_host: str | None, authorization: str | None) -> str | None:
    """Why `GET /metrics` is refused to this client under `mode` (None: allowed).

    `loopback`: only 127.0.0.1 / ::1. `key`: `Authorization: Bearer <HAYGRAPH_METRICS_KEY>` (compared in
    constant time); an unset variable refuses everyone rather than opening the route.
    """
    if mode == "loopback":
        return None if client_host in LOOPBACK else "metrics are served to loopback clients only"
    if mode == "key":
        expected = os.environ.get(METRICS_KEY_ENV, "")
        scheme, _, given = (authorization or "").partition(" ")
        if expected and scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), expected):
            return None
        return f"metrics need the key in {METRICS_KEY_ENV} as a bearer token"
    return "metrics are off"


class MetricsMiddleware:
    """Counts and times every HTTP request by route template, method, status and tenant (outermost)."""

    def __init__(self, app: ASGIApp, routes: Any) -> None:
        self.app = app
        self.templates = RouteTemplates(routes)
        """A request's route template (`/v1/jobs/{job_id}`, not the id)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; count it once its response has ended (or failed)."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        recorder = StatusRecorder(send)
        try:
            await self.app(scope, receive, recorder)
        finally:
            status = recorder.status
            route, method = self.templates.of(scope), scope["method"]
            caller = (scope.get("state") or {}).get("caller")
            tenant = tenant_label(caller.tenant) if caller is not None else "none"
            REQUESTS.labels(route, method, str(status), tenant).inc()
            REQUEST_SECONDS.labels(route, method, str(status)).observe(time.perf_counter() - start)


class ComponentTimer(tracing.Tracer):
    """A Haystack tracer that times each component run (`haystack.component.run` spans).

    Other spans are passed to the tracer that was enabled before (an OpenTelemetry one, say), whose
    spans it returns, so enabling metrics changes no trace.
    """

    def __init__(self, inner: tracing.Tracer) -> None:
        self.inner = inner

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: tracing.Span | None = None
    ) -> Iterator[tracing.Span]:
        """Time the span when it is a component's run; delegate it either way."""
        if operation_name != "haystack.component.run":
            with self.inner.trace(operation_name, tags=tags, parent_span=parent_span) as span:
                yield span
            return
        start = time.perf_counter()
        try:
            with self.inner.trace(operation_name, tags=tags, parent_span=parent_span) as span:
                yield span
        finally:
            tags = tags or {}
            COMPONENT_SECONDS.labels(
                str(tags.get("haystack.component.name", "?")), str(tags.get("haystack.component.type", "?"))
            ).observe(time.perf_counter() - start)

    def current_span(self) -> tracing.Span | None:
        """The inner tracer's current span."""
        return self.inner.current_span()


def enable_component_timing() -> None:
    """Time Haystack components from now on in this process (idempotent)."""
    current = tracing.tracer.actual_tracer
    if not isinstance(current, ComponentTimer):
        tracing.enable_tracing(ComponentTimer(current))


def disable_component_timing() -> None:
    """Give Haystack back the tracer it had before `enable_component_timing` (the app's shutdown calls it).

    Without it, an app started in a process that goes on (tests, an embedding program) would leave
    Haystack's tracing on for everything after it.
    """
    current = tracing.tracer.actual_tracer
    if isinstance(current, ComponentTimer):
        tracing.tracer.actual_tracer = current.inner
