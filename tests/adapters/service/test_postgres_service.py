"""Two `haygraph serve` processes on one PostgreSQL store: an upload through one is answered by the other.

Real processes on loopback ports, the real embedding model (the session's cached handbook embeddings),
the test session's PostgreSQL server. The job an upload starts on one process is polled on the other
(jobs live in the database), the file it uploaded is re-indexed and removed through the other, tenancy
holds on both, and a stopped server is a 503 on both, then recovered from. Also the newcomer's trap:
the CLI-indexed handbook carries no tenant, so the start-up log warns that no key sees those chunks,
`/v1/status` says 0, and a key that sees nothing is told so instead of "could not find evidence".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from haygraph.retrieval.store_copy import StoreLocation, copy_store
from tests.adapters.service.server_helpers import serve_processes, wait_job_at

pytestmark = pytest.mark.integration
KEYS = {"hg-pg-acme-000000000001": {"tenant": "acme"}, "hg-pg-globex-00000000002": {"tenant": "globex"}}
ACME = {"Authorization": "Bearer hg-pg-acme-000000000001"}
GLOBEX = {"Authorization": "Bearer hg-pg-globex-00000000002"}
PARKING = b"# Parking\n\nStaff park on level minus two of the Zephyr garage; the barrier code is 4711.\n"
RELOAD_BOUND_S = 30.0
"""What docs/stores.md promises: every process answers from a new version within the reload check (2 s)
plus the time to load it (a few seconds on a busy 2-core machine)."""


def search_ids(url: str, headers: dict[str, str], query: str, mode: str | None = None) -> list[str]:
    body = {"query": query, "top_k": 5, **({"mode": mode} if mode else {})}
    response = httpx.post(f"{url}/v1/search", json=body, headers=headers, timeout=60)
    response.raise_for_status()
    return [r["source"] for r in response.json()["results"]]


def test_two_processes_share_one_store(
    handbook_store: Path, pg_settings: dict[str, Any], pgvector_cluster: Any, tmp_path: Path
) -> None:
    config = tmp_path / "pg.yaml"
    config.write_text(yaml.safe_dump({"store": pg_settings}))
    copy_store(StoreLocation(directory=handbook_store), StoreLocation.parse(config))  # 232 chunks, no tenant
    keys = tmp_path / "keys.yaml"
    keys.write_text(yaml.safe_dump(KEYS))
    args = ["--config", str(config), "--api-keys", str(keys)]
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    runs = [([*args, "--store", str(tmp_path / name)], tmp_path / f"{name}.log") for name in ("one", "two")]
    with serve_processes(runs) as [(_, one), (_, two)]:
        log = (tmp_path / "one.log").read_text()
        assert "WARNING: 232 of 232 chunks are visible to no API key (232 without a tenant)" in log
        assert "--meta tenant=*" in log
        status = httpx.get(f"{two}/v1/status", headers=ACME, timeout=30).json()
        assert status["chunks"] == 0 and status["store_version"] == "1"
        refusal = httpx.post(
            f"{two}/v1/ask", json={"question": "How many days of annual leave?"}, headers=ACME
        )
        assert refusal.json()["status"] == "insufficient_evidence"
        assert "This API key (tenant acme) can see no documents" in refusal.json()["answer"]

        with httpx.Client(base_url=one, headers=ACME, timeout=60) as client:
            job = client.post("/v1/sources", files=[("files", ("parking.md", PARKING))]).json()["job"]
        with httpx.Client(base_url=two, timeout=60) as other:  # the job is polled on the other process
            assert wait_job_at(other, job["id"], headers=ACME)["state"] == "done"
            assert other.get(f"/v1/jobs/{job['id']}", headers=GLOBEX).status_code == 404  # not its job
        uploaded = time.monotonic()
        while "parking.md" not in search_ids(two, ACME, "Zephyr garage barrier code"):
            assert time.monotonic() - uploaded < RELOAD_BOUND_S, (tmp_path / "two.log").read_text()[-2000:]
            time.sleep(0.2)
        seen_after = time.monotonic() - uploaded
        print(f"the other process answered from the new version {seen_after:.1f} s after the upload finished")
        assert httpx.get(f"{two}/v1/status", headers=ACME, timeout=30).json()["store_version"] == "2"
        assert "parking.md" in search_ids(two, ACME, "Zephyr garage barrier code", "dense")
        assert "parking.md" not in search_ids(two, GLOBEX, "Zephyr garage barrier code")  # tenancy holds
        assert "parking.md" not in search_ids(one, GLOBEX, "Zephyr garage barrier code")
        answer = httpx.post(
            f"{two}/v1/ask", json={"question": "What is the garage barrier code?"}, headers=ACME
        )
        assert "4711" in answer.json()["answer"]
        with httpx.Client(base_url=two, headers=ACME, timeout=60) as client:  # the file is in the database
            rows = {r["id"]: r for r in client.get("/v1/sources").json()}
            assert rows["parking.md"]["uploaded"] and rows["parking.md"]["bytes"] == len(PARKING)
            again = client.post("/v1/sources/parking.md/reindex").json()
        with httpx.Client(base_url=one, headers=ACME, timeout=60) as client:
            assert wait_job_at(client, again["id"], headers=ACME)["state"] == "done"
            assert client.delete("/v1/sources/parking.md").json()["removed"] == ["parking.md"]

        # PostgreSQL restarted under traffic: a clear 503 at once on every kind of search, then recovery
        dense = {"query": "Zephyr garage barrier code", "top_k": 3, "mode": "dense"}
        pgvector_cluster.stop()
        try:
            for body in (dense, {**dense, "mode": "bm25"}):
                start = time.monotonic()
                down = httpx.post(f"{two}/v1/search", json=body, headers=ACME, timeout=60)
                failed_in = time.monotonic() - start
                assert down.status_code == 503 and down.json()["error"]["type"] == "store_unavailable"
                assert "Retry-After" in down.headers and "127.0.0.1" not in down.text  # no server names leak
                assert failed_in < 10
        finally:
            pgvector_cluster.start()
        start = time.monotonic()
        while httpx.post(f"{two}/v1/search", json=dense, headers=ACME, timeout=60).status_code != 200:
            assert time.monotonic() - start < 30
            time.sleep(0.2)
        print(
            f"server down: 503 in {failed_in:.1f} s; answering again {time.monotonic() - start:.1f} s "
            "after the restart"
        )
