"""Text in images: image files and scanned PDF pages read by an offline OCR model (the ``ocr`` extra).

The model is RapidOCR's (``rapidocr``, Apache-2.0): PP-OCRv6 small text detection and recognition
(simplified and traditional Chinese, English, digits and punctuation in one recogniser), run by
onnxruntime. Its ONNX files ship inside the wheel and are loaded by path (`model_files`), so nothing is
downloaded at run time; a missing file is an error, never a download.

- **Reading order.** The model gives text boxes; `reading_order` puts them back into lines: boxes
  whose vertical extents overlap by at least half the smaller box's height are one line, read left to
  right (joined by a space, or by nothing between two Chinese characters); lines go top to bottom, and
  a gap above a line larger than `PARAGRAPH_GAP` times the median line height starts a paragraph (a
  blank line, as the splitter expects). Two text columns side by side are read across, line by line
  (no column detection).
- **Tables.** OCR sees no ruling, only text boxes, so a table is rebuilt from their geometry
  (`table_rows`): a line whose boxes stand more than `CELL_GAP` line heights apart has cells; a run of
  such lines whose cells fall into the header line's columns (x-ranges overlapping), the header and at
  least one row, becomes a Markdown table (``| a | b |``, a ``|---|---|`` rule after the header, as
  every converter writes tables: `markdown_table`) in a paragraph of its own, so the splitter keeps
  its rows whole and an answer can quote the row a question names. A line of text, or a lone line of
  spaced pieces, is read as before. A table that runs to the bottom of a page (`OpenTable`) goes on
  at the top of the next scanned page or TIFF frame when the lines there fit its columns: those rows
  are written under its header repeated (`read_page`).
- **Low-confidence lines** are dropped: a box recognised with a score under `MIN_CONFIDENCE` (0.5,
  the model's own score in 0..1) is left out; noise, stamps and pictures give such boxes.
- **Pages.** A multi-page TIFF gives one page per frame; a scanned PDF page (one without a text layer,
  `formats.pdf`) is rendered at `PDF_DPI` and read like an image. Images larger than
  `MAX_IMAGE_PIXELS` pixels or TIFFs of more than `MAX_IMAGE_PAGES` frames are refused before decoding
  (a decompression bomb cannot exhaust memory), and so is a PDF with more than `MAX_IMAGE_PAGES`
  scanned pages (OCR takes seconds a page); a scanned page is rendered at most that large.

Without the extra, `require_ocr` raises `OcrUnavailableError` naming it (``pip install 'haygraph[ocr]'``):
the file is skipped and listed like any file with no text.
"""

from __future__ import annotations

import statistics
import threading
import unicodedata
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from haygraph.retrieval.errors import OcrUnavailableError, UnreadableFileError
from haygraph.retrieval.formats.tables import markdown_table

__all__ = [
    "CELL_GAP",
    "CELL_SLACK",
    "IMAGE_EXTENSIONS",
    "MAX_IMAGE_PAGES",
    "MAX_IMAGE_PIXELS",
    "MIN_CONFIDENCE",
    "OCR_EXTRA_HINT",
    "PARAGRAPH_GAP",
    "PDF_DPI",
    "TABLE_ROW_GAP",
    "Box",
    "OpenTable",
    "image_pages",
    "model_files",
    "ocr_image",
    "ocr_pdf_pages",
    "read_page",
    "reading_order",
    "require_ocr",
    "table_rows",
]

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".webp", ".tiff", ".tif"})
MIN_CONFIDENCE = 0.5
"""Recognition score (0..1) under which a text box is dropped as noise."""
PARAGRAPH_GAP = 0.8
"""A gap above a line larger than this many median line heights starts a new paragraph."""
CELL_GAP = 1.5
"""A horizontal gap between two boxes of a line wider than this many line heights separates table cells."""
CELL_SLACK = 0.5
"""Line heights by which a table column's x-range is widened on each side when placing a row's cells."""
TABLE_ROW_GAP = 2.0
"""A table row more than this many median line heights below the row above it ends the table."""
PDF_DPI = 200
"""Resolution at which a scanned PDF page is rendered for OCR."""
MAX_IMAGE_PIXELS = 60_000_000
"""Largest image (width x height) read; a 600 dpi A4 scan is about 35 million."""
MAX_IMAGE_PAGES = 500
"""Most frames of a multi-page TIFF, or scanned pages of a PDF, read (at seconds a page, a bound on time)."""
OCR_EXTRA_HINT = "pip install 'haygraph[ocr]'"

_MODEL_FILES = {
    "det": "PP-OCRv6_det_small.onnx",
    "rec": "PP-OCRv6_rec_small.onnx",
    "cls": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class Box:
    """One recognised text box: its text, score and extent on the page (pixels, y down)."""

    text: str
    score: float
    left: float
    top: float
    right: float
    bottom: float

    @property
    def height(self) -> float:
        """The box's height in pixels."""
        return self.bottom - self.top


def _import_rapidocr() -> Any:
    """The ``rapidocr`` module (one name for tests to replace, as if the extra were not installed)."""
    import rapidocr

    return rapidocr


def require_ocr(path: Path | str) -> Any:
    """The ``rapidocr`` module, or `OcrUnavailableError` naming the ``ocr`` extra when it is not installed."""
    try:
        return _import_rapidocr()
    except ImportError as exc:
        raise OcrUnavailableError(
            f"{path}: file has no text content without OCR (an image, or PDF pages without a text layer); "
            f"reading it needs the optional OCR extra: {OCR_EXTRA_HINT}"
        ) from exc


def model_files(module: Any) -> dict[str, Path]:
    """The detection, recognition and orientation model files inside the installed ``rapidocr`` package."""
    folder = Path(module.__file__).parent / "models"
    files = {task: folder / name for task, name in _MODEL_FILES.items()}
    missing = [str(file) for file in files.values() if not file.is_file()]
    if missing:
        raise OcrUnavailableError(
            f"the OCR models are missing from the installed rapidocr ({', '.join(missing)}); reinstall "
            f"it with {OCR_EXTRA_HINT}"
        )
    return files


@cache
def _engine() -> Any:
    """One RapidOCR engine per process, built from the bundled model files (no download path reached)."""
    module = require_ocr("OCR")
    files = model_files(module)
    return module.RapidOCR(
        params={
            "Global.log_level": "warning",
            "Global.text_score": 0.0,  # every box comes back; `reading_order` drops the weak ones
            "Global.use_cls": False,  # pages are upright; the 180-degree classifier costs time
            "Det.model_path": str(files["det"]),
            "Rec.model_path": str(files["rec"]),
            "Cls.model_path": str(files["cls"]),
        }
    )


def ocr_image(image: Any, min_confidence: float = MIN_CONFIDENCE) -> str:
    """The text of one page image (a Pillow image) in reading order (`reading_order`).

    :raises OcrUnavailableError: the ``ocr`` extra is not installed.
    """
    return _read_image(image, min_confidence)[0]


def _read_image(
    image: Any, min_confidence: float = MIN_CONFIDENCE, carried: OpenTable | None = None
) -> tuple[str, OpenTable | None]:
    """`read_page` of one page image's boxes."""
    engine = _engine()
    with _LOCK:  # one engine, one page at a time (onnxruntime uses the cores inside a page)
        result = engine(image.convert("RGB"))
    boxes: list[Box] = []
    for points, text, score in zip(
        result.boxes if result.boxes is not None else [], result.txts or (), result.scores or (), strict=False
    ):
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        boxes.append(Box(str(text), float(score), min(xs), min(ys), max(xs), max(ys)))
    return read_page(boxes, min_confidence, carried)


@dataclass(frozen=True)
class OpenTable:
    """A table that runs to the bottom of a page: its header's cell texts and its columns' x-ranges."""

    header: tuple[str, ...]
    columns: tuple[tuple[float, float], ...]


def reading_order(boxes: Sequence[Box], min_confidence: float = MIN_CONFIDENCE) -> str:
    """Boxes as text: lines top to bottom, boxes in a line left to right, paragraphs by vertical gaps.

    Boxes scored under `min_confidence` or with blank text are dropped. A box joins a line when their
    vertical extents overlap by at least half the smaller height; the pieces of a line are joined by a
    space, except between two CJK characters. A gap above a line of more than `PARAGRAPH_GAP` median
    line heights starts a paragraph (a blank line). A run of lines that `table_rows` finds to be a
    table becomes a paragraph of its own holding a Markdown table (`markdown_table`).
    """
    return read_page(boxes, min_confidence)[0]


def read_page(
    boxes: Sequence[Box], min_confidence: float = MIN_CONFIDENCE, carried: OpenTable | None = None
) -> tuple[str, OpenTable | None]:
    """`reading_order` of one page of a document, and the table the page ends in (None if it ends otherwise).

    `carried` is the table the previous page ended in: lines at the top of this page that fit its
    columns continue it, and are written as a table under its header repeated (as the splitter repeats
    a split table's header); a repetition of the header on this page is not taken as a row.
    """
    kept = sorted(
        (box for box in boxes if box.score >= min_confidence and box.text.strip()),
        key=lambda box: (box.top + box.bottom) / 2,
    )
    lines: list[list[Box]] = []
    for box in kept:
        line = lines[-1] if lines else None
        if line is not None:
            top, bottom = min(b.top for b in line), max(b.bottom for b in line)
            overlap = min(bottom, box.bottom) - max(top, box.top)
            if overlap >= 0.5 * min(box.height, bottom - top):
                line.append(box)
                continue
        lines.append([box])
    if not lines:
        return "", None
    for line in lines:
        line.sort(key=lambda box: box.left)
    height = statistics.median(box.height for box in kept)
    parts: list[str] = []
    previous_bottom: float | None = None
    open_table: OpenTable | None = None
    i = 0
    while i < len(lines):
        used, rows, columns = _table(lines[i:], height, carried) if i == 0 and carried else (0, [], [])
        if not used:
            used, rows, columns = _table(lines[i:], height)
        block = lines[i : i + max(1, used)]
        if previous_bottom is not None:
            gap = min(b.top for b in block[0]) - previous_bottom > PARAGRAPH_GAP * height
            parts.append("\n\n" if gap or rows or open_table else "\n")
        parts.append(markdown_table(rows) if rows else _join_line([box.text.strip() for box in block[0]]))
        previous_bottom = max(b.bottom for b in block[-1])
        open_table = OpenTable(tuple(rows[0]), tuple(columns)) if rows else None
        i += len(block)
    return "".join(parts), open_table


def table_rows(lines: Sequence[Sequence[Box]], height: float) -> list[list[str]]:
    """The cell texts of the table that starts at the first of `lines`, row by row; [] when none does.

    `lines` are lines of boxes, each left to right; `height` is the page's median box height. OCR
    gives no ruling, so a table is found by its geometry alone:

    - a line's **cells** (`_cells`) are its boxes split where the horizontal gap between two boxes
      exceeds `CELL_GAP` times the line's height (the median height of its boxes); words in a line of
      prose are a fraction of a height apart (and the recogniser mostly reads such a line as one box);
    - the first line is the **header**: it needs at least two cells, which are the table's columns;
    - each following line joins as a **row** while it has at least two cells, lies at most
      `TABLE_ROW_GAP` median line heights below the line above, and its cells each fall in a different
      column, left to right: a cell belongs to the column whose x-range it overlaps most (the header
      cell's, widened by the cells already placed in that column and by `CELL_SLACK` line heights on
      each side, so a right-aligned number under a left-aligned header still counts); a row may leave
      a column empty;
    - a header and at least one row are a table; a lone line of spaced pieces (a form field and its
      value, a title and a date) stays a line of text.
    """
    return _table(lines, height)[1]


def _table(
    lines: Sequence[Sequence[Box]], height: float, carried: OpenTable | None = None
) -> tuple[int, list[list[str]], list[tuple[float, float]]]:
    """`table_rows` with the lines it used and the columns' x-ranges; continuing `carried` if given.

    (0, [], []) when no table starts at the first line.
    """
    if not lines:
        return 0, [], []
    if carried is None:
        header = _cells(lines[0])
        if len(header) < 2:
            return 0, [], []
        columns = [_extent(cell) for cell in header]
        rows = [[_join_line([box.text.strip() for box in cell]) for cell in header]]
        used = 1
    else:
        columns, rows, used = list(carried.columns), [list(carried.header)], 0
    while used < len(lines):
        line, cells = lines[used], _cells(lines[used])
        if len(cells) < 2:
            break
        if (
            used
            and min(b.top for b in line) - max(b.bottom for b in lines[used - 1]) > TABLE_ROW_GAP * height
        ):
            break
        slack = CELL_SLACK * _line_height(line)
        placed = [_column(columns, _extent(cell), slack) for cell in cells]
        if -1 in placed or placed != sorted(set(placed)):
            break
        row = [""] * len(columns)
        for column, cell in zip(placed, cells, strict=True):
            (left, right), (cell_left, cell_right) = columns[column], _extent(cell)
            columns[column] = (min(left, cell_left), max(right, cell_right))
            row[column] = _join_line([box.text.strip() for box in cell])
        used += 1
        if carried is None or used > 1 or row != rows[0]:  # the header repeated atop a page is no row
            rows.append(row)
    if len(rows) < 2:
        return 0, [], []
    return used, rows, columns


def _line_height(line: Sequence[Box]) -> float:
    return statistics.median(box.height for box in line)


def _cells(line: Sequence[Box]) -> list[list[Box]]:
    """A line's boxes (left to right) grouped into cells: a gap over `CELL_GAP` line heights splits."""
    limit = CELL_GAP * _line_height(line)
    cells: list[list[Box]] = [[line[0]]]
    for box in line[1:]:
        if box.left - cells[-1][-1].right > limit:
            cells.append([box])
        else:
            cells[-1].append(box)
    return cells


def _extent(cell: Sequence[Box]) -> tuple[float, float]:
    """The x-range (left, right) of a cell's boxes."""
    return min(box.left for box in cell), max(box.right for box in cell)


def _column(columns: Sequence[tuple[float, float]], extent: tuple[float, float], slack: float) -> int:
    """The column whose x-range (widened by `slack`) overlaps `extent` most; -1 when none does."""
    left, right = extent
    best, best_overlap = -1, 0.0
    for index, (start, end) in enumerate(columns):
        overlap = min(right, end + slack) - max(left, start - slack)
        if overlap > best_overlap:
            best, best_overlap = index, overlap
    return best


def _join_line(pieces: list[str]) -> str:
    out = pieces[0]
    for piece in pieces[1:]:
        out += piece if _cjk(out[-1]) and _cjk(piece[0]) else f" {piece}"
    return out


def _cjk(char: str) -> bool:
    """A Chinese, Japanese or Korean character or full-width punctuation (no spaces between them)."""
    return unicodedata.east_asian_width(char) in {"W", "F"}


def image_pages(path: Path) -> list[str]:
    """The text of each page of an image file (a TIFF frame is a page), read by OCR.

    :raises OcrUnavailableError: the ``ocr`` extra is not installed (checked before the file is opened).
    :raises UnreadableFileError: not an image Pillow can read, too large, or too many frames.
    """
    require_ocr(path)
    pages: list[str] = []
    carried: OpenTable | None = None
    for frame in _frames(path):
        text, carried = _read_image(frame, carried=carried)
        pages.append(text)
    return pages


def _frames(path: Path) -> Iterator[Any]:
    from PIL import Image, ImageOps, ImageSequence, UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # Pillow's bomb warning: `MAX_IMAGE_PIXELS` below is stricter
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened = Image.open(path)
        with opened as image:
            frames = getattr(image, "n_frames", 1)
            if frames > MAX_IMAGE_PAGES:
                raise UnreadableFileError(
                    f"{path}: the image holds {frames:,} pages, more than the limit of {MAX_IMAGE_PAGES:,}"
                )
            for frame in ImageSequence.Iterator(image):
                width, height = frame.size
                if width * height > MAX_IMAGE_PIXELS:
                    raise UnreadableFileError(
                        f"{path}: the image is {width:,} x {height:,} pixels, more than the limit of "
                        f"{MAX_IMAGE_PIXELS:,} pixels"
                    )
                frame.load()
                yield ImageOps.exif_transpose(frame.convert("RGB"))
    except UnidentifiedImageError as exc:
        raise UnreadableFileError(f"{path}: not an image that can be read ({exc})") from exc
    except Image.DecompressionBombError as exc:
        raise UnreadableFileError(f"{path}: the image is too large to read ({exc})") from exc


def ocr_pdf_pages(path: Path, numbers: Sequence[int], dpi: int = PDF_DPI) -> dict[int, str]:
    """The OCR text of the given (0-based) pages of a PDF, each rendered at `dpi`.

    :raises OcrUnavailableError: the ``ocr`` extra is not installed.
    :raises UnreadableFileError: more than `MAX_IMAGE_PAGES` pages to read.
    """
    require_ocr(path)
    if len(numbers) > MAX_IMAGE_PAGES:
        raise UnreadableFileError(
            f"{path}: {len(numbers):,} pages without a text layer, more than the limit of "
            f"{MAX_IMAGE_PAGES:,} read by OCR"
        )
    import pypdfium2

    out: dict[int, str] = {}
    carried: OpenTable | None = None
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        for number in numbers:
            carried = carried if number - 1 in out else None  # a table runs on only to the next page
            page = pdf[number]
            width, height = page.get_size()
            scale = dpi / 72
            if width * height * scale * scale > MAX_IMAGE_PIXELS:
                scale = (MAX_IMAGE_PIXELS / (width * height)) ** 0.5
            out[number], carried = _read_image(page.render(scale=scale).to_pil(), carried=carried)
    finally:
        pdf.close()
    return out
