"""Text in images (issue 49): image files and scanned PDF pages through the bundled OCR model.

The two notices and the ruled table under ``tests/retrieval/data/ocr`` were rendered from known text by
``python -m benchmarks.bench_ocr --write-samples tests/retrieval/data/ocr`` (the tests need no fonts).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from PIL import Image

from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.errors import OcrUnavailableError, UnreadableFileError
from haygraph.retrieval.formats import images
from haygraph.retrieval.formats.images import Box, reading_order
from haygraph.retrieval.formats.pdf import pdf_pages

needs_ocr = pytest.mark.skipif(
    importlib.util.find_spec("rapidocr") is None, reason="needs the ocr extra: pip install 'haygraph[ocr]'"
)

DATA = Path(__file__).parents[1] / "data" / "ocr"
EN = DATA / "notice-en.png"
ZH = DATA / "notice-zh.png"
TABLE = DATA / "table.png"


def _box(text: str, left: float, top: float, score: float = 0.99, height: float = 20) -> Box:
    return Box(text, score, left, top, left + 10 * len(text), top + height)


def test_boxes_are_read_top_to_bottom_left_to_right_with_lines_merged() -> None:
    boxes = [
        _box("right", 300, 102),  # the same line as "left", a little lower
        _box("Second paragraph", 10, 200),
        _box("left", 10, 100),
        _box("Title", 10, 10),
        _box("next line", 10, 128),
    ]
    assert reading_order(boxes) == "Title\n\nleft right\nnext line\n\nSecond paragraph"


def test_low_confidence_boxes_are_dropped_and_chinese_pieces_join_without_a_space() -> None:
    boxes = [_box("北门", 10, 10), _box("关闭", 100, 10), _box("~~noise~~", 200, 10, score=0.3)]
    assert reading_order(boxes) == "北门关闭"
    assert reading_order(boxes, min_confidence=0.2) == "北门关闭 ~~noise~~"
    assert reading_order([]) == ""


def _row(y: float, *cells: tuple[str, float]) -> list[Box]:
    """One line of cell boxes at `y` (20 px high), each cell given as (text, left)."""
    return [_box(text, left, y) for text, left in cells]


def test_lines_of_cells_aligned_in_columns_become_a_markdown_table_between_paragraphs() -> None:
    """Cells 10+ line heights apart, under the header's columns: a table in a paragraph of its own.
    The right-aligned number under a left-aligned header overlaps its column only with the slack;
    a row may leave a column empty; a cell of two boxes a word gap apart stays one cell."""
    boxes = [
        _box("Parking", 10, 10),
        _box("Permits are sold monthly.", 10, 35),
        *_row(70, ("Level", 10), ("Fee", 300), ("Note", 500)),
        *_row(100, ("B1", 10), ("120", 300), ("EV", 500), ("chargers", 530)),
        *_row(130, ("B2", 10), ("9", 335)),  # "9" at 335..345: 5 px right of "Fee"'s 300..330
        *_row(160, ("Roof", 10), ("60", 300), ("open air", 500)),
        _box("Charging is free.", 10, 190),
    ]
    assert reading_order(boxes) == (
        "Parking\nPermits are sold monthly.\n\n"
        "| Level | Fee | Note |\n|---|---|---|\n| B1 | 120 | EV chargers |\n| B2 | 9 |  |\n"
        "| Roof | 60 | open air |\n\n"
        "Charging is free."
    )


def test_prose_and_lone_spaced_lines_stay_text() -> None:
    """Words a fraction of a line height apart are one line; a single line of spaced pieces (a field
    and its value) is not a table; lines whose pieces do not fall into the header's columns end it."""
    words = [_box("The", 10, 10), _box("entrance", 48, 10), _box("is closed.", 136, 10)]  # 8 px gaps
    assert reading_order(words) == "The entrance is closed."
    form = [_box("Name:", 10, 10), _box("Ada", 300, 10), _box("Signed on 3 May.", 10, 40)]
    assert reading_order(form) == "Name: Ada\nSigned on 3 May."
    misaligned = [*_row(10, ("Level", 10), ("Fee", 300)), *_row(40, ("B1", 10), ("120", 180))]
    assert reading_order(misaligned) == "Level Fee\nB1 120"


def test_a_table_ends_at_a_line_that_does_not_fit_or_lies_far_below() -> None:
    """A text line, a row out of the columns' order, or a gap over `TABLE_ROW_GAP` heights ends it."""
    header = _row(10, ("Stop", 10), ("First", 300))
    row = _row(40, ("Harbour", 10), ("06:40", 300))
    far = _row(40 + 30 + 20 * images.TABLE_ROW_GAP, ("Airport", 10), ("05:50", 300))
    assert reading_order([*header, *row, *far]) == (
        "| Stop | First |\n|---|---|\n| Harbour | 06:40 |\n\nAirport 05:50"
    )
    text = _box("Every 15 min.", 10, 70)
    assert (
        reading_order([*header, *row, text])
        == "| Stop | First |\n|---|---|\n| Harbour | 06:40 |\n\nEvery 15 min."
    )
    assert images.table_rows([], 20) == []


def test_a_table_at_the_bottom_of_a_page_goes_on_at_the_top_of_the_next() -> None:
    """The rows at the top of the next page that fit the open table's columns are written under its
    header repeated; the header printed again there is no row; a page that starts with text ends it."""
    first, table = images.read_page(
        [
            _box("Shuttle", 10, 10),
            *_row(40, ("Stop", 10), ("First", 300)),
            *_row(70, ("Harbour", 10), ("06:40", 300)),
        ]
    )
    assert first == "Shuttle\n\n| Stop | First |\n|---|---|\n| Harbour | 06:40 |"
    assert table == images.OpenTable(("Stop", "First"), ((10, 80), (300, 350)))
    rows = [*_row(10, ("Stop", 12), ("First", 300)), *_row(40, ("Airport", 12), ("05:50", 302))]
    second, rest = images.read_page([*rows, _box("Canteen", 10, 100)], carried=table)
    assert second == "| Stop | First |\n|---|---|\n| Airport | 05:50 |\n\nCanteen"
    assert rest is None
    assert images.read_page([_box("Canteen", 10, 10), *rows[2:]], carried=table) == (
        "Canteen\nAirport 05:50",
        None,
    )


@needs_ocr
@pytest.mark.integration
def test_a_rendered_ruled_table_is_read_as_a_markdown_table() -> None:
    """bench_ocr's ruled table (four columns, English and Chinese cells): the OCR boxes, without the
    ruling, give back the table row by row, so an answer can quote the row a question names."""
    doc = MultiFormatConverter().run([TABLE])["documents"][0]
    assert doc.content == (
        "| Level | Monthly fee | Spaces | 停车层说明 |\n"
        "|---|---|---|---|\n"
        "| B1 | 120 EUR | 48 | 电动车充电 |\n"
        "| B2 | 90 EUR | 64 | 普通车位 |\n"
        "| Roof | 60 EUR | 30 | 露天车位 |"
    )


@needs_ocr
@pytest.mark.integration
def test_an_english_and_a_chinese_image_are_read_in_order(tmp_path: Path) -> None:
    result = MultiFormatConverter().run([EN, ZH])
    english, chinese = (doc.content or "" for doc in result["documents"])
    assert english.startswith("Notice to staff\n\nThe north entrance is closed for repairs until 14 March.")
    assert "parcel room opens at" in english and "7:30" in english
    assert chinese == "食堂通知\n\n三楼食堂周六停止营业。\n\n工作日午餐供应时间为十一点半到下午一点。"
    assert all("page_starts" not in doc.meta for doc in result["documents"])


@needs_ocr
@pytest.mark.integration
def test_a_scanned_pdf_is_read_by_ocr_page_by_page(tmp_path: Path) -> None:
    """Two rendered pages wrapped in a PDF without a text layer: each page is OCR'd and keeps its number."""
    scan = tmp_path / "scan.pdf"
    pages = [Image.open(EN).convert("RGB"), Image.open(ZH).convert("RGB")]
    pages[0].save(scan, save_all=True, append_images=pages[1:], resolution=images.PDF_DPI)
    assert pdf_pages(scan) == ["", ""]  # no text layer
    doc = MultiFormatConverter().run([scan])["documents"][0]
    text, starts = doc.content or "", doc.meta["page_starts"]
    assert len(starts) == 2
    assert "north entrance is closed" in text[: starts[1]]
    assert "午餐供应时间为十一点半" in text[starts[1] :]


@needs_ocr
@pytest.mark.integration
def test_a_multi_page_tiff_gives_a_page_per_frame(tmp_path: Path) -> None:
    tiff = tmp_path / "notices.tiff"
    blank = Image.new("1", (200, 100), 1)
    blank.save(tiff, save_all=True, append_images=[Image.open(ZH)])
    doc = MultiFormatConverter().run([tiff])["documents"][0]
    text, starts = doc.content or "", doc.meta["page_starts"]
    assert len(starts) == 2
    assert not text[: starts[1]].strip()  # the blank page: no text, but still a page
    assert "三楼食堂周六停止营业" in text[starts[1] :]


def test_without_the_ocr_extra_an_image_is_skipped_with_a_message_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import of rapidocr fails, as when the extra is not installed: a folder's image is skipped and
    listed, its other files indexed; a single image raises the typed error with the install line."""

    def missing() -> None:
        raise ImportError("No module named 'rapidocr'")

    monkeypatch.setattr(images, "_import_rapidocr", missing)
    (tmp_path / "photo.png").write_bytes(EN.read_bytes())
    (tmp_path / "readme.md").write_text("# Readme\n\nText.\n", encoding="utf-8")
    Image.open(EN).convert("RGB").save(tmp_path / "scan.pdf")
    result = MultiFormatConverter().run([tmp_path])
    assert [doc.meta["source_id"] for doc in result["documents"]] == ["readme.md"]
    assert len(result["skipped"]) == 2
    assert all("pip install 'haygraph[ocr]'" in note for note in result["skipped"])
    with pytest.raises(OcrUnavailableError, match=r"haygraph\[ocr\]"):
        MultiFormatConverter().run([tmp_path / "photo.png"])


@needs_ocr
@pytest.mark.integration
def test_an_oversized_or_broken_image_is_refused_before_decoding(tmp_path: Path) -> None:
    huge = tmp_path / "huge.png"
    Image.new("1", (10_000, 10_000), 1).save(huge)  # 100 M pixels in a few kB
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"\xff\xd8 not really a jpeg")
    for path, reason in ((huge, "more than the limit"), (broken, "not an image")):
        with pytest.raises(UnreadableFileError, match=reason):
            MultiFormatConverter().run([path])
    (tmp_path / "notes.txt").write_text("The rest is indexed.", encoding="utf-8")
    result = MultiFormatConverter().run([tmp_path])
    assert [doc.meta["source_id"] for doc in result["documents"]] == ["notes.txt"]
    assert len(result["skipped"]) == 2


@needs_ocr
def test_a_pdf_with_more_scanned_pages_than_the_limit_is_refused_before_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan = tmp_path / "scan.pdf"
    blank = Image.new("RGB", (200, 100), "white")
    blank.save(scan, save_all=True, append_images=[blank, blank])
    monkeypatch.setattr(images, "MAX_IMAGE_PAGES", 2)  # the limit (500) lowered, not the code path
    with pytest.raises(UnreadableFileError, match="3 pages without a text layer, more than the limit of 2"):
        MultiFormatConverter().run([scan])
    # a PDF with a text layer on some pages keeps that text when its other pages are too many to read
    fpdf = pytest.importorskip("fpdf")
    mixed = fpdf.FPDF()
    mixed.set_font("helvetica", size=12)
    mixed.add_page()
    mixed.cell(text="The text layer of page one.")
    for _ in range(3):
        mixed.add_page()
    mixed.output(str(tmp_path / "mixed.pdf"))
    doc = MultiFormatConverter().run([tmp_path / "mixed.pdf"])["documents"][0]
    assert (doc.content or "").strip() == "The text layer of page one." and len(doc.meta["page_starts"]) == 4
