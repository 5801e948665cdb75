"""Character error rate and seconds per page of the OCR reader, on pages rendered from known text.

    python -m benchmarks.bench_ocr [--repeat N] [--write-samples DIR]

Each case is rendered here with Pillow (DejaVu Sans for English, WenQuanYi Zen Hei for Chinese: Debian's
``fonts-dejavu-core`` and ``fonts-wqy-zenhei``), A4 width at 150 dpi (1240 pixels), then read by
`haygraph.retrieval.formats.images` as `MultiFormatConverter` reads an image file:

- ``en``: English paragraphs, clean (black on white, 26 px text);
- ``zh``: Chinese paragraphs, clean;
- ``table``: a ruled table of four columns (English and Chinese cells), read back as a Markdown table;
- ``photo``: the English page as a phone photo might give it: rotated 2 degrees, grey paper, blurred,
  Gaussian noise and saved as a JPEG at quality 60;
- ``photo-zh``: the Chinese page treated the same way;
- ``scan-pdf``: the English page wrapped in a PDF with no text layer (Pillow's PDF writer), read through
  `MultiFormatConverter` (the PDF reader finds no text and renders the page for OCR).

The character error rate is the edit distance between the known text and the OCR text over the known
text's length, both NFKC-normalised (full-width and half-width punctuation are one), whitespace runs as
one space and no space next to a Chinese character (line breaks are layout, not text). A table read back
as a Markdown table is compared without its markup (`plain`: the ``|---|`` rule line dropped, each ``|``
a space), so the CER counts the cell texts and their order, row by row. Printed per case:
CER, seconds per page (wall clock, mean of `--repeat` runs after one warm-up run that loads the
model), CPU seconds per page (all threads: steadier than the wall clock on a shared machine) and the
page size. `--write-samples DIR` writes the small test images of ``tests/retrieval/data/ocr`` (the tests must
not need the fonts) and exits.
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
import unicodedata
from pathlib import Path
from typing import Any

LATIN_FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
CJK_FONT = "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc"
WIDTH = 1240
MARGIN = 90

EN = [
    "Travel expenses policy",
    "Employees who travel on company business are reimbursed for economy class rail and air fares, "
    "hotel rooms up to 140 euros a night and meals up to 45 euros a day. Receipts must be submitted "
    "within 30 days of the return date through the expenses portal.",
    "Taxis are reimbursed only when no public transport runs, after 22:00, or when the traveller carries "
    "equipment heavier than 15 kg. A private car is paid at 0.30 euros per kilometre.",
    "Questions about a claim go to the finance office, room 2.14, open Monday to Thursday "
    "from 9:00 to 16:00.",
]
ZH = [
    "差旅费用报销制度",
    "员工因公出差，可报销经济舱机票和二等座火车票，住宿费每晚不超过四百元，伙食补助每天一百元。"
    "报销单据须在返回之日起三十日内通过报销系统提交。",
    "只有在没有公共交通、晚上十点以后或携带超过十五公斤的设备时，才可报销出租车费用。"
    "使用私家车按每公里一元二角计算。",
    "报销问题请联系财务部，办公室在二楼二一四室，周一至周四上午九点到下午四点办公。",
]
TABLE = [
    ["Level", "Monthly fee", "Spaces", "停车层说明"],
    ["B1", "120 EUR", "48", "电动车充电"],
    ["B2", "90 EUR", "64", "普通车位"],
    ["Roof", "60 EUR", "30", "露天车位"],
]
SAMPLE_EN = [
    "Notice to staff",
    "The north entrance is closed for repairs until 14 March.",
    "Deliveries go to gate C, where the parcel room opens at 7:30.",
]
SAMPLE_ZH = [
    "食堂通知",
    "三楼食堂周六停止营业。",
    "工作日午餐供应时间为十一点半到下午一点。",
]


def _font(path: str, size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.truetype(path, size)


def _wrap(text: str, font: Any, width: int) -> list[str]:
    """`text` broken into lines no wider than `width` pixels (at spaces, or anywhere in Chinese)."""
    pieces = text.split(" ") if " " in text else list(text)
    joiner = " " if " " in text else ""
    lines: list[str] = []
    line = ""
    for piece in pieces:
        candidate = f"{line}{joiner}{piece}" if line else piece
        if font.getlength(candidate) <= width or not line:
            line = candidate
        else:
            lines.append(line)
            line = piece
    return [*lines, line] if line else lines


def render_paragraphs(paragraphs: list[str], font_path: str, size: int = 26, width: int = WIDTH) -> Any:
    """A white page with `paragraphs` set in black, the first as a larger title."""
    from PIL import Image, ImageDraw

    body, title = _font(font_path, size), _font(font_path, int(size * 1.4))
    blocks = [
        (_wrap(p, title if i == 0 else body, width - 2 * MARGIN), title if i == 0 else body)
        for i, p in enumerate(paragraphs)
    ]
    step = int(size * 1.5)
    height = MARGIN * 2 + sum(len(lines) * step + step for lines, _ in blocks)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    y = MARGIN
    for lines, font in blocks:
        for line in lines:
            draw.text((MARGIN, y), line, font=font, fill="black")
            y += step
        y += step
    return image


def render_table(rows: list[list[str]], size: int = 26) -> Any:
    """A ruled table, one font able to set both scripts (WenQuanYi Zen Hei)."""
    from PIL import Image, ImageDraw

    font = _font(CJK_FONT, size)
    cell_h = int(size * 2.2)
    image = Image.new("RGB", (WIDTH, MARGIN * 2 + cell_h * len(rows)), "white")
    draw = ImageDraw.Draw(image)
    for r, row in enumerate(rows):
        _draw_row(draw, row, MARGIN + r * cell_h, font, size, WIDTH - 2 * MARGIN)
    return image


def _draw_row(draw: Any, row: list[str] | tuple[str, ...], y: int, font: Any, size: int, width: int) -> int:
    """One ruled table row of equal cells across `width` pixels from the margin at `y`; its height."""
    cell_w, cell_h = width // len(row), int(size * 2.2)
    for c, cell in enumerate(row):
        x = MARGIN + c * cell_w
        draw.rectangle((x, y, x + cell_w, y + cell_h), outline="black", width=2)
        draw.text((x + 14, y + (cell_h - size) // 2), cell, font=font, fill="black")
    return cell_h


PAGE_HEIGHT = 1754
"""An A4 page's height at 150 dpi (its width is `WIDTH`)."""


def render_pages(
    blocks: list[tuple[str, Any]], font_path: str, size: int = 26, page_height: int = PAGE_HEIGHT
) -> list[Any]:
    """Blocks set on white A4 pages (150 dpi), a new page when one is full; the pages (grayscale images).

    A block is ``("title", text)``, ``("heading", text)``, ``("text", text)`` or ``("table", rows)``:
    a title 1.4 times and a heading 1.2 times the body `size`, wrapped paragraphs in `font_path`, and
    tables as `render_table` rules them (WenQuanYi Zen Hei, which sets both scripts). A table row or a
    line is never split across pages.
    """
    from PIL import Image, ImageDraw

    fonts = {
        "title": _font(font_path, int(size * 1.4)),
        "heading": _font(font_path, int(size * 1.2)),
        "text": _font(font_path, size),
    }
    table_font, step = _font(CJK_FONT, size), int(size * 1.5)
    pages: list[Any] = []
    draw: Any = None
    y = page_height

    def room(height: int) -> None:
        nonlocal draw, y
        if y + height > page_height - MARGIN:
            pages.append(Image.new("L", (WIDTH, page_height), 255))
            draw, y = ImageDraw.Draw(pages[-1]), MARGIN

    for kind, content in blocks:
        if kind == "table":
            for row in content:
                room(int(size * 2.2))
                y += _draw_row(draw, row, y, table_font, size, WIDTH - 2 * MARGIN)
        else:
            font = fonts[kind]
            line_step = step if kind == "text" else int(font.size * 1.5)
            for line in _wrap(content, font, WIDTH - 2 * MARGIN):
                room(line_step)
                draw.text((MARGIN, y), line, font=font, fill=0)
                y += line_step
        y += step // 2 if kind == "heading" else step
    return pages


def photographed(image: Any, seed: int = 7) -> Any:
    """`image` as a phone photo: rotated 2 degrees on grey paper, blurred, noisy, a JPEG at quality 60."""
    import io

    import numpy as np
    from PIL import Image, ImageFilter

    grey = Image.new("RGB", image.size, (205, 200, 190))
    paper = Image.blend(image, grey, 0.25)
    tilted = paper.rotate(2, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=(120, 115, 110))
    blurred = tilted.filter(ImageFilter.GaussianBlur(0.8))
    rng = np.random.default_rng(seed)
    pixels = np.asarray(blurred, dtype=np.float32) + rng.normal(0, 14, (blurred.height, blurred.width, 3))
    noisy = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    buffer = io.BytesIO()
    noisy.save(buffer, format="JPEG", quality=60)
    buffer.seek(0)
    return Image.open(buffer).convert("RGB")


def plain(text: str) -> str:
    """Text without Markdown table markup: rule lines (``|---|---|``) dropped, cell bars as spaces."""
    lines = [line for line in text.splitlines() if not re.fullmatch(r"\s*\|?(?:\s*:?-+:?\s*\|)+\s*", line)]
    return "\n".join(re.sub(r"(?<!\\)\|", " ", line) for line in lines)


def normalized(text: str) -> str:
    """NFKC, whitespace runs as one space, no space beside a Chinese character (see the module docstring)."""
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    return re.sub(r"(?<=[\u3000-\u9fff]) | (?=[\u3000-\u9fff])", "", text)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions and substitutions cost 1)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate of `hypothesis` against `reference`, both `normalized` (`hypothesis` `plain`)."""
    ref, hyp = normalized(reference), normalized(plain(hypothesis))
    return edit_distance(ref, hyp) / max(1, len(ref))


def write_samples(folder: Path) -> list[Path]:
    """The test images: a short English and a short Chinese notice and the ruled table (small PNGs, 1-bit)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, lines, font in (
        ("notice-en.png", SAMPLE_EN, LATIN_FONT),
        ("notice-zh.png", SAMPLE_ZH, CJK_FONT),
    ):
        image = render_paragraphs(lines, font, size=24, width=900).convert("1")
        image.save(folder / name, optimize=True)
        out.append(folder / name)
    render_table(TABLE, size=24).convert("1").save(folder / "table.png", optimize=True)
    out.append(folder / "table.png")
    return out


def main(argv: list[str] | None = None) -> int:
    """Render the cases, read them, print CER and seconds per page (or write the test samples)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per case (default 3)")
    parser.add_argument("--write-samples", type=Path, help="write the test images to this folder and exit")
    args = parser.parse_args(argv)
    if args.write_samples:
        for path in write_samples(args.write_samples):
            print(f"wrote {path} ({path.stat().st_size:,} bytes)")
        return 0

    from haygraph.retrieval.converters import MultiFormatConverter
    from haygraph.retrieval.formats.images import ocr_image

    random.seed(0)
    en_page = render_paragraphs(EN, LATIN_FONT)
    zh_page = render_paragraphs(ZH, CJK_FONT)
    cases: list[tuple[str, Any, str]] = [
        ("en", en_page, "\n".join(EN)),
        ("zh", zh_page, "\n".join(ZH)),
        ("table", render_table(TABLE), "\n".join(" ".join(row) for row in TABLE)),
        ("photo", photographed(en_page), "\n".join(EN)),
        ("photo-zh", photographed(zh_page), "\n".join(ZH)),
    ]
    ocr_image(en_page)  # warm-up: loads the model
    print(f"{'case':<10} {'CER':>7} {'s/page':>7} {'cpu s':>6}  size")
    for name, image, reference in cases:
        times, cpu = [], []
        for _ in range(args.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            text = ocr_image(image)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
        seconds, cpu_seconds = sum(times) / len(times), sum(cpu) / len(cpu)
        print(
            f"{name:<10} {cer(reference, text):7.2%} {seconds:7.2f} {cpu_seconds:6.2f}  "
            f"{image.width}x{image.height}"
        )
    with tempfile.TemporaryDirectory() as tmp:
        pdf = Path(tmp) / "scan.pdf"
        en_page.save(pdf, resolution=150)
        converter = MultiFormatConverter()
        times, cpu = [], []
        for _ in range(args.repeat):
            started, cpu_started = time.perf_counter(), time.process_time()
            document = converter.run([pdf])["documents"][0]
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - cpu_started)
        print(
            f"{'scan-pdf':<10} {cer(chr(10).join(EN), document.content or ''):7.2%} "
            f"{sum(times) / len(times):7.2f} {sum(cpu) / len(cpu):6.2f}  the en page as an image-only PDF, "
            "rendered at 200 dpi"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
