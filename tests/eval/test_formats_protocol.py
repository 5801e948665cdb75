"""The formats protocol: the committed files, what the script writes, and the answers from every format."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from haygraph.eval.formats_protocol import (
    FORMATS,
    FORMATS_DIR,
    OCR_FORMATS,
    extension,
    formats_protocols,
    formats_table,
    guide_source,
)
from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.formats.tables import markdown_table

pytest.importorskip("docx")
pytest.importorskip("pptx")
pytest.importorskip("openpyxl")

CASES = [json.loads(line) for line in (FORMATS_DIR / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
TEXT_FORMATS = tuple(f for f in FORMATS if f not in OCR_FORMATS)
"""The formats read without OCR (the rendered scans are checked by `TestScans`)."""
HOLDOUT_DIR = FORMATS_DIR.with_name("formats-holdout")


def _texts(folder: Path) -> dict[str, str]:
    """``{file name: converted text}`` of every file in `folder`."""
    return {d.meta["source_id"]: d.content for d in MultiFormatConverter().run(sources=[folder])["documents"]}


def _norm(text: str) -> str:
    return "".join(text.split()).lower()


@pytest.fixture(scope="module")
def converted() -> dict[str, dict[str, str]]:
    return {fmt: _texts(FORMATS_DIR / fmt) for fmt in TEXT_FORMATS}


class TestCommittedFiles:
    def test_enough_questions_in_both_languages_with_table_cells(self):
        assert len(CASES) >= 20
        assert {c["lang"] for c in CASES} == {"en", "zh"}
        assert sum(c["tabular"] for c in CASES if c["lang"] == "en") >= 3
        assert sum(c["tabular"] for c in CASES if c["lang"] == "zh") >= 3

    def test_every_fact_is_in_every_format(self, converted):
        for fmt, texts in converted.items():
            for case in CASES:
                if fmt == "xlsx" and not case["tabular"]:
                    continue
                text = texts[guide_source(case["guide"], fmt)]
                for answer in case["answer_contains"]:
                    fact = answer.split(": ")[-1]  # "Seats: 6" is a table cell: its value is the fact
                    assert _norm(fact) in _norm(text), (fmt, case["id"], answer)

    def test_every_table_is_the_same_markdown_table_in_every_format(self, converted):
        tables = [
            block
            for text in converted["md"].values()
            for block in text.split("\n\n")
            if block.startswith("|")
        ]
        assert len(tables) == 5
        for fmt, texts in converted.items():
            joined = "\n\n".join(texts.values())
            assert all(table in joined for table in tables), fmt

    def test_docx_and_html_convert_to_the_markdown_text(self, converted):
        """docx, html, rst, odt, epub and the zip's page give the Markdown text; the mail adds its header."""
        for name, text in converted["md"].items():
            stem = name.removesuffix(".md")
            assert converted["docx"][f"{stem}.docx"].strip() == text.strip()
            assert converted["html"][f"{stem}.html"].strip() == text.strip()
            for fmt in ("rst", "odt", "epub", "zip"):
                assert converted[fmt][guide_source(stem, fmt)].strip() == text.strip(), fmt
            mail = converted["eml"][f"{stem}.eml"]
            title, body = text.split("\n\n", 1)
            assert mail.startswith(title + "\n\nFrom: Office services") and mail.strip().endswith(
                body.strip()
            )

    def test_pdf_has_no_running_header_or_page_numbers(self, converted):
        for text in converted["pdf"].values():
            assert "Facilities guide\n" not in text and "Page " not in text and "行政服务指南\n" not in text
        assert "a permit is valid" in converted["pdf"]["facilities-guide.pdf"]  # "per-" + "mit" joined

    def test_protocols_per_format(self):
        protocols = {p.name: p for p in formats_protocols()}
        assert list(protocols) == [f"formats-{fmt}" for fmt in FORMATS]
        assert len(protocols["formats-md"].cases) == len(CASES)
        assert len(protocols["formats-xlsx"].cases) == sum(c["tabular"] for c in CASES)
        assert protocols["formats-pdf"].cases[0].gold_sources == ("facilities-guide.pdf",)
        assert len(protocols["formats-scan-pdf"].cases) == len(protocols["formats-png"].cases) == len(CASES)
        assert protocols["formats-scan-pdf"].paths == [FORMATS_DIR / "scan-pdf"]
        assert protocols["formats-png"].cases[-1].gold_sources == ("行政服务指南.png",)


class TestTheScript:
    def test_it_writes_what_is_committed(self, tmp_path: Path, converted):
        """The generator still writes these files: every format converts to the committed text."""
        from benchmarks.make_formats_protocol import DEFAULT_CJK_FONT, write_all

        formats = tuple(f for f in TEXT_FORMATS if f != "pdf" or DEFAULT_CJK_FONT.is_file())
        pytest.importorskip("fpdf") if "pdf" in formats else None
        write_all(tmp_path, DEFAULT_CJK_FONT, formats)
        assert (tmp_path / "cases.jsonl").read_text(encoding="utf-8") == (
            FORMATS_DIR / "cases.jsonl"
        ).read_text(encoding="utf-8")
        for fmt in formats:
            assert _texts(tmp_path / fmt) == converted[fmt], fmt


SAME_TEXT_AS_MARKDOWN = frozenset({"rst", "odt", "epub", "zip"})
"""Formats whose files convert to exactly the Markdown file's text (checked above): their stores answer
as Markdown's, so the agent run below skips them (about 75 s each here); measured once with
`haygraph eval-agent --protocol formats` (docs/formats.md)."""


@pytest.mark.integration
def test_every_format_answers_what_markdown_answers(tmp_path: Path, haygraph_cache_dir: Path, monkeypatch):
    """Each question of each format through the real agent: every fact answered and cited, as in Markdown."""
    from haygraph.eval.agent_harness import run_protocol

    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(haygraph_cache_dir))
    reports = {}
    outcomes: dict[str, dict[str, tuple[bool | None, bool | None]]] = {}
    for protocol in formats_protocols():
        fmt = protocol.name.removeprefix("formats-")
        if fmt in SAME_TEXT_AS_MARKDOWN or fmt in OCR_FORMATS:  # scans: minutes of OCR, see docs/formats.md
            continue
        reports[fmt] = run_protocol(protocol, tmp_path / fmt, modes=("hybrid",))
        failed = {f["id"]: set(f["failed"]) for f in reports[fmt]["modes"]["hybrid"]["failures"]}
        outcomes[fmt] = {
            c.id: ("answered_correct" not in failed.get(c.id, ()), "cited_gold" not in failed.get(c.id, ()))
            for c in protocol.cases
        }
        shutil.rmtree(tmp_path / fmt)
    reference = outcomes["md"]
    assert all(correct and cited for correct, cited in reference.values()), reference  # every fact
    for fmt, found in outcomes.items():
        assert found == {case_id: reference[case_id] for case_id in found}, fmt
    table = formats_table(reports)
    assert len(table) == 2 + len(TEXT_FORMATS) - len(SAME_TEXT_AS_MARKDOWN)
    assert table[2].startswith("| md | 24 |")


def test_formats_table_counts_per_language() -> None:
    figures = {
        "en": {"answered_correct": 1.0, "cited_gold": 1.0, "present": 2},
        "zh": {"answered_correct": 0.5, "cited_gold": 1.0, "present": 2},
        "all": {"answered_correct": 0.75, "cited_gold": 1.0, "present": 4},
    }
    report = {"cases": 4, "modes": {"hybrid": {"figures": figures}}}
    assert formats_table({"docx": report})[2] == (
        "| docx | 4 | 1.000 (2/2) | 0.500 (1/2) | 0.750 (3/4) | 1.000 (4/4) |"
    )


def test_holdout_set_is_what_the_script_writes(tmp_path: Path) -> None:
    """The hold-out guides (``--set holdout``) are committed as the generator writes them."""
    from benchmarks.make_formats_protocol import DEFAULT_CJK_FONT, HOLDOUT_CASES, HOLDOUT_OUT, write_all

    formats = tuple(f for f in TEXT_FORMATS if f != "pdf" or DEFAULT_CJK_FONT.is_file())
    pytest.importorskip("fpdf") if "pdf" in formats else None
    write_all(tmp_path, DEFAULT_CJK_FONT, formats, "holdout")
    committed = (HOLDOUT_OUT / "cases.jsonl").read_text(encoding="utf-8")
    assert (tmp_path / "cases.jsonl").read_text(encoding="utf-8") == committed
    assert len(committed.splitlines()) == len(HOLDOUT_CASES) >= 20
    questions = {json.loads(line)["question"] for line in committed.splitlines()}
    assert not questions & {c["question"] for c in CASES}  # other questions than the protocol's
    for fmt in formats:
        assert _texts(tmp_path / fmt) == _texts(HOLDOUT_OUT / fmt), fmt


def _pixels(path: Path) -> list[bytes]:
    """Each page of an image or a PDF of page images as grayscale pixels (the PDF rendered at 150 dpi)."""
    from PIL import Image

    if path.suffix == ".png":
        with Image.open(path) as image:
            return [image.convert("L").tobytes()]
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return [page.render(scale=150 / 72, grayscale=True).to_pil().tobytes() for page in pdf]
    finally:
        pdf.close()


def _scan_fonts() -> None:
    from benchmarks.bench_ocr import CJK_FONT, LATIN_FONT

    if not (Path(LATIN_FONT).is_file() and Path(CJK_FONT).is_file()):
        pytest.skip("the scans are rendered with fonts-dejavu-core and fonts-wqy-zenhei")


class TestScans:
    """The rendered scans: one image per guide (png) and image-only PDF pages (scan-pdf), in both sets."""

    @pytest.mark.parametrize("which", ["main", "holdout"])
    def test_the_script_renders_the_committed_scans(self, tmp_path: Path, which: str) -> None:
        """Pixel for pixel: the generator still renders what is committed (no OCR needed to check)."""
        from benchmarks.make_formats_protocol import write_all

        _scan_fonts()
        committed = FORMATS_DIR if which == "main" else HOLDOUT_DIR
        write_all(tmp_path, None, tuple(sorted(OCR_FORMATS)), which)
        for fmt in OCR_FORMATS:
            written = sorted(p.name for p in (tmp_path / fmt).iterdir())
            assert written == sorted(p.name for p in (committed / fmt).iterdir()), fmt
            assert all(name.endswith(f".{extension(fmt)}") for name in written)
            for name in written:
                assert _pixels(tmp_path / fmt / name) == _pixels(committed / fmt / name), (fmt, name)

    def test_the_pdfs_have_no_text_layer_and_the_files_stay_small(self) -> None:
        import pypdfium2

        for folder in (FORMATS_DIR, HOLDOUT_DIR):
            for path in (folder / "scan-pdf").glob("*.pdf"):
                pdf = pypdfium2.PdfDocument(str(path))
                try:
                    assert len(pdf) >= 2 and all(
                        not page.get_textpage().get_text_range().strip() for page in pdf
                    )
                finally:
                    pdf.close()
            sizes = [p.stat().st_size for fmt in OCR_FORMATS for p in (folder / fmt).iterdir()]
            assert len(sizes) == 4 and max(sizes) < 150_000

    @pytest.mark.integration
    @pytest.mark.parametrize("which", ["main", "holdout"])
    @pytest.mark.parametrize("fmt", sorted(OCR_FORMATS))
    def test_every_fact_is_in_every_scan(self, which: str, fmt: str) -> None:
        """OCR reads every question's fact, and each table as its Markdown table (15-20 CPU s a guide)."""
        pytest.importorskip("rapidocr")
        folder = FORMATS_DIR if which == "main" else HOLDOUT_DIR
        cases = [
            json.loads(line) for line in (folder / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        texts = _texts(folder / fmt)
        assert sorted(texts) == sorted({guide_source(c["guide"], fmt) for c in cases})
        for case in cases:
            text = texts[guide_source(case["guide"], fmt)]
            for answer in case["answer_contains"]:
                fact = answer.split(": ")[-1]  # "Seats: 6" is a table cell: its value is the fact
                assert _norm(fact) in _norm(text), (fmt, case["id"], answer)
        from benchmarks.make_formats_protocol import SETS

        for guide in SETS[which][0]:  # each table as its Markdown table (spaces aside): one block, or
            # one block a page with the header repeated when the table runs on to the next page
            blocks = [block.splitlines() for block in texts[guide_source(guide.name, fmt)].split("\n\n")]
            for table in (section.table for section in guide.sections if section.table):
                header, rule, *rows = markdown_table([table.header, *table.rows]).splitlines()
                read = [
                    row
                    for b in blocks
                    if [_norm(x) for x in b[:2]] == [_norm(header), _norm(rule)]
                    for row in b[2:]
                ]
                assert [_norm(row) for row in read] == [_norm(row) for row in rows], (fmt, guide.name, header)
