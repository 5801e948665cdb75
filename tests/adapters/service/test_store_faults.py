"""The store under a running service: a full disk during an index, a store directory that disappears."""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from haystack import Document

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.retrieval import KnowledgeBase
from haygraph.retrieval.errors import StoreError
from tests.adapters.service.server_helpers import running_server, serve_process, wait_for, wait_job_at

pytestmark = pytest.mark.integration

EXTRA = Document(
    content="Initech travel policy: the per diem is 75 francs a day.",
    meta={"source_id": "initech-travel.md", "tenant": "C"},
)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (root with mount rights); skipped with the reason where it cannot be mounted."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True, text=True
    )
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root with mount rights): {mount.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def fill(disk: Path, leave_bytes: int) -> Path:
    """Fill `disk` up to `leave_bytes` free; returns the filler file."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(free - leave_bytes, 0))
    return filler


def search_sources(url: str, query: str) -> list[str]:
    hits = httpx.post(f"{url}/v1/search", json={"query": query}, timeout=30).json()["results"]
    return [h["source"] for h in hits]


def test_disk_full_during_index_keeps_the_served_version(tenant_store: Path, small_disk: Path) -> None:
    store = small_disk / "store"
    shutil.copytree(tenant_store, store)
    settings = ServiceSettings(store_dir=store, reload_interval_s=0.2)
    with running_server(HaygraphService(settings)) as url:
        before = httpx.get(f"{url}/readyz").json()["store_version"]
        filler = fill(small_disk, 8 * 1024)
        with pytest.raises(StoreError) as failure:
            KnowledgeBase.open(store).index_documents([EXTRA])
        message = str(failure.value)
        assert "No space left on device" in message and f"the disk at {small_disk}" in message
        assert "previous version is intact" in message and "\n" not in message
        assert (store / "CURRENT").read_text().strip() == before
        assert not list(store.glob(".tmp-*"))  # nothing half-written left behind
        time.sleep(0.5)  # several reload intervals: nothing to reload
        ready = httpx.get(f"{url}/readyz").json()
        assert (ready["store_version"], ready["documents"], ready["reloads"]) == (before, 4, 0)
        assert "acme-travel.md" in search_sources(url, "Acme per diem")
        filler.unlink()  # space returns: the next write succeeds and is served
        freed = time.monotonic()
        KnowledgeBase.open(store).index_documents([EXTRA])
        assert wait_for(lambda: httpx.get(f"{url}/readyz").json()["documents"] == 5, 30)
        assert time.monotonic() - freed < 30
        assert search_sources(url, "Initech per diem francs")[0] == "initech-travel.md"


PARKING = b"# Parking\n\nStaff parking permits cost 35 euros per month at the facilities desk.\n"


def test_disk_full_during_upload_and_its_index(tenant_store: Path, small_disk: Path) -> None:
    """An upload the disk cannot take is 507 and leaves nothing; one that fits but whose index does not
    fails its job with the disk named; the served version stays; once space returns the upload works."""
    store = small_disk / "store"
    shutil.copytree(tenant_store, store)
    settings = ServiceSettings(store_dir=store, reload_interval_s=0.2)
    with running_server(HaygraphService(settings)) as url, httpx.Client(base_url=url, timeout=60) as client:
        before = client.get("/readyz").json()["store_version"]
        filler = fill(small_disk, 8 * 1024)

        refused = client.post("/v1/sources", files=[("files", ("parking.md", PARKING * 400))])
        assert refused.status_code == 507, refused.text
        error = refused.json()["error"]
        assert error["type"] == "insufficient_storage"
        assert "parking.md: not saved: no space left on the server's disk" in error["message"]
        assert str(small_disk) not in error["message"]  # the server's folders are not the client's
        assert not [p for p in (store / "uploads").rglob("*") if p.is_file() and p.name != "jobs.json"]

        accepted = client.post("/v1/sources", files=[("files", ("parking.md", PARKING))])
        assert accepted.status_code == 202, accepted.text  # the file fits; the new version does not
        job = wait_job_at(client, accepted.json()["job"]["id"])
        assert job["state"] == "failed" and "No space left on device" in job["error"], job
        assert "previous version is intact" in job["error"] and str(small_disk) not in job["error"]
        assert (store / "CURRENT").read_text().strip() == before
        assert not list(store.glob(".tmp-*"))
        ready = client.get("/readyz").json()
        assert (ready["store_version"], ready["documents"]) == (before, 4)
        assert "acme-travel.md" in search_sources(url, "Acme per diem")

        filler.unlink()  # space returns: the same upload is indexed and served
        again = client.post("/v1/sources", files=[("files", ("parking.md", PARKING))])
        assert wait_job_at(client, again.json()["job"]["id"])["state"] == "done"
        assert client.get("/readyz").json()["documents"] == 5
        assert search_sources(url, "staff parking permit cost")[0] == "parking.md"


def test_store_directory_that_disappears_keeps_serving(tenant_store: Path, tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(tenant_store, store)
    settings = ServiceSettings(store_dir=store, reload_interval_s=0.2)
    with running_server(HaygraphService(settings)) as url:
        shutil.rmtree(store)
        time.sleep(0.5)  # several reload intervals without a store
        assert httpx.get(f"{url}/readyz").status_code == 200
        assert "acme-travel.md" in search_sources(url, "Acme per diem")  # the loaded version serves on
        answer = httpx.post(f"{url}/v1/ask", json={"question": "What is the Acme per diem?"}, timeout=60)
        assert answer.status_code == 200 and answer.json()["evidence_ids"]
        shutil.copytree(tenant_store, tmp_path / "copy")
        KnowledgeBase.open(tmp_path / "copy").index_documents([EXTRA])
        (tmp_path / "copy").rename(store)  # the store comes back, with a new version
        assert wait_for(lambda: httpx.get(f"{url}/readyz").json()["documents"] == 5, 30)


def test_qdrant_local_directory_that_disappears_keeps_serving(tenant_store: Path, tmp_path: Path) -> None:
    pytest.importorskip("haystack_integrations.document_stores.qdrant")
    from haygraph.retrieval.config import RetrievalConfig, StoreConfig
    from haygraph.retrieval.qdrant import connection
    from haygraph.retrieval.qdrant.copy import copy_store

    target = StoreConfig(backend="qdrant", collection="faults", path=str(tmp_path / "qdrant"))
    config = RetrievalConfig.from_dict({"store": target.model_dump(exclude_none=True)})
    try:
        assert copy_store(tenant_store, config).documents == 4
        settings = ServiceSettings(store_dir=tmp_path / "unused", config=config, reload_interval_s=0.2)
        with running_server(HaygraphService(settings)) as url:
            shutil.rmtree(tmp_path / "qdrant")
            time.sleep(0.5)
            assert httpx.get(f"{url}/readyz").json()["documents"] == 4
            assert "acme-travel.md" in search_sources(url, "Acme per diem")
            answer = httpx.post(f"{url}/v1/ask", json={"question": "What is the Acme per diem?"}, timeout=60)
            assert answer.status_code == 200 and answer.json()["status"] == "completed"
    finally:
        connection.close_clients()


def test_a_turn_keeps_the_store_version_it_started_on(tenant_store: Path, tmp_path: Path) -> None:
    from haygraph.adapters.service.keys import ANONYMOUS

    store = tmp_path / "store"
    shutil.copytree(tenant_store, store)
    service = HaygraphService(ServiceSettings(store_dir=store, reload_interval_s=0))
    asyncio.run(service.start())  # loads the store, compiles the graphs
    assert service.knowledge is not None
    started = service.context_for(ANONYMOUS, None).retriever
    KnowledgeBase.open(store).index_documents([EXTRA])
    assert service.knowledge.reload_if_changed()
    query = "Initech per diem francs"
    assert "initech-travel.md" not in [e.source for e in started.retrieve(query, top_k=5)]  # old version
    fresh = service.context_for(ANONYMOUS, None).retriever
    assert fresh.retrieve(query, top_k=5)[0].source == "initech-travel.md"  # new turns: new version


def catalogue(parts: int) -> bytes:
    """A Markdown file of `parts` distinct sections: enough chunks that embedding them takes seconds
    (never seen before: a random tag keeps them out of the embedding cache)."""
    tag = secrets.token_hex(4)
    sections = [
        f"## Part {i}\n\n"
        + " ".join(
            f"Widget model W{i}-{j} ships with {i * 7 + j} bolts, a {j % 13 + 1}-metre cable and "
            f"a {i % 5 + 1}-year warranty from depot {tag}-{i * 31 % 97}."
            for j in range(8)
        )
        for i in range(parts)
    ]
    return ("# Widget catalogue\n\n" + "\n\n".join(sections) + "\n").encode()


def test_kill_9_of_serve_during_a_background_index(tenant_store: Path, tmp_path: Path) -> None:
    """`kill -9` of a real `haygraph serve` while an upload is being embedded: the restarted service
    serves the old version or the new one whole — never a part of the file — and reports the job failed."""
    store = tmp_path / "store"
    shutil.copytree(tenant_store, store)
    document = catalogue(160)
    with serve_process(["--store", str(store)], tmp_path / "first.log") as (proc, url):
        with httpx.Client(base_url=url, timeout=60) as client:
            upload = client.post("/v1/sources", files=[("files", ("catalogue.md", document))])
            assert upload.status_code == 202, upload.text
            job_id = upload.json()["job"]["id"]

            def embedding() -> bool:
                job = client.get(f"/v1/jobs/{job_id}").json()
                assert job["state"] != "failed", job
                return job["phase"] == "embedding" and job["done"] > 0

            assert wait_for(embedding, 120), "the job never reached the embedding phase"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    with (
        serve_process(["--store", str(store)], tmp_path / "second.log") as (_, url),
        httpx.Client(base_url=url, timeout=60) as client,
    ):
        job = client.get(f"/v1/jobs/{job_id}").json()
        assert job["state"] == "failed" and "interrupted" in job["error"], job
        chunks = client.get("/readyz").json()["documents"]
        sources = {row["id"]: row for row in client.get("/v1/sources").json()}
        if "catalogue.md" in sources:  # the new version, whole
            assert chunks == 4 + sources["catalogue.md"]["chunks"]
        else:  # the old version
            assert chunks == 4
        assert "acme-travel.md" in search_sources(url, "Acme per diem")
        again = client.post("/v1/sources", files=[("files", ("catalogue.md", document))])
        assert again.status_code == 202, again.text  # what the failed job tells the user to do
        assert wait_job_at(client, again.json()["job"]["id"], 300)["state"] == "done"
        assert search_sources(url, "Widget model W7-3 bolts")[0] == "catalogue.md"


def test_a_reload_reuses_the_loaded_query_model(tenant_store: Path, tmp_path: Path) -> None:
    """A new store version is searched with the query model already loaded, not a second copy of it."""
    from haygraph.adapters.live_knowledge import LiveKnowledgeBase

    store = tmp_path / "store"
    shutil.copytree(tenant_store, store)
    live = LiveKnowledgeBase(store, check_interval_s=0)
    live.load()  # warms up with a search: the query model is loaded
    loaded = dict(live._query_models)
    assert loaded
    KnowledgeBase.open(store).index_documents([EXTRA])
    assert live.reload_if_changed()
    assert search_hits(live, "Initech per diem francs")[0] == "initech-travel.md"
    assert live._query_models.keys() == loaded.keys()
    assert all(live._query_models[key] is model for key, model in loaded.items())


def search_hits(live: Any, query: str) -> list[str]:
    return [e.source for e in live.fresh_retriever().retrieve(query)]
