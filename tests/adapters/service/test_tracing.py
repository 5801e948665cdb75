"""OpenTelemetry traces of the service and of `haygraph ask`, exported over OTLP/HTTP to a receiver here.

The real service over the two-tenant store (`--tracing`, and `--metrics loopback` so the metrics'
component timer and the tracer share Haystack's one tracer slot), exporting to an OTLP/HTTP receiver
started by the test on 127.0.0.1 (`benchmarks.otlp_receiver`: it parses the protobuf requests with
`opentelemetry-proto`). One ask must come back as one tree: the HTTP server span, the turn, the graph's
nodes, Haystack's components and the reader, each under the right parent. No question or document
text is in any span unless `--trace-content`. Every response carries `X-Trace-Id`.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from haystack import tracing as haystack_tracing

from benchmarks.otlp_receiver import OtlpReceiver, ReceivedSpan
from haygraph.adapters.cli.main import main as cli_main
from haygraph.adapters.errors import TracingConfigError
from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.adapters.service.errors import ServiceConfigError
from haygraph.adapters.tracing import (
    LOG_FORMAT,
    Tracing,
    active,
    shown_endpoint,
    tracing_requested,
    turn_span,
)
from haygraph.control.graph.tracing import node_tracer
from tests.adapters.service.server_helpers import KEY_A, TENANT_DOCS, running_server, wait_for, write_keys

pytestmark = pytest.mark.integration

A = {"Authorization": f"Bearer {KEY_A}"}
QUESTION = "What is the Acme per diem for business travel?"
SERVER = 2  # protobuf Span.SpanKind
DOCUMENT_TEXTS = [str(d.content) for d in TENANT_DOCS]


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as started:
        yield started


def _otel_env(patch: pytest.MonkeyPatch, receiver: OtlpReceiver) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_SDK_DISABLED"):
        patch.delenv(name, raising=False)
    patch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    patch.setenv("OTEL_SERVICE_NAME", "haygraph-test")
    patch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")  # ms: spans reach the receiver quickly


@pytest.fixture(scope="module")
def traced_server(
    tmp_path_factory: pytest.TempPathFactory, tenant_store: Path, receiver: OtlpReceiver
) -> Iterator[str]:
    keys = write_keys(tmp_path_factory.mktemp("trace-keys") / "keys.yaml")
    with pytest.MonkeyPatch.context() as patch:
        _otel_env(patch, receiver)
        settings = ServiceSettings(store_dir=tenant_store, api_keys=keys, tracing=True, metrics="loopback")
        with running_server(HaygraphService(settings)) as url:
            yield url


def _trace(receiver: OtlpReceiver, trace_id: str, root_name: str) -> list[ReceivedSpan]:
    """The trace's spans once its root span has arrived (it ends last)."""
    assert wait_for(lambda: any(s.name == root_name for s in receiver.trace(trace_id)), 20), root_name
    return receiver.trace(trace_id)


def _one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, (name, [s.name for s in spans])
    return found[0]


def _strings(spans: list[ReceivedSpan]) -> list[str]:
    out: list[str] = []
    for span in spans:
        for value in span.attributes.values():
            out.extend(str(v) for v in (value if isinstance(value, list) else [value]))
    return out


def _assert_one_tree(spans: list[ReceivedSpan]) -> ReceivedSpan:
    """Every span's parent is in the trace but the root's; the root."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id not in ids]
    assert len(roots) == 1, [(s.name, s.parent_id) for s in roots]
    return roots[0]


def test_one_ask_is_one_tree(traced_server: str, receiver: OtlpReceiver) -> None:
    response = httpx.post(f"{traced_server}/v1/ask", json={"question": QUESTION}, headers=A, timeout=60)
    assert response.status_code == 200, response.text
    trace_id = response.headers["X-Trace-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
    spans = _trace(receiver, trace_id, "POST /v1/ask")
    http = _one(spans, "POST /v1/ask")
    assert _assert_one_tree(spans) is http and http.parent_id == ""
    assert http.kind == SERVER
    assert http.resource["service.name"] == "haygraph-test"
    assert http.attributes["http.route"] == "/v1/ask"
    assert http.attributes["http.response.status_code"] == 200
    assert http.attributes["haygraph.tenant"] == "A"

    turn = _one(spans, "haygraph.turn")
    assert turn.parent_id == http.span_id
    result = response.json()
    assert turn.attributes["haygraph.status"] == result["status"] == "completed"
    assert turn.attributes["haygraph.decision"] == "answered"
    assert turn.attributes["haygraph.route"] == "retrieve"
    assert turn.attributes["haygraph.evidence.count"] == len(result["evidence"]) > 0
    assert turn.attributes["haygraph.margin"] == result["decision"]["margin"]

    nodes = {s.name: s for s in spans if s.name.startswith("graph.")}
    assert sorted(nodes) == sorted(f"graph.{n}" for n in result["path"])  # one span per node run
    for name in ("graph.analyze", "graph.retrieve", "graph.evaluate", "graph.generate"):
        assert nodes[name].parent_id == turn.span_id, name
    assert nodes["graph.analyze"].attributes["haygraph.route"] == "retrieve"
    assert nodes["graph.retrieve"].attributes["haygraph.evidence.count"] > 0
    assert "haygraph.decision.probability" in nodes["graph.evaluate"].attributes

    components = [s for s in spans if s.name == "haystack.component.run"]
    assert components, [s.name for s in spans]
    retrieving = {nodes["graph.retrieve"].span_id} | (
        {nodes["graph.expand"].span_id} if "graph.expand" in nodes else set()
    )
    pipelines = {s.span_id for s in spans if s.name == "haystack.pipeline.run"}
    for component in components:
        assert component.parent_id in retrieving | pipelines, component.attributes
    for pipeline in (s for s in spans if s.name == "haystack.pipeline.run"):
        assert pipeline.parent_id in retrieving
    names = {c.attributes["haystack.component.name"] for c in components}
    assert {"bm25", "dense"} <= names, names

    reader = _one(spans, "haygraph.reader")
    assert reader.parent_id == nodes["graph.evaluate"].span_id
    assert reader.attributes["haygraph.reader.items"] > 0
    assert "haygraph.reader.margin" in reader.attributes

    # the metrics' component timer still times the same components (it wraps the tracer)
    exposition = httpx.get(f"{traced_server}/metrics", timeout=30).text
    assert 'haygraph_pipeline_component_duration_seconds_count{component="bm25"' in exposition


def test_no_question_or_document_text_by_default(traced_server: str, receiver: OtlpReceiver) -> None:
    for path in ("/v1/ask", "/v1/ask/stream"):
        response = httpx.post(f"{traced_server}{path}", json={"question": QUESTION}, headers=A, timeout=60)
        assert response.status_code == 200
        root = f"POST {path}"
        spans = _trace(receiver, response.headers["X-Trace-Id"], root)
        assert _one(spans, "haygraph.turn").parent_id == _one(spans, root).span_id
        assert len(spans) > 8
        strings = _strings(spans)
        for text in [QUESTION, "per diem", "60 euros", *DOCUMENT_TEXTS]:
            assert not any(text.lower() in s.lower() for s in strings), text
        keys = {k for s in spans for k in s.attributes}
        assert not {"haystack.component.input", "haystack.component.output"} & keys
        assert not {"haystack.pipeline.input_data", "haystack.pipeline.output_data"} & keys
        assert not any(
            "haygraph.question" in s.attributes or "haygraph.answer" in s.attributes for s in spans
        )


def test_x_trace_id_on_every_response_and_incoming_context(
    traced_server: str, receiver: OtlpReceiver
) -> None:
    refused = httpx.post(f"{traced_server}/v1/ask", json={"question": QUESTION}, timeout=30)  # no key
    assert refused.status_code == 401
    spans = _trace(receiver, refused.headers["X-Trace-Id"], "POST /v1/ask")
    assert _one(spans, "POST /v1/ask").attributes["http.response.status_code"] == 401
    assert "haygraph.tenant" not in _one(spans, "POST /v1/ask").attributes

    missing = httpx.get(f"{traced_server}/v1/jobs/no-such-job-123", headers=A, timeout=30)
    assert missing.status_code == 404
    spans = _trace(receiver, missing.headers["X-Trace-Id"], "GET /v1/jobs/{job_id}")
    assert not any("no-such-job-123" in s for s in _strings(spans))  # the template, never the id

    upstream_trace, upstream_span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    headers = {**A, "traceparent": f"00-{upstream_trace}-{upstream_span}-01"}
    response = httpx.get(f"{traced_server}/v1/status", headers=headers, timeout=30)
    assert response.status_code == 200
    assert response.headers["X-Trace-Id"] == upstream_trace
    spans = _trace(receiver, upstream_trace, "GET /v1/status")
    assert _one(spans, "GET /v1/status").parent_id == upstream_span

    assert httpx.get(f"{traced_server}/healthz", timeout=30).headers["X-Trace-Id"] != upstream_trace


def test_trace_content_opt_in(tmp_path: Path, tenant_store: Path, receiver: OtlpReceiver) -> None:
    keys = write_keys(tmp_path / "keys.yaml")
    haystack_before, node_before, active_before = (
        haystack_tracing.tracer.actual_tracer,
        node_tracer(),
        active(),
    )
    inner_before = getattr(haystack_before, "inner", None)  # the metrics' timer of a running server
    with pytest.MonkeyPatch.context() as patch:
        _otel_env(patch, receiver)
        settings = ServiceSettings(store_dir=tenant_store, api_keys=keys, tracing=True, trace_content=True)
        with running_server(HaygraphService(settings)) as url:
            response = httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, headers=A, timeout=60)
            assert response.status_code == 200
            spans = _trace(receiver, response.headers["X-Trace-Id"], "POST /v1/ask")
    assert _one(spans, "haygraph.reader").attributes["haygraph.reader.question"] == QUESTION
    assert _one(spans, "haygraph.turn").attributes["haygraph.answer"] == response.json()["answer"]
    assert any("60 euros" in s for s in _strings(spans))  # Haystack's content tags: the documents
    assert any(QUESTION.rstrip("?") in s for s in _strings(spans))  # the pipeline's input data
    # after shutdown Haystack has its tracer and its content switch back, the graph its node tracer
    assert haystack_tracing.tracer.actual_tracer is haystack_before
    assert getattr(haystack_before, "inner", None) is inner_before
    assert haystack_tracing.tracer.is_content_tracing_enabled is False
    assert node_tracer() is node_before
    assert active() is active_before


def test_cli_ask_is_one_trace(
    tenant_store: Path, receiver: OtlpReceiver, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        _otel_env(patch, receiver)
        before = receiver.count()
        argv = ["ask", QUESTION, "--store", str(tenant_store), "--tenant", "A", "--json", "--tracing"]
        argv += ["--threads-db", str(tmp_path / "threads.sqlite")]
        assert cli_main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "completed"
    received = receiver.spans[before:]  # close() exported them before the command returned
    root = next(s for s in received if s.name == "haygraph ask")
    spans = receiver.trace(root.trace_id)
    assert _assert_one_tree(spans) is root
    assert root.attributes["haygraph.tenant"] == "A" and root.attributes["haygraph.decision"] == "answered"
    assert _one(spans, "graph.retrieve").parent_id == root.span_id
    assert any(s.name == "haystack.component.run" for s in spans)
    assert not any(QUESTION in s for s in _strings(spans))


def test_trace_ids_in_log_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "none")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    root = logging.getLogger()
    root.addHandler(handler)
    log = logging.getLogger("haygraph.test_tracing")
    try:
        tracing = Tracing().start()
        try:
            with turn_span("haygraph ask"):
                log.warning("inside")
            log.warning("outside")
        finally:
            tracing.close()
        log.warning("after")
    finally:
        root.removeHandler(handler)
    inside, outside, after = stream.getvalue().splitlines()
    assert re.fullmatch(r"WARNING: inside trace_id=[0-9a-f]{32} span_id=[0-9a-f]{16}", inside)
    assert outside == "WARNING: outside" and after == "WARNING: after"
    assert handler.formatter is not None and handler.formatter._fmt == LOG_FORMAT


def test_tracing_settings(tenant_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        monkeypatch.delenv(name, raising=False)
    assert not tracing_requested(False) and tracing_requested(True)
    assert tracing_requested(False, {"OTEL_TRACES_EXPORTER": "otlp"})
    assert not tracing_requested(False, {"OTEL_TRACES_EXPORTER": "none"})
    assert not tracing_requested(True, {"OTEL_SDK_DISABLED": "true"})
    with pytest.raises(ServiceConfigError, match="needs --tracing"):
        ServiceSettings(store_dir=tenant_store, trace_content=True)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ServiceConfigError, match="http/protobuf"):
        ServiceSettings(store_dir=tenant_store, tracing=True)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    with pytest.raises(TracingConfigError, match="zipkin"):
        Tracing()
    assert ServiceSettings(store_dir=tenant_store).tracing is False  # off by default


def test_the_logged_endpoint_hides_credentials() -> None:
    assert shown_endpoint("https://user:s3cret@collector.example:4318/v1/traces") == (
        "https://***@collector.example:4318/v1/traces"
    )
    assert shown_endpoint("http://127.0.0.1:4318/v1/traces") == "http://127.0.0.1:4318/v1/traces"
    described = Tracing(
        environ={"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://u:pw@otel.example"}
    ).describe()
    assert "pw" not in described and "***@otel.example" in described
