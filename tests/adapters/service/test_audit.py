"""The audit trail (`--audit-log`): a line per write, refused ones too; asks; `haygraph audit`; kill -9.

The real service over a writable copy of the two-tenant store, with keys for tenants A and B and a
read-only key. Every write request below (accepted or refused at any stage: key, right, file, id) must
leave exactly one line of its action, and each indexing job one `index` line. A writer killed with
SIGKILL in the middle of writing leaves whole lines only, and no line crosses a 4 KiB page.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.adapters.service.audit import MAX_LINE_BYTES, PAGE_BYTES, AuditLog
from tests.adapters.service.server_helpers import KEY_A, KEY_B, running_server, wait_job_at

pytestmark = pytest.mark.integration

KEY_READER = "hg-test-tenant-a-reader-000003"
A = {"Authorization": f"Bearer {KEY_A}"}
B = {"Authorization": f"Bearer {KEY_B}"}
READER = {"Authorization": f"Bearer {KEY_READER}"}
QUESTION = "What is the Acme per diem for business travel?"
PARKING = b"# Parking\n\nStaff park on level minus two; the barrier code is 4711.\n"


def lines(path: Path) -> list[dict[str, Any]]:
    """Every non-blank line of an audit file, parsed (a torn line fails the test here)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def audited(tenant_store: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The service with `--audit-log` over a writable copy of the tenant store; (URL, audit file)."""
    store = tmp_path / "store"
    shutil.copytree(tenant_store, store)
    keys = tmp_path / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n"{KEY_READER}": {{tenant: A, write: false}}\n'
    )
    audit = tmp_path / "audit" / "audit.jsonl"
    settings = ServiceSettings(store_dir=store, api_keys=keys, audit_log=audit)
    with running_server(HaygraphService(settings)) as url:
        yield url, audit


def test_every_write_leaves_exactly_one_line(audited: tuple[str, Path]) -> None:
    url, audit = audited
    expected: Counter[str] = Counter()
    with httpx.Client(base_url=url, timeout=60) as client:

        def write(action: str, method: str, path: str, headers: dict[str, str], **kw: Any) -> httpx.Response:
            expected[action] += 1
            return client.request(method, path, headers=headers, **kw)

        upload = write("upload", "POST", "/v1/sources", A, files=[("files", ("parking.md", PARKING))])
        assert upload.status_code == 202
        assert wait_job_at(client, upload.json()["job"]["id"], headers=A)["state"] == "done"
        assert (
            write("upload", "POST", "/v1/sources", A, files=[("files", ("x.exe", b"MZ\0"))]).status_code
            == 400
        )
        assert (
            write("upload", "POST", "/v1/sources", READER, files=[("files", ("r.md", b"# r\n"))]).status_code
            == 403
        )
        nokey = {"Authorization": "Bearer hg-wrong-key-000000000"}
        assert (
            write("upload", "POST", "/v1/sources", nokey, files=[("files", ("n.md", b"# n\n"))]).status_code
            == 401
        )
        again = write("reindex", "POST", "/v1/sources/parking.md/reindex", A)
        assert again.status_code == 202
        assert wait_job_at(client, again.json()["id"], headers=A)["state"] == "done"
        assert write("reindex", "POST", "/v1/sources/acme-travel.md/reindex", A).status_code == 409
        assert write("delete", "DELETE", "/v1/sources/globex-travel.md", A).status_code == 404  # B's
        assert write("delete", "DELETE", "/v1/sources/parking.md", READER).status_code == 403
        assert write("delete", "DELETE", "/v1/sources/parking.md", A).status_code == 200
        assert (
            write("confirm", "POST", "/v1/threads/t1/confirm", A, json={"approve": True}).status_code == 409
        )
        for path, body in (
            ("/v1/ask", {"question": QUESTION, "thread_id": "t1"}),
            ("/v1/ask/stream", {"question": QUESTION}),
            (
                "/v1/chat/completions",
                {"model": "haygraph", "messages": [{"role": "user", "content": QUESTION}]},
            ),
        ):
            expected["ask"] += 1
            assert client.post(path, json=body, headers=B).status_code == 200
        expected["ask"] += 1
        assert client.post("/v1/ask", json={"question": QUESTION}).status_code == 401
        client.get("/v1/sources", headers=A)  # reads leave no line
        client.get("/readyz")
    time.sleep(0.2)
    found = lines(audit)
    expected["index"] = 2  # the upload's and the reindex's jobs
    assert Counter(e["action"] for e in found) == expected
    uploads = [e for e in found if e["action"] == "upload"]
    assert [(e["status"], e["outcome"]) for e in uploads] == [
        (202, "accepted"),
        (400, "refused"),
        (403, "refused"),
        (401, "refused"),
    ]
    assert uploads[0]["object"] == ["parking.md"] and uploads[0]["tenant"] == "A"
    assert uploads[1]["object"] == ["x.exe"] and uploads[3]["actor"] == "unauthenticated"
    assert uploads[3]["tenant"] is None
    assert uploads[2]["actor"].startswith("key:") and uploads[0]["actor"] != uploads[2]["actor"]
    delete = [e for e in found if e["action"] == "delete"]
    assert [(e["object"], e["status"]) for e in delete] == [
        ("globex-travel.md", 404),
        ("parking.md", 403),
        ("parking.md", 200),
    ]
    assert delete[2]["outcome"] == "removed"
    index = [e for e in found if e["action"] == "index"]
    assert {e["outcome"] for e in index} == {"done"} and index[0]["actor"] == uploads[0]["actor"]
    asks = [e for e in found if e["action"] == "ask"]
    assert [e["outcome"] for e in asks[:3]] == ["completed"] * 3 and all(e["evidence_ids"] for e in asks[:3])
    assert asks[0]["thread"] == "t1" and asks[3]["status"] == 401
    text = audit.read_text()
    assert "per diem" not in text  # questions only with --audit-questions
    assert KEY_A not in text and KEY_READER not in text  # never a key

    # haygraph audit filters by tenant, action and time
    def cli(*args: str) -> list[dict[str, Any]]:
        done = subprocess.run(
            [sys.executable, "-m", "haygraph.adapters.cli", "audit", str(audit), "--json", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    assert len(cli("--tenant", "A", "--action", "upload")) == 3
    assert len(cli("--action", "delete", "--action", "reindex")) == 5
    assert len(cli("--tenant", "B")) == 3
    assert cli("--since", "2999-01-01") == [] and len(cli("--since", "1h")) == len(found)
    table = subprocess.run(
        [sys.executable, "-m", "haygraph.adapters.cli", "audit", str(audit), "--action", "delete"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.stdout.count("\n") == 3 and "object=globex-travel.md" in table.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "haygraph.adapters.cli", "audit", str(audit), "--since", "yesterday"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "--since/--until" in bad.stderr


def test_questions_only_when_opted_in_and_long_lines_fit(tmp_path: Path) -> None:
    kept = AuditLog(tmp_path / "q.jsonl", questions=True)
    kept.record("ask", actor="key:1", tenant="A", outcome="completed", question="Wie hoch ist das Tagegeld?")
    kept.record(
        "ask",
        actor="key:1",
        tenant="A",
        outcome="completed",
        evidence_ids=[f"doc-{i}" * 20 for i in range(500)],
    )
    kept.close()
    found = lines(tmp_path / "q.jsonl")
    assert found[0]["question"] == "Wie hoch ist das Tagegeld?"
    assert found[1]["truncated"] is True and 0 < len(found[1]["evidence_ids"]) < 500
    assert all(
        len(line.encode()) + 1 <= MAX_LINE_BYTES for line in (tmp_path / "q.jsonl").read_text().splitlines()
    )


WRITER = """
import sys
from haygraph.adapters.service.audit import AuditLog
log = AuditLog(sys.argv[1])
print("ready", flush=True)
n = 0
while True:
    n += 1
    log.record("upload", actor="key:abc", tenant="A", outcome="accepted", object=["f" * (n * 37 % 3900)], n=n)
"""


def test_kill_9_mid_write_leaves_no_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    for trial in range(4):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.05 * trial)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = path.read_bytes()
        assert data.endswith(b"\n")
        found = lines(path)  # every line whole JSON
        assert found and all(e["action"] == "upload" for e in found)
        offset = 0
        for raw in data.split(b"\n")[:-1]:  # no line crosses a page boundary
            if raw:
                assert offset // PAGE_BYTES == (offset + len(raw)) // PAGE_BYTES, (trial, offset, len(raw))
            offset += len(raw) + 1
    print(f"{len(lines(path))} whole lines after 4 kills, {path.stat().st_size} bytes")


def test_a_torn_tail_is_cut_on_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "audit.jsonl"
    path.write_bytes(b'{"action": "upload", "n": 1}\n{"action": "upl')
    log = AuditLog(path)
    log.record("delete", actor="key:1", tenant="A", outcome="removed", object="a.md")
    log.close()
    assert [e["action"] for e in lines(path)] == ["upload", "delete"]
    assert "torn line" in caplog.text
    log.record("delete", actor="key:1", tenant="A", outcome="removed")  # closed: logged, not written
    assert len(lines(path)) == 2


def test_the_table_escapes_hostile_names(tmp_path: Path) -> None:
    """A refused upload's name is the client's: in the table it cannot move the cursor or flip text."""
    log = AuditLog(tmp_path / "a.jsonl")
    log.record(
        "upload", actor="key:1", tenant="A", outcome="refused", status=400, object=["x\x1b[2J\u202eevil.md"]
    )
    log.close()
    table = subprocess.run(
        [sys.executable, "-m", "haygraph.adapters.cli", "audit", str(tmp_path / "a.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0 and "\x1b" not in table.stdout and "\u202e" not in table.stdout
    assert "x\\u001b[2J\\u202eevil.md" in table.stdout
