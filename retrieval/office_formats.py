"""Text of ``.docx``, ``.pptx``, ``.xlsx`` and ``.csv`` files, as Markdown with their structure.

The conversion is `haygraph.retrieval.formats`: docx headings, lists and tables, one page per slide
and per sheet, every table a Markdown table with its header row. Their packages (python-docx,
python-pptx, openpyxl) are the optional extra ``haygraph[formats]``; CSV needs nothing. What this
module adds is the per-file error a user can act on: a password-protected, corrupt or oversized
(zip bomb) package is recognised before it is parsed and raised as `UnreadableFileError` naming the
file and the reason, which `MultiFormatConverter` lists in the index report while the rest of the
batch is indexed.

Slides (``.pptx``) and sheets (``.xlsx``) become pages: their start offsets are returned so chunks can
cite ``page`` = slide or sheet number, as for PDF pages.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from haygraph.retrieval.errors import EmptyDocumentError, UnreadableFileError, UnsupportedFileError

OFFICE_EXTENSIONS = frozenset({".docx", ".pptx", ".xlsx", ".csv"})
"""Extensions handled by `read_office`."""

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
"""Compound File header: what an encrypted (password-protected) OOXML file or a legacy .doc/.xls is."""

MAX_UNPACKED_BYTES = 256 * 1024 * 1024
"""Largest total uncompressed size of an office package's parts (a zip bomb is refused before unpacking)."""

MAX_PACKAGE_PARTS = 10_000
"""Most parts (zip entries) an office package may hold."""

PAGE_SEPARATOR = "\n\n"
"""Between pages (PDF pages, slides, sheets) in the converted text."""


def join_pages(pages: list[str]) -> tuple[str, list[int]]:
    """Join page texts with `PAGE_SEPARATOR`; return the text and each page's start offset in it."""
    starts: list[int] = []
    position = 0
    for i, page in enumerate(pages):
        if i:
            position += len(PAGE_SEPARATOR)
        starts.append(position)
        position += len(page)
    return PAGE_SEPARATOR.join(pages), starts


def check_package(path: Path) -> None:
    """Raise `UnreadableFileError` when an OOXML file cannot be read, before it is parsed.

    That is: password-protected, not a valid package, a zip bomb, a package of another kind than its
    extension, or in Strict Open XML (`EmptyDocumentError` for 0 bytes). The service's uploads run it too.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot read file: {exc}") from exc
    if head == _OLE_MAGIC:
        raise UnreadableFileError(
            f"{path}: the file is password-protected (encrypted) or in the old binary Office format; "
            f"remove the password or save it as {path.suffix.lower()} and index it again"
        )
    if not head:
        raise EmptyDocumentError(f"{path}: the file is empty (0 bytes)")
    if not zipfile.is_zipfile(path):
        raise UnreadableFileError(
            f"{path}: the file is corrupt (not a valid {path.suffix.lower()} package); re-save it"
        )
    check_unpacked_size(path)
    _check_package_kind(path)


_MAIN_PARTS = {".docx": "word/document.xml", ".xlsx": "xl/workbook.xml", ".pptx": "ppt/presentation.xml"}
"""Where Word, Excel and PowerPoint (and the libraries that write their formats) put a package's main part."""


def _check_package_kind(path: Path) -> None:
    """Raise `UnreadableFileError` for a package of another kind than its extension, or in Strict Open XML.

    A workbook renamed ``.docx`` says so (not "corrupt"); a Strict Open XML file (Office's "Strict Open
    XML" save option), which python-docx, python-pptx and openpyxl do not read (openpyxl finds no sheet
    in it), is named as such, with the fix.
    """
    suffix = path.suffix.lower()
    main = _MAIN_PARTS.get(suffix)
    if main is None:
        return
    try:
        with zipfile.ZipFile(path) as package:
            names = set(package.namelist())
            if main not in names:
                other = next((ext for ext, part in _MAIN_PARTS.items() if part in names), None)
                if other is not None:
                    raise UnreadableFileError(
                        f"{path}: the file is a {other} package named {suffix}; rename it to {other}"
                    )
                return  # an unusual layout: the parser decides
            with package.open(main) as part:
                head = part.read(4096)
    except (OSError, zipfile.BadZipFile, RuntimeError) as exc:  # RuntimeError: an encrypted zip entry
        raise UnreadableFileError(f"{path}: the file is corrupt ({exc}); re-save it") from exc
    if b"purl.oclc.org/ooxml/" in head:
        raise UnreadableFileError(
            f"{path}: the file is in Strict Open XML format, which cannot be read; save it as a standard "
            f"{suffix} (Office: Save As, the plain '{suffix}' type, not 'Strict Open XML') and index it again"
        )


def check_unpacked_size(path: Path, limit: int = MAX_UNPACKED_BYTES) -> None:
    """Raise `UnreadableFileError` when a zip package would unpack to more than `limit` bytes.

    Reads only the zip's central directory (the sizes its entries declare), so a zip bomb — a small
    file that inflates to gigabytes — is refused before any part is decompressed. The parsers then
    only inflate parts whose declared size was checked (Python's `zipfile` stops at the declared size).
    """
    try:
        with zipfile.ZipFile(path) as package:
            parts = package.infolist()
    except (OSError, zipfile.BadZipFile) as exc:
        raise UnreadableFileError(f"{path}: the file is corrupt ({exc}); re-save it") from exc
    if len(parts) > MAX_PACKAGE_PARTS:
        raise UnreadableFileError(
            f"{path}: the package holds {len(parts):,} parts, more than the limit of {MAX_PACKAGE_PARTS:,}"
        )
    unpacked = sum(part.file_size for part in parts)
    if unpacked > limit:
        raise UnreadableFileError(
            f"{path}: the package would unpack to {unpacked:,} bytes, more than the limit of {limit:,} "
            "bytes (a zip bomb, or a document too large to index)"
        )


def _require(suffix: str) -> None:
    """Raise `UnsupportedFileError` naming the extra when the parser for `suffix` is not installed."""
    module = {".docx": "docx", ".pptx": "pptx", ".xlsx": "openpyxl"}.get(suffix)
    if module is None:
        return
    try:
        __import__(module)
    except ImportError as exc:
        raise UnsupportedFileError(
            f"reading {suffix} files needs the optional formats extra: pip install 'haygraph[formats]'"
        ) from exc


def read_office(path: Path, encoding: str = "utf-8") -> tuple[str, list[int] | None]:
    """The Markdown text of one office or CSV file, and the start offsets of its slides or sheets (else None).

    :param path: The file.
    :param encoding: The text encoding of a ``.csv`` file.
    :raises UnsupportedFileError: the extension is not handled, or the `formats` extra is missing.
    :raises UnreadableFileError: the file is password-protected, corrupt, not text in `encoding` (CSV),
        or its parser failed on it.
    """
    suffix = path.suffix.lower()
    if suffix not in OFFICE_EXTENSIONS:
        raise UnsupportedFileError(f"{path}: not an office file ({', '.join(sorted(OFFICE_EXTENSIONS))})")
    if suffix != ".csv":
        check_package(path)
    _require(suffix)
    from haygraph.retrieval.formats.docx import docx_to_markdown
    from haygraph.retrieval.formats.sheets import csv_to_markdown, xlsx_pages
    from haygraph.retrieval.formats.slides import pptx_pages

    try:
        if suffix == ".pptx":
            return join_pages(pptx_pages(path))
        if suffix == ".xlsx":
            return join_pages(xlsx_pages(path))
        if suffix == ".docx":
            return docx_to_markdown(path), None
        return csv_to_markdown(path.read_bytes(), encoding), None
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{path}: cannot decode as {encoding}: {exc.reason}") from exc
    except (OSError, MemoryError):
        raise
    except Exception as exc:  # a parser's own error on a damaged part (KeyError, XMLSyntaxError, ...)
        raise UnreadableFileError(
            f"{path}: the file is corrupt or unreadable ({type(exc).__name__}: {exc}); re-save it"
        ) from exc
