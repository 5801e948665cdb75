"""OpenDocument (``.odt .ods .odp``), ``.epub``, ``.eml`` and ``.rst`` as Markdown with their structure.

- **OpenDocument**: ``content.xml`` read with lxml (entities and network off), as python-docx,
  python-pptx and openpyxl read their Office twins: ``.odt`` headings (``text:h`` at its outline
  level), paragraphs, nested lists and tables (merged cells repeat their text); ``.ods`` one page per
  sheet, the sheet's name as its heading and its cells as a Markdown table (`sheets.sheet_markdown`,
  the header row found as for ``.xlsx``); ``.odp`` one page per slide, its title as the heading, then
  its text boxes, lists and tables. Comments (``office:annotation``), tracked deletions, speaker notes
  and a table of contents are left out. No library: the format is a zip of XML whose few elements
  are read here (odfpy, the one Python ODF library, has had no release since 2020).
- **epub**: the chapters in the order of the book's spine (``META-INF/container.xml`` → the OPF
  package), each XHTML chapter through the HTML converter; one page per chapter.
- **eml**: the standard library's `email` parser (policy ``default``): the subject as the heading,
  ``From``/``To``/``Cc``/``Date`` lines, the HTML body through the HTML converter (else the plain
  one: an HTML body keeps the tables its plain-text twin loses), then each
  attachment converted by its own type under ``## Attachment: name`` (its headings one level down);
  attached messages are read the same way, three levels deep at most.
- **rst**: docutils, the reference reStructuredText parser, renders HTML (file inclusion and raw
  HTML off, so ``.. include:: /etc/passwd`` reads nothing), which the HTML converter turns into
  Markdown: section titles become headings, lists, tables (grid and simple) Markdown tables.
"""

from __future__ import annotations

import email
import email.policy
import logging
import posixpath
import re
import zipfile
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from haygraph.retrieval.errors import EmptyDocumentError, UnreadableFileError
from haygraph.retrieval.formats.html import html_to_markdown
from haygraph.retrieval.formats.sheets import sheet_markdown
from haygraph.retrieval.formats.tables import markdown_table

__all__ = ["ODF_EXTENSIONS", "eml_to_markdown", "epub_chapters", "odf_pages", "rst_to_markdown"]

logger = logging.getLogger(__name__)

ODF_EXTENSIONS = frozenset({".odt", ".ods", ".odp"})

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
}
_MAX_REPEAT = 256
"""A repeated row or column (blank margins repeat a thousand times) counts at most this often."""


def _q(name: str) -> str:
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


def _xml(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False)
    return etree.fromstring(data, parser)


def _zip_part(path: Path, part: str) -> bytes:
    try:
        with zipfile.ZipFile(path) as package:
            return package.read(part)
    except KeyError as exc:
        raise UnreadableFileError(f"{path}: not a valid package (no {part})") from exc
    except (zipfile.BadZipFile, OSError, RuntimeError) as exc:
        raise UnreadableFileError(f"{path}: cannot read package: {exc}") from exc


# -- OpenDocument ----------------------------------------------------------------------------------
_SKIP = {_q("office:annotation"), _q("text:tracked-changes"), _q("presentation:notes"), _q("text:note")}


def _text(node: Any) -> str:
    """The text of a paragraph-like element: spaces, tabs and line breaks as written, comments left out."""
    parts: list[str] = []

    def walk(element: Any) -> None:
        if element.text:
            parts.append(element.text)
        for child in element:
            if child.tag in _SKIP:
                pass
            elif child.tag == _q("text:s"):
                parts.append(" " * int(child.get(_q("text:c"), "1") or 1))
            elif child.tag == _q("text:tab"):
                parts.append("\t")
            elif child.tag == _q("text:line-break"):
                parts.append("\n")
            else:
                walk(child)
            if child.tail:
                parts.append(child.tail)

    walk(node)
    return "".join(parts).strip()


def _table(node: Any) -> list[list[str]]:
    """A table's rows of cell texts; spanned cells repeat their text, repeats bounded by `_MAX_REPEAT`."""
    rows: list[list[str]] = []
    spans: dict[int, tuple[int, str]] = {}  # column -> (rows left, text) of a cell spanning rows
    for row in node.iter(_q("table:table-row")):
        repeat = min(int(row.get(_q("table:number-rows-repeated"), "1") or 1), _MAX_REPEAT)
        cells: list[str] = []
        for cell in row:
            if cell.tag not in {_q("table:table-cell"), _q("table:covered-table-cell")}:
                continue
            count = min(int(cell.get(_q("table:number-columns-repeated"), "1") or 1), _MAX_REPEAT)
            for _ in range(count):
                column = len(cells)
                if cell.tag == _q("table:covered-table-cell"):
                    above = spans.get(column)
                    cells.append(above[1] if above else (cells[-1] if cells else ""))
                    continue
                text = " ".join(_text(p) for p in cell if p.tag in {_q("text:p"), _q("text:h")})
                cells.append(text)
                down = int(cell.get(_q("table:number-rows-spanned"), "1") or 1)
                if down > 1:
                    spans[column] = (down, text)
        spans = {c: (left - 1, t) for c, (left, t) in spans.items() if left - 1 > 0}
        if any(cells):
            rows.extend([cells] * repeat)
        elif repeat == 1:
            rows.append(cells)
    return rows


_TITLE_STYLES = frozenset({"title", "rststyle-title"})
"""The Title paragraph style: LibreOffice's ``Title``, docutils' ``rststyle-title``."""


def _title_styles(root: Any) -> frozenset[str]:
    """Paragraph style names (lower case) that are the Title style or an automatic style based on it."""
    names = set(_TITLE_STYLES)
    for style in root.iter("{urn:oasis:names:tc:opendocument:xmlns:style:1.0}style"):
        parent = (
            style.get("{urn:oasis:names:tc:opendocument:xmlns:style:1.0}parent-style-name") or ""
        ).lower()
        if parent in _TITLE_STYLES:
            names.add((style.get("{urn:oasis:names:tc:opendocument:xmlns:style:1.0}name") or "").lower())
    return frozenset(names)


def _is_title(paragraph: Any, titles: frozenset[str]) -> bool:
    return (paragraph.get(_q("text:style-name")) or "").lower() in titles


def _blocks(
    node: Any, out: list[str], depth: int = 0, shift: int = 0, titles: frozenset[str] = _TITLE_STYLES
) -> None:
    """Markdown blocks of a text body (an ``.odt`` body, a text box, a slide's frame).

    `shift`: levels added to every heading (1 under a Title paragraph, as for ``.docx``).
    """
    for child in node:
        tag = child.tag
        if tag in _SKIP or tag == _q("text:table-of-content"):
            continue
        if tag == _q("text:h"):
            level = min(max(int(child.get(_q("text:outline-level"), "1") or 1), 1) + shift, 6)
            text = _text(child)
            if text:
                out.append(f"{'#' * level} {text}")
        elif tag == _q("text:p"):
            text = _text(child)
            if text and _is_title(child, titles):
                out.append(f"# {text}")
            elif text:
                out.append(text)
            for frame in child.iter(_q("draw:text-box")):  # a text box anchored in the paragraph
                _blocks(frame, out, depth, shift, titles)
        elif tag == _q("text:list"):
            items: list[str] = []
            _list(child, items, depth)
            if items:
                out.append("\n".join(items))
        elif tag == _q("table:table"):
            rows = _table(child)
            if any(any(r) for r in rows):
                out.append(markdown_table(rows))
        elif tag in {_q("text:section"), _q("draw:frame"), _q("draw:text-box"), _q("office:text")}:
            _blocks(child, out, depth, shift, titles)


def _list(node: Any, items: list[str], depth: int) -> None:
    for item in node:
        if item.tag not in {_q("text:list-item"), _q("text:list-header")}:
            continue
        for child in item:
            if child.tag == _q("text:list"):
                _list(child, items, depth + 1)
            elif child.tag in {_q("text:p"), _q("text:h")}:
                text = _text(child)
                if text:
                    items.append(f"{'  ' * depth}- {text}")


def odf_pages(path: Path) -> list[str]:
    """The Markdown of an OpenDocument file: one page for ``.odt``, a page per sheet or slide otherwise."""
    root = _xml(_zip_part(path, "content.xml"))
    body = root.find(_q("office:body"))
    if body is None:
        raise UnreadableFileError(f"{path}: not an OpenDocument file (content.xml has no body)")
    suffix = path.suffix.lower()
    if suffix == ".ods":
        sheets = [
            sheet_markdown(sheet.get(_q("table:name"), ""), _table(sheet))
            for sheet in body.iter(_q("table:table"))
        ]
        return [s for s in sheets if s.strip()]
    if suffix == ".odp":
        pages = []
        for slide in body.iter(_q("draw:page")):
            out: list[str] = []
            frames = [f for f in slide if f.tag == _q("draw:frame")]
            title_frames = [f for f in frames if f.get(_q("presentation:class")) == "title"]
            for frame in title_frames:
                title = " ".join(_text(p) for p in frame.iter(_q("text:p")))
                if title:
                    out.append(f"## {title}")
            for frame in frames:
                if frame not in title_frames:
                    _blocks(frame, out)
            pages.append("\n\n".join(out))
        return pages
    out = []
    titles = _title_styles(root)
    titled = any(_is_title(p, titles) for p in body.iter(_q("text:p")))
    _blocks(body, out, shift=1 if titled else 0, titles=titles)
    return ["\n\n".join(out)]


# -- epub --------------------------------------------------------------------------------------------
def epub_chapters(path: Path) -> list[str]:
    """The chapters of an epub in spine order, each as Markdown (see the module docstring)."""
    container = _xml(_zip_part(path, "META-INF/container.xml"))
    rootfile = next((e.get("full-path") for e in container.iter("{*}rootfile") if e.get("full-path")), None)
    if not rootfile:
        raise UnreadableFileError(f"{path}: not an epub (META-INF/container.xml names no package)")
    package = _xml(_zip_part(path, rootfile))
    base = posixpath.dirname(rootfile)
    manifest = {
        item.get("id"): (item.get("href") or "", item.get("media-type") or "")
        for item in package.iter("{*}item")
    }
    chapters: list[str] = []
    for ref in package.iter("{*}itemref"):
        href, media = manifest.get(ref.get("idref"), ("", ""))
        if not href or "html" not in media or ref.get("linear") == "no":
            continue
        part = posixpath.normpath(posixpath.join(base, href.split("#", 1)[0]))
        if part.startswith("../") or part.startswith("/"):
            continue
        html = _zip_part(path, part).decode("utf-8", "replace")
        text = html_to_markdown(html, main_content=False)
        if text.strip():
            chapters.append(text)
    return chapters


# -- eml ---------------------------------------------------------------------------------------------
_HEADING = re.compile(r"^(#{1,5}) ", re.MULTILINE)


def eml_to_markdown(data: bytes, attachment: Callable[[str, bytes], str | None], depth: int = 0) -> str:
    """A mail message as Markdown; `attachment(name, data)` converts one attachment (None: not read)."""
    message = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(message, EmailMessage)
    return _message(message, attachment, depth)


def _message(message: EmailMessage, attachment: Callable[[str, bytes], str | None], depth: int) -> str:
    subject = str(message.get("Subject") or "").strip()
    out = [f"# {subject}"] if subject else []
    header = [f"{name}: {message[name]}" for name in ("From", "To", "Cc", "Date") if message.get(name)]
    if header:
        out.append("\n".join(header))
    body = message.get_body(preferencelist=("html", "plain"))  # HTML keeps tables; a plain twin loses them
    if body is not None:
        content = body.get_content()
        text = html_to_markdown(content) if body.get_content_type() == "text/html" else str(content)
        if text.strip():
            out.append(text.strip())
    for part in message.iter_attachments():
        name = part.get_filename() or ""
        if part.get_content_type() == "message/rfc822" and depth < 3:
            inner = part.get_content()
            if isinstance(inner, EmailMessage):
                converted: str | None = _message(inner, attachment, depth + 1)
                name = name or str(inner.get("Subject") or "message")
            else:
                converted = None
        else:
            payload = part.get_payload(decode=True)
            converted = attachment(name, payload) if name and isinstance(payload, bytes) else None
        if converted and converted.strip():
            out.append(f"## Attachment: {name}\n\n" + _HEADING.sub(r"#\1 ", converted.strip()))
        else:
            logger.info("attachment %r not read (unsupported type or no text)", name)
    return "\n\n".join(out)


# -- rst ---------------------------------------------------------------------------------------------
def rst_to_markdown(text: str) -> str:
    """Convert reStructuredText to Markdown (docutils HTML, then the HTML converter; no inclusion, no raw)."""
    try:
        from docutils.core import publish_parts  # type: ignore[import-untyped,unused-ignore]
    except ImportError as exc:  # pragma: no cover - docutils is a core dependency
        raise EmptyDocumentError("reading .rst needs docutils (pip install docutils)") from exc
    parts = publish_parts(
        source=text,
        writer="html5",
        settings_overrides={
            "file_insertion_enabled": False,
            "raw_enabled": False,
            "report_level": 5,
            "halt_level": 5,
            "warning_stream": False,
            "_disable_config": True,
            "embed_stylesheet": False,
            "doctitle_xform": False,
            "initial_header_level": 1,
            "syntax_highlight": "none",
            "input_encoding": "unicode",
        },
    )
    return html_to_markdown(str(parts["whole"]), main_content=False)
