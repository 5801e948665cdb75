"""Pure parts of the documents feature: upload names, quote offsets, zip sizes, write routes, source rows."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from haystack import Document

from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.service.app import is_document_write
from haygraph.adapters.service.citations import locate_quote
from haygraph.adapters.service.documents import (
    INTERRUPTED,
    JOBS_FILE,
    UPLOADS_DIR,
    DocumentManager,
    IndexJob,
    UploadRefused,
    check_upload_name,
    source_rows,
    tenant_folder_name,
)
from haygraph.adapters.service.errors import NotFoundError
from haygraph.adapters.service.keys import Caller, parse_api_keys
from haygraph.retrieval.errors import UnreadableFileError
from haygraph.retrieval.office_formats import check_unpacked_size
from haygraph.retrieval.store import EmbeddedDocumentStore


class TestUploadNames:
    @pytest.mark.parametrize("name", ["leave-policy.md", "Q3 report.docx", "休假制度.pdf", "a.b.TXT"])
    def test_plain_names_pass(self, name: str) -> None:
        assert check_upload_name(name) == name

    @pytest.mark.parametrize(
        ("name", "reason"),
        [
            ("../x.md", "without folders"),
            ("/abs/x.md", "without folders"),
            ("a\\b.md", "without folders"),
            ("a\x00.md", "control characters"),
            ("a\u200b.md", "control characters"),
            ("..", "hidden"),
            (".env.md", "hidden"),
            (" x.md", "spaces"),
            ("", "no name"),
            (None, "no name"),
            ("x" * 250 + ".md", "longer than"),
            ("run.sh", "unsupported file type '.sh'"),
        ],
    )
    def test_refused(self, name: object, reason: str) -> None:
        with pytest.raises(UploadRefused, match=reason):
            check_upload_name(name)

    def test_tenant_folders_are_digests(self) -> None:
        assert tenant_folder_name(None) == "_shared"
        assert tenant_folder_name("../../etc").startswith("t-") and "/" not in tenant_folder_name("a/b")
        assert tenant_folder_name("A") != tenant_folder_name("B")


class TestLocateQuote:
    TEXT = "# Leave\n\nDuring probation you may take at most **3 days** of annual leave\nbefore it ends."

    def test_verbatim(self) -> None:
        start, end = locate_quote(self.TEXT, "During probation") or (0, 0)
        assert self.TEXT[start:end] == "During probation"

    def test_markers_and_line_breaks_left_out(self) -> None:
        quote = "During probation you may take at most 3 days of annual leave before it ends."
        start, end = locate_quote(self.TEXT, quote) or (0, 0)
        assert self.TEXT[start:end].startswith("During") and self.TEXT[start:end].endswith("ends.")

    def test_table_row_quote_spans_the_rows(self) -> None:
        text = "| Service | Leave |\n|---|---|\n| Under 3 years | 12 days |\n| 3+ years | 15 days |"
        span = locate_quote(text, "Service → Leave: Under 3 years → 12 days; 3+ years → 15 days")
        assert span is not None and text[span[0] : span[1]].startswith("Service")
        assert text[span[0] : span[1]].endswith("15 days")

    def test_a_wide_table_row_is_its_own_line(self) -> None:
        text = (
            "## Holidays\n\n| Holiday | First day off | Last day off |\n|---|---|---|\n"
            "| Labour Day | 2026-05-01 | 2026-05-05 |\n"
            "| **National Day** Golden Week | 2026-10-01 | 2026-10-07 |\n"
        )
        quote = "Holiday National Day Golden Week → First day off: 2026-10-01, Last day off: 2026-10-07"
        span = locate_quote(text, quote)
        assert span is not None
        assert text[span[0] : span[1]] == "**National Day** Golden Week | 2026-10-01 | 2026-10-07"
        month = "| Month | Working days |\n|---|---|\n| January | 21 |\n| February | 16 |\n"
        span = locate_quote(month, "Month February → 16")
        assert span is not None and month[span[0] : span[1]] == "February | 16"

    def test_bidi_controls_left_out_of_the_quote_are_found(self) -> None:
        text = "Save it as \u202efdp.exe\u202c before **3 days**\x00 pass."
        start, end = locate_quote(text, "Save it as fdp.exe before 3 days pass.") or (0, 0)
        assert (start, end) == (0, len(text))

    def test_absent(self) -> None:
        assert locate_quote(self.TEXT, "Parking permits cost 35 euros a month") is None
        assert locate_quote(self.TEXT, "   ") is None


class TestZipSize:
    def test_declared_size_over_the_limit_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "a.docx"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as package:
            package.writestr("word/document.xml", b"0" * 200_000)
        check_unpacked_size(path, limit=300_000)
        with pytest.raises(UnreadableFileError, match="would unpack to 200,000 bytes"):
            check_unpacked_size(path, limit=100_000)

    def test_not_a_zip(self, tmp_path: Path) -> None:
        path = tmp_path / "a.docx"
        path.write_bytes(b"not a zip")
        with pytest.raises(UnreadableFileError, match="corrupt"):
            check_unpacked_size(path)


class TestRights:
    @pytest.mark.parametrize(
        ("method", "path", "write"),
        [
            ("POST", "/v1/sources", True),
            ("DELETE", "/v1/sources/a.md", True),
            ("POST", "/v1/sources/sub/a.md/reindex", True),
            ("GET", "/v1/sources", False),
            ("POST", "/v1/ask", False),
            ("GET", "/v1/jobs/x", False),
        ],
    )
    def test_document_writes(self, method: str, path: str, write: bool) -> None:
        assert is_document_write(method, path) is write

    def test_read_only_keys(self) -> None:
        ring = parse_api_keys({"hg-reader-0123456789": {"tenant": "A", "write": False}})
        assert ring.authenticate("Bearer hg-reader-0123456789") == Caller("A", None, write=False)
        assert parse_api_keys({"hg-writer-0123456789": {"tenant": "A"}}).grants[0].write is True


def test_source_rows_group_chunks(tmp_path: Path) -> None:
    upload = tmp_path / "uploads" / "_shared" / "a.md"
    upload.parent.mkdir(parents=True)
    upload.write_text("hello")
    docs = [
        Document(content="one", meta={"source_id": "a.md", "file_path": str(upload), "indexed_at": "t"}),
        Document(content="three", meta={"source_id": "a.md", "file_path": str(upload)}),
        Document(content="x", meta={"source_id": "b.pdf", "tenant": "B"}),
    ]
    store = EmbeddedDocumentStore()
    store.write_documents(docs)
    rows = {r["id"]: r for r in source_rows(store.source_summaries(None), tmp_path / "uploads")}
    assert rows["a.md"]["chunks"] == 2 and rows["a.md"]["chars"] == 8 and rows["a.md"]["bytes"] == 5
    assert rows["a.md"]["uploaded"] is True and rows["a.md"]["indexed_at"] == "t"
    assert rows["b.pdf"]["format"] == "pdf" and rows["b.pdf"]["bytes"] is None
    assert rows["b.pdf"]["uploaded"] is False and rows["b.pdf"]["tenant"] == "B"


def test_a_web_pages_format_comes_from_its_url_path_not_its_host() -> None:
    site = "http://127.0.0.1:8080/"
    store = EmbeddedDocumentStore()
    store.write_documents(
        [
            Document(content="home", meta={"source_id": site, "source": site, "site": site}),
            Document(
                content="doc",
                meta={"source_id": site + "guide.html", "source": site + "guide.html", "site": site},
            ),
        ]
    )
    rows = {r["id"]: r for r in source_rows(store.source_summaries(None), Path("/nonexistent"))}
    assert rows[site]["format"] is None  # was "1:8080", the host's port taken for a suffix
    assert rows[site + "guide.html"]["format"] == "html"


class TestJobJournal:
    """Jobs outlive the process: a restart reports a job that was running as failed, not unknown."""

    @staticmethod
    def manager(store: Path) -> DocumentManager:
        return DocumentManager(LiveKnowledgeBase(store), max_upload_bytes=1024)

    def test_a_job_running_when_the_server_stopped_is_reported_failed(self, tmp_path: Path) -> None:
        first = self.manager(tmp_path)
        running = IndexJob(id="a1", tenant="acme", kind="upload", files=["x.md"], state="running", done=3)
        done = IndexJob(id="b2", tenant="acme", kind="upload", files=["y.md"], state="done", phase="done")
        first._jobs.update({running.id: running, done.id: done})
        first._save_journal()  # as start_indexing / _run_job do; then the process is killed
        again = self.manager(tmp_path)  # the next start on the same store
        acme = Caller(tenant="acme")
        assert again.job(acme, "a1").state == "failed" and again.job(acme, "a1").error == INTERRUPTED
        assert again.job(acme, "a1").to_json()["done"] == 3 and again.job(acme, "b2").state == "done"
        with pytest.raises(NotFoundError):
            again.job(Caller(tenant="other"), "a1")  # still the tenant's own
        saved = json.loads((tmp_path / UPLOADS_DIR / JOBS_FILE).read_text(encoding="utf-8"))
        assert {r["id"]: r["state"] for r in saved} == {"a1": "failed", "b2": "done"}

    def test_a_damaged_journal_is_forgotten_not_fatal(self, tmp_path: Path) -> None:
        (tmp_path / UPLOADS_DIR).mkdir()
        (tmp_path / UPLOADS_DIR / JOBS_FILE).write_text("{not json", encoding="utf-8")
        assert self.manager(tmp_path)._jobs == {}
        (tmp_path / UPLOADS_DIR / JOBS_FILE).write_text(
            '[{"id": 5}, "x", {"id": "half"}, '
            '{"id": "ok", "tenant": null, "kind": "upload", "files": [], "x": 1}]'
        )
        assert list(self.manager(tmp_path)._jobs) == ["ok"]
