import hashlib
import importlib.util
import json
from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.converters import MultiFormatConverter, html_to_markdown, read_beir_corpus
from haygraph.retrieval.errors import (
    EmptyCorpusError,
    EmptyDocumentError,
    FileTooLargeError,
    InputError,
    NotRegularFileError,
    SourceConflictError,
    UnreadableFileError,
    UnsupportedFileError,
)
from haygraph.retrieval.splitter import StructuredSplitter
from tests.bounded_calls import TIMEOUT, run_bounded, within

HTML = """<!DOCTYPE html>
<html><head><title>Ignored title</title><style>p { color: red; }</style>
<script>var secret = "do not index";</script></head>
<body>
<h1>Leave &amp; holidays</h1>
<p>Employees get
   twenty days.<br>Part-time staff pro rata.</p>
<h2>Entitlement</h2>
<ul><li>Full time: 20 days</li><li>Part time<ol><li>Half</li></ol></li></ul>
<table>
  <tr><th>Years</th><th>Days</th></tr>
  <tr><td>1</td><td>20</td></tr>
  <tr><td>5</td><td>25 | more</td></tr>
</table>
<pre>kubectl get pods
  --all</pre>
</body></html>"""


def _pdf_bytes(text: str) -> bytes:
    """Build a minimal one-page PDF showing `text` in Helvetica (no PDF library needed)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    (root / "handbook").mkdir(parents=True)
    (root / "handbook" / "leave-policy.md").write_text("# Leave policy\n\nTwenty days.\n", encoding="utf-8")
    (root / "handbook" / "notes.txt").write_text("Plain notes about parking.\n", encoding="utf-8")
    (root / "faq.html").write_text(HTML, encoding="utf-8")
    (root / "guide.markdown").write_text(
        "Intro without heading.\n\n## Later heading\n\nBody.", encoding="utf-8"
    )
    (root / ".hidden.md").write_text("# Secret\n\nhidden", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("# Git\n\ninternal", encoding="utf-8")
    (root / "program.exe").write_bytes(b"MZ")
    return root


class TestHtmlToMarkdown:
    def test_structure(self):
        text = html_to_markdown(HTML)
        assert text.split("\n\n") == [
            "# Leave & holidays",
            "Employees get twenty days.\nPart-time staff pro rata.",
            "## Entitlement",
            "- Full time: 20 days\n- Part time\n  1. Half",
            "| Years | Days |\n|---|---|\n| 1 | 20 |\n| 5 | 25 \\| more |",
            "```\nkubectl get pods\n  --all\n```",
        ]
        assert "secret" not in text and "color" not in text and "Ignored title" not in text

    def test_converted_html_splits_with_headings_and_whole_table(self):
        chunks = StructuredSplitter(min_chars=10, max_chars=200).run(
            [Document(content=html_to_markdown(HTML))]
        )
        docs = chunks["documents"]
        table = [d for d in docs if "| Years | Days |" in d.content]
        assert len(table) == 1 and "| 5 | 25 \\| more |" in table[0].content
        assert table[0].meta["heading_path"] == ["Leave & holidays", "Entitlement"]


class TestOnlyContentIsText:
    """What a browser never shows as text gives no words in any chunk (through converter and splitter)."""

    @staticmethod
    def _chunks(path: Path) -> list[str]:
        docs = MultiFormatConverter().run(sources=[path])["documents"]
        return [c.content for c in StructuredSplitter(min_chars=50, max_chars=300).run(docs)["documents"]]

    def test_script_in_markdown(self, tmp_path: Path):
        (tmp_path / "menu.md").write_text(
            "# Canteen\n\nThe Friday special is <script>window.x=1</script>lentil soup for 6 euros.\n\n"
            "<style>.menu { color: red }</style><!-- price to be confirmed -->\n\n"
            'Embed it with `<script src="menu.js">` on your page.\n',
            encoding="utf-8",
        )
        chunks = self._chunks(tmp_path / "menu.md")
        assert any("The Friday special is lentil soup for 6 euros." in c for c in chunks)
        assert any('`<script src="menu.js">`' in c for c in chunks)  # code shows it: it stays
        for word in ["window.x", "color: red", "to be confirmed"]:
            assert not any(word in c for c in chunks), word

    def test_saved_documentation_page(self, tmp_path: Path):
        from tests.retrieval.formats.test_html import FURNITURE, NOT_CONTENT, SAVED_PAGE

        (tmp_path / "install.html").write_text(SAVED_PAGE, encoding="utf-8")
        chunks = self._chunks(tmp_path / "install.html")
        assert any("listens on port 7411" in c for c in chunks)
        for phrase in FURNITURE + NOT_CONTENT:
            assert not any(phrase in c for c in chunks), phrase


class TestMultiFormatConverter:
    def test_every_type(self, tmp_path: Path):
        files = {
            "a.md": "# Alpha title\n\nAlpha body.",
            "b.markdown": "## Beta\n\nBeta body.",
            "c.txt": "# not a title in txt\nGamma body.",
            "d.html": "<h2>Delta</h2><p>Delta body.</p>",
            "e.htm": "<p>Epsilon body only.</p>",
        }
        for name, text in files.items():
            (tmp_path / name).write_text(text, encoding="utf-8")
        (tmp_path / "f.pdf").write_bytes(_pdf_bytes("Annual leave is twenty days."))
        sources = sorted(tmp_path.iterdir())
        result = MultiFormatConverter().run(sources=sources, meta={"tenant": "acme"})
        docs = {d.meta["source"]: d for d in result["documents"]}
        assert result["skipped"] == []
        assert list(docs) == ["a.md", "b.markdown", "c.txt", "d.html", "e.htm", "f.pdf"]
        assert [d.meta["title"] for d in docs.values()] == ["Alpha title", "Beta", "c", "Delta", "e", "f"]
        assert docs["a.md"].content == "# Alpha title\n\nAlpha body."
        assert docs["d.html"].content == "## Delta\n\nDelta body."
        assert "Annual leave is twenty days." in docs["f.pdf"].content
        assert docs["a.md"].meta == {
            "tenant": "acme",
            "source_id": "a.md",
            "source": "a.md",
            "file_path": str(tmp_path / "a.md"),
            "title": "Alpha title",
            # sha256 of the file's bytes, NUL, and the caller's meta as sorted JSON
            "source_hash": hashlib.sha256(
                (tmp_path / "a.md").read_bytes() + b'\x00{"tenant": "acme"}'
            ).hexdigest(),
        }

    def test_directory_expansion_and_relative_source_ids(self, kb: Path):
        docs = MultiFormatConverter().run(sources=[kb])["documents"]
        assert [d.meta["source_id"] for d in docs] == [
            "faq.html",
            "guide.markdown",
            "handbook/leave-policy.md",
            "handbook/notes.txt",
        ]
        assert docs[1].meta["title"] == "Later heading"

    def test_source_ids_relative_to_the_directory_given(self, kb: Path):
        docs = MultiFormatConverter().run(sources=[kb / "handbook", kb / "faq.html"])["documents"]
        assert {d.meta["source_id"] for d in docs} == {"leave-policy.md", "notes.txt", "faq.html"}
        single = MultiFormatConverter().run(sources=[str(kb / "handbook" / "notes.txt")])["documents"]
        assert single[0].meta["source_id"] == "notes.txt"

    def test_source_ids_do_not_depend_on_the_working_directory(self, kb: Path, monkeypatch):
        expected = [d.meta["source_id"] for d in MultiFormatConverter().run(sources=[kb])["documents"]]
        monkeypatch.chdir(kb / "handbook")
        relative = MultiFormatConverter().run(sources=[".."])["documents"]
        assert [d.meta["source_id"] for d in relative] == expected
        assert relative[0].meta["file_path"] == str((kb / "faq.html").resolve())

    def test_known_file_keeps_its_id_through_another_path(self, kb: Path):
        # regression: the same file indexed as docs/ and as docs/sub/x gave two ids
        first = MultiFormatConverter().run(sources=[kb])["documents"]
        known = {d.meta["source_id"]: d.meta["file_path"] for d in first}
        (kb / "link.md").symlink_to(kb / "handbook" / "leave-policy.md")
        for path in [kb / "handbook" / "leave-policy.md", kb / "handbook" / ".." / "link.md"]:
            again = MultiFormatConverter().run(sources=[path], known_sources=known)["documents"]
            assert [d.meta["source_id"] for d in again] == ["handbook/leave-policy.md"]

    def test_links_inside_a_directory_are_not_followed(self, kb: Path, tmp_path: Path):
        # regression: a link named *.md to /etc/passwd made the whole folder fail (and a link to a
        # Markdown file outside the folder would have been indexed)
        outside = tmp_path / "secret.md"
        outside.write_text("# Secret\n\nNot part of this knowledge base.", encoding="utf-8")
        (kb / "secret.md").symlink_to(outside)
        (kb / "passwd.md").symlink_to("/etc/passwd")
        result = MultiFormatConverter().run(sources=[kb])
        assert len(result["documents"]) == 4
        assert all("Secret" not in (d.content or "") for d in result["documents"])
        links = sorted(s for s in result["skipped"] if "link to a file" in s)
        assert [Path(s.split(":")[0]).name for s in links] == ["passwd.md", "secret.md"]

    def test_two_files_may_not_share_an_id(self, kb: Path, tmp_path: Path):
        other = tmp_path / "other"
        other.mkdir()
        (other / "notes.txt").write_text("Other notes.", encoding="utf-8")
        with pytest.raises(SourceConflictError, match=r"'notes\.txt' is already used by .*handbook"):
            MultiFormatConverter().run(sources=[kb / "handbook" / "notes.txt", other / "notes.txt"])
        known = {"notes.txt": str((kb / "handbook" / "notes.txt").resolve())}
        with pytest.raises(SourceConflictError, match="common parent directory"):
            MultiFormatConverter().run(sources=[other], known_sources=known)
        lenient = MultiFormatConverter(strict=False).run(sources=[other], known_sources=known)
        assert lenient["documents"] == [] and "already used" in lenient["skipped"][0]

    def test_directory_reports_what_it_skips(self, kb: Path):
        result = MultiFormatConverter().run(sources=[kb])
        assert len(result["documents"]) == 4
        assert [s.split(": ", 1)[0] for s in result["skipped"]] == [
            f"{kb.resolve()}/.git/",
            f"{kb.resolve()}/.hidden.md",
            f"{kb.resolve()}/program.exe",
        ]
        assert "hidden folder" in result["skipped"][0]
        assert "unsupported file type '.exe'" in result["skipped"][2]

    def test_fifo_in_a_folder_is_skipped_without_being_opened(self, fifo: Path):
        (fifo.parent / "a.md").write_text("# A\n\nSome text.", encoding="utf-8")
        result = within(TIMEOUT, lambda: MultiFormatConverter().run(sources=[fifo.parent]))
        assert [d.meta["source_id"] for d in result["documents"]] == ["a.md"]
        assert result["skipped"] == [
            f"{fifo.resolve()}: not a regular file (a FIFO, device or socket is never read)"
        ]

    def test_fifo_given_by_name_is_refused_without_blocking(self, fifo: Path):
        with pytest.raises(
            NotRegularFileError, match=r"notes\.md: is a FIFO \(named pipe\), not a regular file"
        ):
            within(TIMEOUT, lambda: MultiFormatConverter().run(sources=[fifo]))
        lenient = within(TIMEOUT, lambda: MultiFormatConverter(strict=False).run(sources=[fifo]))
        assert lenient["documents"] == [] and "FIFO" in lenient["skipped"][0]

    def test_dev_zero_given_by_name_is_refused_before_reading(self):
        # a regression reads /dev/zero until memory runs out: bounded subprocess (3 GiB, timeout)
        proc = run_bounded(
            "from haygraph.retrieval.converters import MultiFormatConverter, read_beir_corpus\n"
            "for call in (lambda: MultiFormatConverter().run(sources=['/dev/zero']),\n"
            "             lambda: read_beir_corpus('/dev/zero')):\n"
            "    try:\n        call()\n"
            "    except Exception as exc:\n        print(type(exc).__name__, exc)\n"
        )
        message = (
            "NotRegularFileError /dev/zero: is a device, not a regular file; only regular files are read"
        )
        assert proc.stdout.splitlines() == [message, message], proc.stderr

    def test_fifo_named_as_a_corpus_is_refused_without_blocking(self, fifo: Path):
        corpus = fifo.with_name("corpus.jsonl")
        fifo.rename(corpus)
        with pytest.raises(NotRegularFileError, match=r"corpus\.jsonl: is a FIFO"):
            within(TIMEOUT, lambda: read_beir_corpus(corpus))

    def test_file_over_the_size_limit(self, tmp_path: Path):
        folder = tmp_path / "docs"
        folder.mkdir()
        (folder / "small.md").write_text("# Small\n\nok", encoding="utf-8")
        (folder / "big.md").write_text("# Big\n\n" + "x" * 100, encoding="utf-8")
        converter = MultiFormatConverter(max_file_bytes=50)
        with pytest.raises(
            FileTooLargeError, match=r"big\.md: file is 107 bytes, larger than the limit of 50"
        ):
            converter.run(sources=[folder / "big.md"])
        result = converter.run(sources=[folder])  # in a folder: skipped and listed, the rest indexed
        assert [d.meta["source_id"] for d in result["documents"]] == ["small.md"]
        assert "larger than the limit of 50 bytes" in result["skipped"][0]
        with pytest.raises(ValueError, match="max_file_bytes must be an integer > 0, but got 0"):
            MultiFormatConverter(max_file_bytes=0)

    def test_same_file_twice_converted_once(self, kb: Path):
        docs = MultiFormatConverter().run(sources=[kb / "faq.html", kb / "faq.html"])["documents"]
        assert len(docs) == 1

    def test_unsupported_extension(self, kb: Path):
        with pytest.raises(UnsupportedFileError, match=r"program\.exe"):
            MultiFormatConverter().run(sources=[kb / "program.exe"])

    def test_missing_file(self, tmp_path: Path):
        with pytest.raises(UnreadableFileError, match=r"nope\.md"):
            MultiFormatConverter().run(sources=[tmp_path / "nope.md"])

    def test_undecodable_file(self, tmp_path: Path):
        (tmp_path / "latin.txt").write_bytes("Café au lait".encode("latin-1"))
        with pytest.raises(UnreadableFileError, match=r"latin\.txt.*utf-8"):
            MultiFormatConverter().run(sources=[tmp_path / "latin.txt"])
        docs = MultiFormatConverter(encoding="latin-1").run(sources=[tmp_path / "latin.txt"])["documents"]
        assert docs[0].content == "Café au lait"

    def test_empty_file(self, tmp_path: Path):
        (tmp_path / "empty.md").write_text("  \n\n ", encoding="utf-8")
        (tmp_path / "empty.html").write_text("<html><script>x()</script></html>", encoding="utf-8")
        for name in ["empty.md", "empty.html"]:
            with pytest.raises(EmptyDocumentError, match=name.replace(".", r"\.")):
                MultiFormatConverter().run(sources=[tmp_path / name])

    def test_a_file_without_text_in_a_folder_is_skipped_and_the_rest_converted(self, tmp_path: Path):
        (tmp_path / "good.md").write_text("# Parking\n\nLevel B2 costs 90 EUR.", encoding="utf-8")
        (tmp_path / "empty.md").write_text("  \n\n", encoding="utf-8")
        (tmp_path / "scan.pdf").write_bytes(_pdf_without_text())
        out = MultiFormatConverter().run(sources=[tmp_path])
        assert [d.meta["source_id"] for d in out["documents"]] == ["good.md"]
        # a page without a text layer goes to OCR (the ocr extra), which finds no text in a rectangle;
        # without the extra the reason names it
        ocr = importlib.util.find_spec("rapidocr") is not None
        reason = "(no text layer, and OCR found no text on its pages)" if ocr else "haygraph[ocr]"
        skipped = sorted(out["skipped"])
        assert skipped[0] == f"{tmp_path / 'empty.md'}: file has no text content"
        assert (
            skipped[1].startswith(f"{tmp_path / 'scan.pdf'}: file has no text content")
            and reason in skipped[1]
        )
        with pytest.raises(EmptyDocumentError, match=r"scan\.pdf"):  # named alone, it is an error
            MultiFormatConverter().run(sources=[tmp_path / "scan.pdf"])

    def test_directory_without_supported_files(self, tmp_path: Path):
        (tmp_path / "x.exe").write_bytes(b"MZ")
        with pytest.raises(EmptyCorpusError, match="no supported files"):
            MultiFormatConverter().run(sources=[tmp_path])

    def test_pdf_without_pdf_library(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        import builtins

        real_import = builtins.__import__

        def no_pdf(name, *args, **kwargs):
            if name in {"pdfplumber", "pypdfium2"}:
                raise ImportError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pdf)
        (tmp_path / "f.pdf").write_bytes(_pdf_bytes("text"))
        with pytest.raises(UnsupportedFileError, match=r"f\.pdf.*pip install pypdfium2 pdfplumber"):
            MultiFormatConverter().run(sources=[tmp_path / "f.pdf"])

    def test_corrupt_pdf(self, tmp_path: Path):
        (tmp_path / "bad.pdf").write_bytes(b"not a pdf at all")
        with pytest.raises(UnreadableFileError, match=r"bad\.pdf"):
            MultiFormatConverter().run(sources=[tmp_path / "bad.pdf"])

    def test_not_strict_skips_and_reports(self, kb: Path, tmp_path: Path):
        (kb / "empty.txt").write_text("   ", encoding="utf-8")
        result = MultiFormatConverter(strict=False).run(
            sources=[kb, kb / "program.exe", tmp_path / "missing.md"]
        )
        assert [d.meta["source_id"] for d in result["documents"]] == [
            "faq.html",
            "guide.markdown",
            "handbook/leave-policy.md",
            "handbook/notes.txt",
        ]
        assert len(result["skipped"]) == 5  # .git/, .hidden.md, program.exe (once), empty.txt, missing.md
        assert any("empty.txt" in s and "no text" in s for s in result["skipped"])
        assert any("program.exe" in s and "unsupported" in s for s in result["skipped"])
        assert any("missing.md" in s and "does not exist" in s for s in result["skipped"])

    def test_empty_sources(self):
        assert MultiFormatConverter().run(sources=[]) == {"documents": [], "skipped": [], "unchanged": []}

    def test_unchanged_files_are_not_converted(self, tmp_path, monkeypatch):
        (tmp_path / "a.md").write_text("# A\n\nalpha")
        (tmp_path / "b.md").write_text("# B\n\nbeta")
        first = MultiFormatConverter().run(sources=[tmp_path])["documents"]
        hashes = {d.meta["source_id"]: d.meta["source_hash"] for d in first}
        (tmp_path / "b.md").write_text("# B\n\nbeta, edited")
        converted: list[str] = []
        original = MultiFormatConverter._convert
        monkeypatch.setattr(
            MultiFormatConverter,
            "_convert",
            lambda self, p, data: converted.append(p.name) or original(self, p, data),
        )
        out = MultiFormatConverter().run(sources=[tmp_path], known_hashes=hashes)
        assert converted == ["b.md"] and out["unchanged"] == ["a.md"]
        assert [d.meta["source_id"] for d in out["documents"]] == ["b.md"]
        # other meta (a tenant, a team) changes the hash: the file is converted again
        again = MultiFormatConverter().run(sources=[tmp_path], known_hashes=hashes, meta={"team": "hr"})
        assert again["unchanged"] == []

    def test_invalid_encoding(self):
        with pytest.raises(ValueError, match="no-such-codec"):
            MultiFormatConverter(encoding="no-such-codec")

    def test_to_dict_and_round_trip(self):
        converter = MultiFormatConverter(encoding="latin-1", strict=False)
        data = converter.to_dict()
        assert data == {
            "type": "haygraph.retrieval.converters.MultiFormatConverter",
            "init_parameters": {"encoding": "latin-1", "strict": False, "max_file_bytes": 209_715_200},
        }
        loaded = MultiFormatConverter.from_dict(data)
        assert (loaded.encoding, loaded.strict, loaded.max_file_bytes) == ("latin-1", False, 209_715_200)


def _write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class TestReadBeirCorpus:
    def test_reads_records(self, tmp_path: Path):
        path = _write_jsonl(
            tmp_path / "corpus.jsonl",
            [
                json.dumps({"_id": "d1", "title": "Leave", "text": "Twenty days."}),
                "",
                json.dumps({"_id": "d2", "title": "", "text": "No title here."}),
                json.dumps({"_id": 3, "text": "Numeric id, title missing."}),
            ],
        )
        docs = read_beir_corpus(path)
        assert [d.content for d in docs] == [
            "Leave\n\nTwenty days.",
            "No title here.",
            "Numeric id, title missing.",
        ]
        assert docs[0].meta == {"source_id": "d1", "source": "d1", "title": "Leave"}
        assert docs[2].meta["source_id"] == "3"

    def test_limit(self, tmp_path: Path):
        lines = [json.dumps({"_id": f"d{i}", "title": "", "text": f"text {i}"}) for i in range(5)]
        path = _write_jsonl(tmp_path / "corpus.jsonl", lines)
        assert [d.meta["source_id"] for d in read_beir_corpus(path, limit=2)] == ["d0", "d1"]
        with pytest.raises(ValueError, match="got 0"):
            read_beir_corpus(path, limit=0)

    def test_malformed_line_reports_file_and_line(self, tmp_path: Path):
        path = _write_jsonl(
            tmp_path / "corpus.jsonl",
            [json.dumps({"_id": "d1", "text": "ok"}), "", '{"_id": "d2", "text": '],
        )
        with pytest.raises(InputError, match=r"corpus\.jsonl:3: malformed JSON"):
            read_beir_corpus(path)

    def test_duplicate_id_reports_line(self, tmp_path: Path):
        lines = [json.dumps({"_id": "d1", "text": "a"}), json.dumps({"_id": "d1", "text": "b"})]
        with pytest.raises(InputError, match=r"corpus\.jsonl:2: duplicate document id 'd1'"):
            read_beir_corpus(_write_jsonl(tmp_path / "corpus.jsonl", lines))

    def test_byte_order_mark_ignored(self, tmp_path: Path):
        path = tmp_path / "corpus.jsonl"
        path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"_id": "d1", "text": "a"}).encode() + b"\n")
        assert [d.meta["source_id"] for d in read_beir_corpus(path)] == ["d1"]

    def test_record_without_id(self, tmp_path: Path):
        path = _write_jsonl(tmp_path / "corpus.jsonl", [json.dumps({"text": "no id"})])
        with pytest.raises(InputError, match=r"corpus\.jsonl:1: .*'_id'"):
            read_beir_corpus(path)

    def test_empty_corpus(self, tmp_path: Path):
        path = _write_jsonl(
            tmp_path / "corpus.jsonl", ["", json.dumps({"_id": "d1", "title": "", "text": " "})]
        )
        with pytest.raises(EmptyCorpusError, match=r"corpus\.jsonl"):
            read_beir_corpus(path)

    def test_missing_file(self, tmp_path: Path):
        with pytest.raises(UnreadableFileError, match=r"nope\.jsonl"):
            read_beir_corpus(tmp_path / "nope.jsonl")

    def test_real_dataset_first_records(self):
        path = Path("/work/shared/datasets/scifact/corpus.jsonl")
        if not path.exists():
            pytest.skip("shared datasets not available")
        first = json.loads(path.open(encoding="utf-8").readline())
        docs = read_beir_corpus(path, limit=3)
        assert len(docs) == 3
        assert docs[0].meta["source_id"] == first["_id"]
        assert docs[0].content.startswith(first["title"].strip())


def _pdf_without_text() -> bytes:
    """A one-page PDF that draws a rectangle and holds no text (as a scan without OCR does)."""
    fpdf = pytest.importorskip("fpdf")
    pdf = fpdf.FPDF()
    pdf.add_page()
    pdf.rect(20, 20, 100, 60, style="F")
    return bytes(pdf.output())


def test_source_and_source_id_are_one_name(tmp_path: Path) -> None:
    """``meta["source"]`` is the source id (it was the bare file name: two alike names were ambiguous)."""
    (tmp_path / "hr").mkdir()
    (tmp_path / "it").mkdir()
    (tmp_path / "hr" / "policy.md").write_text("# HR policy\n\nLeave rules.", encoding="utf-8")
    (tmp_path / "it" / "policy.md").write_text("# IT policy\n\nLaptop rules.", encoding="utf-8")
    docs = MultiFormatConverter().run(sources=[tmp_path])["documents"]
    assert sorted((d.meta["source_id"], d.meta["source"]) for d in docs) == [
        ("hr/policy.md", "hr/policy.md"),
        ("it/policy.md", "it/policy.md"),
    ]
