from pathlib import Path

import pytest

from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.errors import EmptyDocumentError, UnreadableFileError
from haygraph.retrieval.office_formats import join_pages, read_office


def _docx(path: Path, *paragraphs: str) -> Path:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    document.save(str(path))
    return path


def _pptx(path: Path, *slides: str) -> Path:
    import pptx

    deck = pptx.Presentation()
    for text in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = text
    deck.save(str(path))
    return path


def _xlsx(path: Path, sheets: dict[str, list[list[str]]]) -> Path:
    import openpyxl

    book = openpyxl.Workbook()
    book.remove(book.active)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(row)
    book.save(str(path))
    return path


class TestJoinPages:
    def test_offsets_point_at_each_page(self):
        text, starts = join_pages(["one", "two", "three"])
        assert text == "one\n\ntwo\n\nthree"
        assert starts == [0, 5, 10]
        assert [text[s : s + 3] for s in starts] == ["one", "two", "thr"]


class TestReadOffice:
    def test_docx(self, tmp_path):
        text, starts = read_office(_docx(tmp_path / "a.docx", "Annual leave is twenty days.", "Sick leave"))
        assert text == "Annual leave is twenty days.\n\nSick leave"
        assert starts is None

    def test_pptx_slides_are_pages(self, tmp_path):
        text, starts = read_office(_pptx(tmp_path / "deck.pptx", "Quarterly results", "Hiring plan"))
        assert starts is not None and len(starts) == 2
        assert text[starts[0] :].startswith("# Quarterly results")
        assert text[starts[1] :].startswith("# Hiring plan")

    def test_xlsx_sheets_are_pages(self, tmp_path):
        path = _xlsx(
            tmp_path / "b.xlsx",
            {"Budget": [["item", "cost"], ["laptop", "900"]], "Staff": [["name"], ["Ann"]]},
        )
        text, starts = read_office(path)
        assert starts is not None and len(starts) == 2
        assert text[starts[0] :].startswith("# Budget") and "laptop" in text
        assert text[starts[1] :].startswith("# Staff") and "Ann" in text

    def test_csv(self, tmp_path):
        (tmp_path / "c.csv").write_text("city,country\nParis,France\n", encoding="utf-8")
        text, starts = read_office(tmp_path / "c.csv")
        assert text == "| city | country |\n|---|---|\n| Paris | France |" and starts is None

    def test_csv_not_in_the_encoding(self, tmp_path):
        (tmp_path / "c.csv").write_bytes("city\nZürich\n".encode("latin-1"))
        with pytest.raises(UnreadableFileError, match=r"c\.csv: cannot decode as utf-8"):
            read_office(tmp_path / "c.csv")
        text, _ = read_office(tmp_path / "c.csv", encoding="latin-1")
        assert "Zürich" in text

    def test_corrupt_docx(self, tmp_path):
        (tmp_path / "bad.docx").write_bytes(b"this is not a zip file")
        with pytest.raises(UnreadableFileError, match=r"bad\.docx: the file is corrupt"):
            read_office(tmp_path / "bad.docx")

    def test_zip_that_is_not_a_docx(self, tmp_path):
        import zipfile

        with zipfile.ZipFile(tmp_path / "odd.xlsx", "w") as archive:
            archive.writestr("hello.txt", "hi")
        with pytest.raises(UnreadableFileError, match=r"odd\.xlsx: the file is corrupt or unreadable"):
            read_office(tmp_path / "odd.xlsx")

    def test_empty_file_is_empty_not_corrupt(self, tmp_path):
        (tmp_path / "blank.docx").write_bytes(b"")
        with pytest.raises(EmptyDocumentError, match=r"blank\.docx: the file is empty \(0 bytes\)"):
            read_office(tmp_path / "blank.docx")

    def test_a_package_of_another_kind_says_so(self, tmp_path):
        _xlsx(tmp_path / "rooms.xlsx", {"Rooms": [["Room", "Seats"], ["Atlas", "12"]]})
        (tmp_path / "rooms.xlsx").rename(tmp_path / "rooms.docx")
        with pytest.raises(
            UnreadableFileError, match=r"rooms\.docx: the file is a \.xlsx package named \.docx"
        ):
            read_office(tmp_path / "rooms.docx")

    def test_strict_open_xml_is_named_with_the_fix(self, tmp_path):
        import zipfile

        with zipfile.ZipFile(tmp_path / "strict.docx", "w") as archive:
            archive.writestr("[Content_Types].xml", "<Types/>")
            archive.writestr(
                "word/document.xml",
                '<w:document xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main"><w:body/></w:document>',
            )
        with pytest.raises(UnreadableFileError, match=r"strict\.docx: the file is in Strict Open XML format"):
            read_office(tmp_path / "strict.docx")

    def test_password_protected(self, tmp_path):
        # encrypted OOXML files are Compound File containers: this header, then the encrypted package
        (tmp_path / "secret.xlsx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 512)
        with pytest.raises(UnreadableFileError, match=r"secret\.xlsx: the file is password-protected"):
            read_office(tmp_path / "secret.xlsx")


class TestConverterBatch:
    def test_bad_files_listed_rest_indexed(self, tmp_path):
        _docx(tmp_path / "good.docx", "Parental leave is sixteen weeks.")
        _pptx(tmp_path / "deck.pptx", "Security training", "Badge rules")
        (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 truncated")
        (tmp_path / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64)
        out = MultiFormatConverter(strict=False).run(sources=[tmp_path])
        docs = {d.meta["source_id"]: d for d in out["documents"]}
        assert sorted(docs) == ["deck.pptx", "good.docx"]
        assert "Parental leave is sixteen weeks." in docs["good.docx"].content
        assert (
            docs["deck.pptx"].meta["page_starts"][0] == 0 and len(docs["deck.pptx"].meta["page_starts"]) == 2
        )
        assert "page_starts" not in docs["good.docx"].meta
        assert any("broken.docx: the file is corrupt" in s for s in out["skipped"])
        assert any("locked.docx: the file is password-protected" in s for s in out["skipped"])

    def test_strict_raises_on_the_bad_file(self, tmp_path):
        (tmp_path / "broken.docx").write_bytes(b"garbage")
        with pytest.raises(UnreadableFileError, match=r"broken\.docx"):
            MultiFormatConverter().run(sources=[tmp_path / "broken.docx"])


class TestPdfPages:
    def test_chunks_of_a_two_page_pdf_cite_their_page(self, tmp_path, monkeypatch):
        import haygraph.retrieval.converters as converters
        from haygraph.retrieval.config import RetrievalConfig
        from haygraph.retrieval.pipelines import build_indexing_pipeline
        from haygraph.retrieval.store import EmbeddedDocumentStore

        pages = [
            " ".join(f"Leave rule {i}: annual leave case {i} is handled by HR." for i in range(8)),
            " ".join(f"Parking rule {i}: spot {i} costs five dollars per day." for i in range(8)),
        ]
        monkeypatch.setattr(converters, "_pdf_pages", lambda path: [p.replace("\n", "\r\n") for p in pages])
        (tmp_path / "rules.pdf").write_bytes(b"%PDF-1.4 stand-in; pages come from the patched reader")
        store = EmbeddedDocumentStore()
        config = RetrievalConfig(splitter={"min_chars": 100, "max_chars": 250})
        pipe = build_indexing_pipeline(config, store, embed=False)
        pipe.run({"converter": {"sources": [str(tmp_path / "rules.pdf")]}})
        chunks = sorted(store.documents, key=lambda d: d.meta["char_start"])
        assert len(chunks) >= 4
        text = "\n\n".join(pages)
        for chunk in chunks:
            assert text[chunk.meta["char_start"] : chunk.meta["char_end"]].split() == chunk.content.split()
            assert chunk.meta["page"] == (1 if "Leave rule" in chunk.content else 2)
            assert "page_starts" not in chunk.meta
