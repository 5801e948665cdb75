"""Websites as sources through the service: `POST /v1/sources` with a `url`, re-sync, tenants, schedule.

Real services (the real bundled embedding model) over private copies of the two-tenant store, and a
real website on 127.0.0.1 (`SiteServer` of the crawler's tests). Loopback is allowed the way an
operator allows it (`ServiceSettings.allow_private_hosts`, what `--allow-private-hosts` sets), except on
the server that checks the refusal.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from tests.adapters.service.server_helpers import (
    HEADERS,
    KEY_A,
    KEY_B,
    KEY_READER,
    running_server,
    wait_for,
    wait_job_at,
)
from tests.retrieval.test_web_sources import SiteServer, page

pytestmark = pytest.mark.integration

PARKING = "Staff parking permits at the Harbor office cost 35 euros per month."
CANTEEN = "The Harbor canteen serves lunch from 11:30 to 14:00 on weekdays."
CANTEEN_EDITED = "The Harbor canteen now serves lunch from 12:00 to 15:00, and breakfast from 8:00."


def write_keys(folder: Path) -> Path:
    keys = folder / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n"{KEY_READER}": {{tenant: A, write: false}}\n'
    )
    return keys


def store_copy(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path, name: str) -> Path:
    copy = tmp_path_factory.mktemp(name) / "store"
    shutil.copytree(tenant_store, copy)
    return copy


@pytest.fixture(scope="module")
def site() -> Iterator[SiteServer]:
    """A three-page site; /canteen.html waits for `gate` (so a test can watch a job mid-crawl)."""
    server = SiteServer()
    server.gate = threading.Event()  # type: ignore[attr-defined]
    server.html("/", page("Harbor intranet", "Start page.", ("/parking.html", "/canteen.html")))
    server.html("/parking.html", page("Parking", PARKING))
    canteen = page("Canteen", CANTEEN)

    def gated(request: BaseHTTPRequestHandler) -> None:
        server.gate.wait(30)  # type: ignore[attr-defined]
        request.reply(200, {"Content-Type": "text/html; charset=utf-8"}, server.canteen)  # type: ignore[attr-defined]

    server.canteen = canteen  # type: ignore[attr-defined]
    server.routes["/canteen.html"] = gated
    server.thread.start()
    try:
        yield server
    finally:
        server.gate.set()  # type: ignore[attr-defined]
        server.release.set()
        server.httpd.shutdown()
        server.httpd.server_close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path) -> Iterator[tuple[str, Path]]:
    """The service, loopback allowed by its operator; yields (base URL, audit file)."""
    store = store_copy(tmp_path_factory, tenant_store, "sites")
    audit = store.parent / "audit.jsonl"
    settings = ServiceSettings(
        store_dir=store,
        api_keys=write_keys(store.parent),
        audit_log=audit,
        allow_private_hosts=True,
        crawl_delay_s=0,
    )
    with running_server(HaygraphService(settings)) as url:
        yield url, audit


@pytest.fixture(scope="module")
def client(served: tuple[str, Path]) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served[0], timeout=60) as c:
        yield c


def post_site(client: httpx.Client, who: str, url: str, **extra: str) -> httpx.Response:
    return client.post("/v1/sources", headers=HEADERS[who], data={"url": url, **extra})


def index_site(client: httpx.Client, who: str, url: str) -> dict[str, Any]:
    response = post_site(client, who, url)
    assert response.status_code == 202, response.text
    job = wait_job_at(client, response.json()["job"]["id"], headers=HEADERS[who])
    assert job["state"] == "done", job
    return job


def sources_of(client: httpx.Client, who: str) -> dict[str, dict[str, Any]]:
    response = client.get("/v1/sources", headers=HEADERS[who])
    assert response.status_code == 200
    return {row["id"]: row for row in response.json()}


def search(client: httpx.Client, who: str, query: str) -> list[dict[str, Any]]:
    response = client.post("/v1/search", headers=HEADERS[who], json={"query": query, "top_k": 3})
    assert response.status_code == 200
    return response.json()["results"]  # type: ignore[no-any-return]


class TestWebsiteJobs:
    def test_a_posted_url_is_crawled_by_a_job_with_progress_into_the_tenant(
        self, client: httpx.Client, site: SiteServer
    ) -> None:
        response = post_site(client, "A", site.base + "/")
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["site"] == site.base + "/" and body["files"] == []
        job = body["job"]
        assert job["kind"] == "site" and job["files"] == [site.base + "/"]

        def crawling() -> bool:
            seen = client.get(f"/v1/jobs/{job['id']}", headers=HEADERS["A"]).json()
            return bool(seen["phase"] == "crawling" and seen["done"] >= 1 and seen["total"] >= 3)

        assert wait_for(crawling, 30)  # the canteen page holds the crawl until the gate opens
        site.gate.set()  # type: ignore[attr-defined]
        done = wait_job_at(client, job["id"], headers=HEADERS["A"])
        assert done["state"] == "done", done
        report = done["report"]
        assert (report["new"], report["changed"], report["removed"], report["failed"]) == (3, 0, 0, 0)
        rows = sources_of(client, "A")
        pages = {site.base + p for p in ("/", "/parking.html", "/canteen.html")}
        assert pages <= set(rows)
        row = rows[site.base + "/parking.html"]
        assert row["site"] == site.base + "/" and row["title"] == "Parking" and row["uploaded"] is False
        assert row["sync"]["new"] == 3 and row["sync"]["state"] == "done" and row["sync"]["kind"] == "site"
        assert rows["acme-travel.md"]["site"] is None and rows["acme-travel.md"]["sync"] is None
        hits = search(client, "A", "How much is a staff parking permit?")
        assert hits[0]["source"] == site.base + "/parking.html"

    def test_posting_the_url_again_resyncs_it(self, client: httpx.Client, site: SiteServer) -> None:
        report = index_site(client, "A", site.base + "/")["report"]
        assert (report["new"], report["changed"], report["unchanged"], report["removed"]) == (0, 0, 3, 0)
        assert report["chunks"] == 0  # equal content hashes: nothing converted or embedded again
        site.canteen = page("Canteen", CANTEEN_EDITED)  # type: ignore[attr-defined]
        del site.routes["/parking.html"]  # now 404
        report = index_site(client, "A", site.base + "/")["report"]
        assert (report["new"], report["changed"], report["unchanged"]) == (0, 1, 1)
        assert report["removed_pages"] == {site.base + "/parking.html": "HTTP 404"}
        rows = sources_of(client, "A")
        assert site.base + "/parking.html" not in rows
        assert rows[site.base + "/canteen.html"]["sync"]["changed"] == 1
        hits = search(client, "A", "When is breakfast served in the Harbor canteen?")
        assert hits[0]["source"] == site.base + "/canteen.html" and "breakfast" in hits[0]["text"]

    def test_reindex_of_a_page_resyncs_its_site(self, client: httpx.Client, site: SiteServer) -> None:
        page_id = quote(site.base + "/canteen.html", safe="")
        response = client.post(f"/v1/sources/{page_id}/reindex", headers=HEADERS["A"])
        assert response.status_code == 202, response.text
        job = wait_job_at(client, response.json()["id"], headers=HEADERS["A"])
        assert job["state"] == "done" and job["kind"] == "site" and job["files"] == [site.base + "/"]
        assert job["report"]["unchanged"] == 2

    def test_another_tenant_neither_sees_nor_resyncs_the_site(
        self, client: httpx.Client, site: SiteServer
    ) -> None:
        a_rows = sources_of(client, "A")
        a_sync = a_rows[site.base + "/"]["sync"]
        assert not any(row.startswith(site.base) for row in sources_of(client, "B"))
        assert search(client, "B", "Harbor canteen lunch") == [] or all(
            not h["source"].startswith(site.base) for h in search(client, "B", "Harbor canteen lunch")
        )
        page_id = quote(site.base + "/canteen.html", safe="")
        assert client.post(f"/v1/sources/{page_id}/reindex", headers=HEADERS["B"]).status_code == 404
        assert client.delete(f"/v1/sources/{page_id}", headers=HEADERS["B"]).status_code == 404
        assert client.get(f"/v1/jobs/{a_sync['job']}", headers=HEADERS["B"]).status_code == 404
        # B posting the same URL indexes B's own copy: every page new for B, A's copy untouched
        report = index_site(client, "B", site.base + "/")["report"]
        assert report["new"] == 2 and report["unchanged"] == 0
        b_rows = sources_of(client, "B")
        assert b_rows[site.base + "/canteen.html"]["sync"]["job"] != a_sync["job"]
        after = sources_of(client, "A")
        assert after[site.base + "/"]["sync"] == a_sync
        assert {k: v["chunks"] for k, v in after.items()} == {k: v["chunks"] for k, v in a_rows.items()}

    def test_a_read_only_key_and_bad_urls_are_refused(self, client: httpx.Client, site: SiteServer) -> None:
        assert post_site(client, "reader", site.base + "/").status_code == 403
        for bad in (
            "javascript:alert(1)",
            "file:///etc/passwd",
            "ftp://127.0.0.1/",
            "http://",
            "http://u:p@x/",
        ):
            response = post_site(client, "A", bad)
            assert response.status_code == 400, (bad, response.text)
            assert response.json()["error"]["type"] == "invalid_request"
        both = client.post(
            "/v1/sources",
            headers=HEADERS["A"],
            data={"url": site.base + "/"},
            files={"files": ("a.md", b"# A\n\ntext\n")},
        )
        assert both.status_code == 400
        neither = client.post("/v1/sources", headers=HEADERS["A"], data={"x": "1"})
        assert neither.status_code == 422 and "form field `url`" in neither.json()["error"]["message"]

    def test_posts_and_jobs_are_in_the_audit_trail(self, served: tuple[str, Path], site: SiteServer) -> None:
        lines = [json.loads(line) for line in served[1].read_text().splitlines() if line.strip()]
        posts = [e for e in lines if e["action"] == "site"]
        assert any(
            e["outcome"] == "accepted" and e["object"] == [site.base + "/"] and e["tenant"] == "A"
            for e in posts
        )
        assert any(
            e["outcome"] == "refused" and e["status"] == 400 and e["object"] == ["ftp://127.0.0.1/"]
            for e in posts
        )
        # a read-only key is refused before its body is read: the line says upload, refused, 403
        assert any(e["action"] == "upload" and e["status"] == 403 and e["tenant"] == "A" for e in lines)
        jobs = [e for e in lines if e["action"] == "index" and e.get("kind") == "site"]
        assert {e["tenant"] for e in jobs} == {"A", "B"} and all(e["outcome"] == "done" for e in jobs)


def test_a_private_host_is_refused_without_the_operators_flag(
    tmp_path_factory: pytest.TempPathFactory, tenant_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS", raising=False)
    store = store_copy(tmp_path_factory, tenant_store, "private")
    settings = ServiceSettings(store_dir=store, api_keys=write_keys(store.parent))
    local = SiteServer()
    local.html("/", page("Internal", "Internal admin page."))
    local.thread.start()
    try:
        with running_server(HaygraphService(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
            port = local.base.rsplit(":", 1)[1]
            for target in (local.base + "/", f"http://localhost:{port}/", f"http://[::1]:{port}/"):
                # a request cannot grant itself what only the operator can
                response = post_site(c, "A", target, allow_private_hosts="1")
                assert response.status_code == 400, response.text
                message = response.json()["error"]["message"]
                assert "loopback" in message and "--allow-private-hosts" in message
            assert local.requests == []
    finally:
        local.httpd.shutdown()
        local.httpd.server_close()


def test_the_schedule_resyncs_a_changed_page(
    tmp_path_factory: pytest.TempPathFactory, tenant_store: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = store_copy(tmp_path_factory, tenant_store, "schedule")
    settings = ServiceSettings(
        store_dir=store,
        api_keys=write_keys(store.parent),
        allow_private_hosts=True,
        crawl_delay_s=0,
        resync_every_s=1.0,
    )
    local = SiteServer()
    local.html("/", page("Harbor notices", "Notices.", ("/notice.html",)))
    local.html("/notice.html", page("Notice", "The Harbor ferry leaves at 7:15 every morning."))
    local.thread.start()
    caplog.set_level(logging.INFO, logger="haygraph.adapters.service.documents")
    try:
        with running_server(HaygraphService(settings)) as url, httpx.Client(base_url=url, timeout=60) as c:
            first = index_site(c, "A", local.base + "/")
            assert first["report"]["new"] == 2
            local.html("/notice.html", page("Notice", "The Harbor ferry now leaves at 6:45 every morning."))

            seen: dict[str, Any] = {}

            def resynced() -> bool:  # the schedule's report, as the page's row shows it
                seen.update(sources_of(c, "A")[local.base + "/notice.html"]["sync"])
                return bool(seen["kind"] == "resync" and seen["changed"] == 1)

            assert wait_for(resynced, 60), seen
            sync = seen
            assert (sync["state"], sync["new"], sync["unchanged"], sync["removed"], sync["failed"]) == (
                "done",
                0,
                1,
                0,
                0,
            )
            hits = search(c, "A", "When does the Harbor ferry leave?")
            assert hits[0]["source"] == local.base + "/notice.html" and "6:45" in hits[0]["text"]
            assert not any(r.startswith(local.base) for r in sources_of(c, "B"))
    finally:
        local.httpd.shutdown()
        local.httpd.server_close()
    logged = [r.getMessage() for r in caplog.records if "re-synced" in r.getMessage()]
    assert any(f"{local.base}/ (tenant A) re-synced: 0 new, 1 changed" in line for line in logged), logged
