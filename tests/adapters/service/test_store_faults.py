"""The store under a running service: a full disk during an index, a store directory that disappears."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from haystack import Document

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.retrieval import KnowledgeBase
from haygraph.retrieval.errors import StoreError
from tests.adapters.service.server_helpers import running_server, wait_for

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
