"""Text in images (issue 49): image files and scanned PDF pages through the bundled OCR model.

The two notices under ``tests/retrieval/data/ocr`` were rendered from known text by
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
