"""Text in images: image files and scanned PDF pages read by an offline OCR model (the ``ocr`` extra).

The model is RapidOCR's (``rapidocr``, Apache-2.0): PP-OCRv6 small text detection and recognition
(simplified and traditional Chinese, English, digits and punctuation in one recogniser), run by
onnxruntime. Its ONNX files ship inside the wheel and are loaded by path (`model_files`), so nothing is
downloaded at run time; a missing file is an error, never a download.

- **Reading order.** The model gives text boxes; `reading_order` puts them back into lines: boxes
  whose vertical extents overlap by at least half the smaller box's height are one line, read left to
  right (joined by a space, or by nothing between two Chinese characters); lines go top to bottom, and
  a gap above a line larger than `PARAGRAPH_GAP` times the median line height starts a paragraph (a
  blank line, as the splitter expects). A table's cells on one row become one line. Two text columns
  side by side are read across, line by line (no column detection).
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

__all__ = [
    "IMAGE_EXTENSIONS",
    "MAX_IMAGE_PAGES",
    "MAX_IMAGE_PIXELS",
    "MIN_CONFIDENCE",
    "OCR_EXTRA_HINT",
    "PARAGRAPH_GAP",
    "PDF_DPI",
    "Box",
    "image_pages",
    "model_files",
    "ocr_image",
    "ocr_pdf_pages",
    "reading_order",
    "require_ocr",
]

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".webp", ".tiff", ".tif"})
MIN_CONFIDENCE = 0.5
"""Recognition score (0..1) under which a text box is dropped as noise."""
PARAGRAPH_GAP = 0.8
"""A gap above a line larger than this many median line heights starts a new paragraph."""
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
    return reading_order(boxes, min_confidence)


def reading_order(boxes: Sequence[Box], min_confidence: float = MIN_CONFIDENCE) -> str:
    """Boxes as text: lines top to bottom, boxes in a line left to right, paragraphs by vertical gaps.

    Boxes scored under `min_confidence` or with blank text are dropped. A box joins a line when their
    vertical extents overlap by at least half the smaller height; the pieces of a line are joined by a
    space, except between two CJK characters. A gap above a line of more than `PARAGRAPH_GAP` median
    line heights starts a paragraph (a blank line).
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
        return ""
    height = statistics.median(box.height for box in kept)
    parts: list[str] = []
    previous_bottom: float | None = None
    for line in lines:
        line.sort(key=lambda box: box.left)
        top = min(b.top for b in line)
        if previous_bottom is not None:
            parts.append("\n\n" if top - previous_bottom > PARAGRAPH_GAP * height else "\n")
        parts.append(_join_line([box.text.strip() for box in line]))
        previous_bottom = max(b.bottom for b in line)
    return "".join(parts)


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
    return [ocr_image(frame) for frame in _frames(path)]


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
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        for number in numbers:
            page = pdf[number]
            width, height = page.get_size()
            scale = dpi / 72
            if width * height * scale * scale > MAX_IMAGE_PIXELS:
                scale = (MAX_IMAGE_PIXELS / (width * height)) ** 0.5
            out[number] = ocr_image(page.render(scale=scale).to_pil())
    finally:
        pdf.close()
    return out
