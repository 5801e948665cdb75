"""`GET /metrics`: the Prometheus figures of a running service, who may read them, and their labels.

The real service over a copy of the two-tenant store, with keys for tenants A and B and a key rate
limited to one request a minute. Requests of every kind (search, ask, a stream, an upload and its job,
401s, a 429, a 404 on an id) are made, then the text format is parsed with the client library's own
parser. Label values must stay bounded: route templates, tenants, statuses; no question text and no id.
The figures are the process's (several services in one test process add up), so each check compares
with the value before the requests.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.adapters.service.errors import ServiceConfigError
from haygraph.adapters.service.metrics import METRICS_KEY_ENV, check_access
from tests.adapters.service.server_helpers import KEY_A, KEY_B, running_server, wait_job_at

pytestmark = pytest.mark.integration

METRICS_KEY = "metrics-key-0123456789abcdef"
KEY_SLOW = "hg-test-tenant-c-000000000003"
A = {"Authorization": f"Bearer {KEY_A}"}
B = {"Authorization": f"Bearer {KEY_B}"}
SCRAPE = {"Authorization": f"Bearer {METRICS_KEY}"}
SECRET_QUESTION = "What is the per diem of the Zanzibar-quokka-7731 trip?"
CHUNK_ID = "acme-travel.md#0-unseen-id-5521"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition: (name, labels) -> value."""
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def value(found: Samples, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0 when none)."""
    want = set(labels.items())
    return sum(v for (n, ls), v in found.items() if n == name and want <= ls)


@pytest.fixture(scope="module")
def keyed_metrics(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path) -> Iterator[str]:
    """The service with `--metrics key` over a writable copy of the tenant store; its URL."""
    root = tmp_path_factory.mktemp("metrics")
    store = root / "store"
    shutil.copytree(tenant_store, store)
    keys = root / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n'
        f'"{KEY_SLOW}": {{tenant: C, requests_per_minute: 1}}\n'
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(METRICS_KEY_ENV, METRICS_KEY)
        settings = ServiceSettings(store_dir=store, api_keys=keys, metrics="key", max_in_flight=3)
        with running_server(HaygraphService(settings)) as url:
            yield url


def scrape(url: str) -> tuple[str, Samples]:
    response = httpx.get(f"{url}/metrics", headers=SCRAPE, timeout=30)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return response.text, samples(response.text)


def test_metrics_count_every_kind_of_request(keyed_metrics: str) -> None:
    url = keyed_metrics
    _, before = scrape(url)
    with httpx.Client(base_url=url, timeout=60) as client:
        assert client.post("/v1/search", json={"query": "Acme per diem"}, headers=A).status_code == 200
        ask = client.post("/v1/ask", json={"question": "What is the Acme per diem?"}, headers=A)
        assert ask.json()["status"] == "completed"
        refused = client.post("/v1/ask", json={"question": SECRET_QUESTION}, headers=B)
        assert refused.json()["status"] == "insufficient_evidence"
        with client.stream("POST", "/v1/ask/stream", json={"question": "Globex per diem?"}, headers=B) as s:
            assert s.status_code == 200 and "event: result" in s.read().decode()
        assert (
            client.post(
                "/v1/search", json={"query": "x"}, headers={"Authorization": "Bearer nope"}
            ).status_code
            == 401
        )
        assert client.get(f"/v1/evidence/{CHUNK_ID}", headers=A).status_code == 404
        slow = {"Authorization": f"Bearer {KEY_SLOW}"}
        statuses = [
            client.post("/v1/search", json={"query": "policy"}, headers=slow).status_code for _ in range(2)
        ]
        assert statuses == [200, 429]
        job = client.post(
            "/v1/sources",
            files=[("files", ("parking.md", b"# Parking\n\nLevel minus two, code 4711.\n"))],
            headers=A,
        ).json()["job"]
        assert wait_job_at(client, job["id"], headers=A)["state"] == "done"
    text, after = scrape(url)

    def grew(name: str, by: float = 1.0, **labels: str) -> bool:
        return value(after, name, **labels) - value(before, name, **labels) >= by

    requests = "haygraph_http_requests_total"
    assert grew(requests, route="/v1/search", method="POST", status="200", tenant="A")
    assert grew(requests, route="/v1/ask", method="POST", status="200", tenant="B")
    assert grew(requests, route="/v1/ask/stream", method="POST", status="200", tenant="B")
    assert grew(requests, route="/v1/search", method="POST", status="401", tenant="none")
    assert grew(requests, route="/v1/search", method="POST", status="429", tenant="C")
    assert grew(requests, route="/v1/evidence/{chunk_id:path}", method="GET", status="404", tenant="A")
    assert grew("haygraph_http_request_duration_seconds_count", route="/v1/ask/stream", method="POST")
    assert grew("haygraph_turns_total", outcome="answered", status="completed")
    assert grew("haygraph_turns_total", outcome="refused", status="insufficient_evidence")
    assert grew("haygraph_graph_node_duration_seconds_count", by=3, node="retrieve")
    assert grew("haygraph_pipeline_component_duration_seconds_count", by=1)
    assert grew("haygraph_admission_rejected_total", reason="rate_limited")
    assert grew("haygraph_index_jobs_total", kind="upload", outcome="done")
    assert grew("haygraph_index_chunks_total") and grew("haygraph_index_documents_total")
    assert grew("haygraph_index_job_duration_seconds_count", kind="upload", outcome="done")
    assert value(after, "haygraph_admission_slots") == 3
    assert value(after, "haygraph_admission_in_flight") == 0
    chunks = {t: value(after, "haygraph_store_chunks", backend="embedded", tenant=t) for t in "AB"}
    assert chunks["B"] >= 1 and chunks["A"] > chunks["B"]  # A's upload is served
    assert value(after, "process_resident_memory_bytes") > 0
    # bounded labels: no question text, no id, no path with an id, no key
    for secret in ("Zanzibar", "quokka", "unseen-id-5521", job["id"], KEY_A, "parking.md"):
        assert secret not in text
    routes = {dict(ls)["route"] for (n, ls) in after if n == requests}
    templates = set(httpx.get(f"{url}/openapi.json", timeout=30).json()["paths"]) | {"/assets", "unmatched"}
    templates |= {"/v1/evidence/{chunk_id:path}", "/v1/sources/{source_id:path}"}  # openapi drops `:path`
    templates |= {"/v1/sources/{source_id:path}/reindex"}
    assert routes <= templates, routes - templates


def test_graph_nodes_are_named_and_components_typed(keyed_metrics: str) -> None:
    _, found = scrape(keyed_metrics)
    nodes = {dict(ls)["node"] for (n, ls) in found if n == "haygraph_graph_node_duration_seconds_count"}
    assert {"analyze", "retrieve", "evaluate", "generate"} <= nodes, nodes
    components = {
        (dict(ls)["component"], dict(ls)["type"])
        for (n, ls) in found
        if n == "haygraph_pipeline_component_duration_seconds_count"
    }
    assert components and all(name != "?" and kind != "?" for name, kind in components), components


def test_metrics_key_is_required(keyed_metrics: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-key-0123456789"}, A):
        refused = httpx.get(f"{keyed_metrics}/metrics", headers=headers, timeout=30)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
        assert "HAYGRAPH_METRICS_KEY" in refused.json()["error"]["message"]


def test_metrics_off_and_loopback(tenant_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with running_server(HaygraphService(ServiceSettings(store_dir=tenant_store))) as url:
        assert httpx.get(f"{url}/metrics", timeout=30).status_code == 404  # off by default
    with running_server(HaygraphService(ServiceSettings(store_dir=tenant_store, metrics="loopback"))) as url:
        response = httpx.get(f"{url}/metrics", timeout=30)  # this client is on 127.0.0.1
        assert response.status_code == 200 and "haygraph_http_requests_total" in response.text
    assert check_access("loopback", "10.1.2.3", None) == "metrics are served to loopback clients only"
    assert check_access("loopback", "::1", None) is None
    monkeypatch.delenv(METRICS_KEY_ENV, raising=False)
    assert check_access("key", "127.0.0.1", "Bearer ") is not None  # an unset key opens nothing
    with pytest.raises(ServiceConfigError, match="HAYGRAPH_METRICS_KEY"):
        ServiceSettings(store_dir=tenant_store, metrics="key")
    monkeypatch.setenv(METRICS_KEY_ENV, "short")
    with pytest.raises(ServiceConfigError, match="at least 16"):
        ServiceSettings(store_dir=tenant_store, metrics="key")
    with pytest.raises(ServiceConfigError, match="off, loopback or key"):
        ServiceSettings(store_dir=tenant_store, metrics="on")
