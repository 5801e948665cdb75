"""`MultiFormatConverter` (files -> Documents) and `read_beir_corpus` (BEIR corpus.jsonl -> Documents).

Every format becomes Markdown-like text with its structure, so `StructuredSplitter` sees headings,
lists and tables the same way whatever the file was (`haygraph.retrieval.formats`): HTML through
`formats.html` (page furniture and non-content elements dropped, the main content kept with
trafilatura), PDF through `formats.pdf` (pages, ruled tables, no running headers, footers or page
numbers, hyphenation joined; scanned pages by OCR), images (``.png``, ``.jpg``, ``.webp``,
``.tiff``) by OCR (`formats.images`, the ``ocr`` extra), office files and CSV through
`office_formats` (docx headings, lists and tables; a page per slide and per sheet), Markdown with
its scripts, styles and comments outside code removed (`formats.markdown`). Plain text is read as it
is.

PDF pages, TIFF frames, slides and sheets are joined with blank lines, and the document meta keeps their start
offsets (``page_starts``), from which `ChunkLocator` gives each chunk its ``page``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document, component
from haystack.core.serialization import default_from_dict, default_to_dict

from haygraph.retrieval.errors import (
    EmptyCorpusError,
    EmptyDocumentError,
    InputError,
    OcrUnavailableError,
    SourceConflictError,
    UnreadableFileError,
    UnsupportedFileError,
)
from haygraph.retrieval.file_reading import MAX_FILE_BYTES, check_regular_file, read_regular_file
from haygraph.retrieval.formats.archives import archive_members, export_folders
from haygraph.retrieval.formats.html import html_to_markdown
from haygraph.retrieval.formats.images import IMAGE_EXTENSIONS, image_pages, ocr_pdf_pages
from haygraph.retrieval.formats.markdown import strip_non_content
from haygraph.retrieval.formats.open_formats import (
    ODF_EXTENSIONS,
    eml_to_markdown,
    epub_chapters,
    odf_pages,
    rst_to_markdown,
)
from haygraph.retrieval.formats.pdf import pdf_pages
from haygraph.retrieval.office_formats import (
    OFFICE_EXTENSIONS,
    check_unpacked_size,
    join_pages,
    read_office,
)

__all__ = ["SUPPORTED_EXTENSIONS", "MultiFormatConverter", "html_to_markdown", "read_beir_corpus"]

logger = logging.getLogger(__name__)

SUPPORTED_EXTENSIONS = frozenset(
    {".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".zip", ".epub", ".eml", ".rst"}
    | OFFICE_EXTENSIONS
    | ODF_EXTENSIONS
    | IMAGE_EXTENSIONS
)
_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _read_pdf(path: Path) -> tuple[str, list[int]]:
    """The text of a PDF (pages joined by blank lines) and each page's start offset (`formats.pdf`).

    Pages without a text layer (scans) are read by OCR (`formats.images.ocr_pdf_pages`). Without the
    ``ocr`` extra, or with more such pages than OCR reads (`MAX_IMAGE_PAGES`), a PDF with no text at
    all is refused (`OcrUnavailableError` naming the extra, `UnreadableFileError`); one with some text
    keeps it, and its textless pages stay empty (logged): nothing it holds as text is lost.
    """
    pages = _pdf_pages(path)
    scanned = [number for number, page in enumerate(pages) if not page.strip()]
    if scanned:
        try:
            for number, text in ocr_pdf_pages(path, scanned).items():
                pages[number] = text
        except (OcrUnavailableError, UnreadableFileError) as exc:
            if len(scanned) == len(pages):
                raise
            logger.warning("%s: %d page(s) without a text layer not read: %s", path, len(scanned), exc)
    return join_pages([_newlines(page) for page in pages])


def _read_image(path: Path) -> tuple[str, list[int] | None]:
    """The OCR text of an image file; a multi-page TIFF's frames are pages (`formats.images`)."""
    pages = image_pages(path)
    if len(pages) == 1:
        return pages[0], None
    return join_pages([_newlines(page) for page in pages])


def _newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _pdf_pages(path: Path) -> list[str]:
    """The cleaned pages of a PDF (`formats.pdf.pdf_pages`; one name for tests to replace)."""
    return pdf_pages(path)


def _expand(source: str | Path) -> tuple[list[tuple[Path, str]], list[str]]:
    """The files of one source as ``(resolved path, default source id)``, and what was skipped (with reasons).

    A directory is walked recursively (sorted); ids are paths relative to it. Hidden entries (names
    starting with ``.``), unsupported file types and links (to folders or files: they may lead outside
    the directory) are skipped and reported. A file argument's default id is its name.
    """
    given = Path(source).expanduser()
    path = given.resolve()  # one file has one identity, whichever path reaches it
    if not path.is_dir():
        return [(path, path.name)], []
    found: list[tuple[Path, str]] = []
    skipped: list[str] = []
    for dirpath, dirnames, filenames in os.walk(path):
        here = Path(dirpath)
        for name in list(dirnames):
            if name.startswith("."):
                skipped.append(f"{here / name}/: hidden folder (names starting with '.' are not indexed)")
            elif (here / name).is_symlink():
                skipped.append(f"{here / name}/: link to a folder (not followed; index its target instead)")
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not (here / d).is_symlink())
        for name in filenames:
            file = here / name
            if name.startswith("."):
                skipped.append(f"{file}: hidden file (names starting with '.' are not indexed)")
            elif file.is_symlink():
                # like links to folders: a link may lead out of the indexed directory (to /etc/passwd, say)
                skipped.append(f"{file}: link to a file (not followed; index its target instead)")
            elif file.suffix.lower() not in SUPPORTED_EXTENSIONS:
                skipped.append(
                    f"{file}: unsupported file type {file.suffix.lower() or '(none)'!r}; use {_extensions()}"
                )
            elif not file.is_file():
                skipped.append(f"{file}: not a regular file (a FIFO, device or socket is never read)")
            else:
                found.append((file.resolve(), file.relative_to(path).as_posix()))
    if not found:
        raise EmptyCorpusError(f"{path}: directory holds no supported files ({_extensions()})")
    return sorted(found, key=lambda item: item[1]), sorted(skipped)


def _check_type(path: Path) -> None:
    """Raise `UnsupportedFileError` for an extension no converter handles (before the file is read)."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        raise UnsupportedFileError(
            f"{path}: unsupported file type {suffix or '(none)'!r}; use {_extensions()}"
        )


def _extensions() -> str:
    return ", ".join(sorted(SUPPORTED_EXTENSIONS))


def _title(text: str, path: Path) -> str:
    """Return the first Markdown heading of a converted text, else the file stem."""
    if path.suffix.lower() in {".md", ".markdown", ".html", ".htm", ".docx", ".odt", ".rst", ".eml", ".epub"}:
        match = _HEADING_RE.search(text)
        if match:
            return match.group(1).strip()
    return path.stem


@dataclass
class _RunState:
    """What one `MultiFormatConverter.run` has produced so far (archives add their members to it)."""

    converted: dict[Path, tuple[str, list[int] | None, str]]
    digests: dict[Path, str]
    unchanged: list[str]
    skipped: list[str]
    folders: dict[Path, list[str]] = field(default_factory=dict)
    """An archive member's folders inside the archive (an export's page hierarchy), by member."""


@component
class MultiFormatConverter:
    """Convert text, HTML, PDF, office, OpenDocument, e-book, mail, archive and image files into Documents.

    Extensions: ``.md``, ``.markdown``, ``.txt``, ``.html``/``.htm``, ``.pdf``, ``.docx``, ``.pptx``,
    ``.xlsx``, ``.csv`` (office files and CSV through `office_formats`), ``.odt``/``.ods``/``.odp``,
    ``.epub``, ``.eml``, ``.rst``, ``.zip`` and images ``.png``/``.jpg``/``.jpeg``/``.webp``/``.tiff``/
    ``.tif`` (by OCR, `formats.images`; scanned PDF pages too).

    Directories are expanded recursively to the supported files inside (sorted). Hidden files and
    folders, unsupported file types and links to folders inside a directory are not errors: they are
    listed in the ``skipped`` output as ``"path: reason"``.

    Each document's meta holds ``source_id``, ``source`` (the same id: one name for a source, as search
    and ask show it), ``file_path`` (resolved absolute
    path: the file's identity), ``title`` (first heading, else file stem) and, for PDFs, slides and
    sheets, ``page_starts`` (each page's start offset in the text), plus the caller's ``meta``
    (which cannot override those four keys). Document ids are Haystack's defaults. The source id is
    the file's POSIX path relative to the directory argument it was found in (``index docs/`` gives
    ``sub/travel.md``, whatever the working directory), or the file name for a file argument — unless
    ``known_sources`` already holds the file (by resolved path), in which case it keeps that id, so one
    file never gets two ids. Two different files may not share an id (`SourceConflictError`).

    Only regular files are read, and only up to ``max_file_bytes`` (default `MAX_FILE_BYTES`, 200 MiB,
    checked before reading): a FIFO, device or socket is never opened for reading, so it cannot hang or
    exhaust memory (`NotRegularFileError`, `FileTooLargeError`, both `UnreadableFileError`).

    A file found in a directory that cannot be read (corrupt, password-protected, too large, not a
    regular file: `UnreadableFileError`) or holds no text (pictures only; an image or a scanned PDF
    without the ``ocr`` extra: `EmptyDocumentError`, `OcrUnavailableError`) is always skipped and
    listed, so the rest of the directory is indexed. Otherwise, with ``strict=True`` the first bad
    input raises (`UnsupportedFileError`, `UnreadableFileError`, `EmptyDocumentError`,
    `SourceConflictError`, or `EmptyCorpusError` for a directory without supported files); with
    ``strict=False`` it is skipped with a warning and listed in ``skipped`` too.
    """

    def __init__(
        self, encoding: str = "utf-8", strict: bool = True, max_file_bytes: int = MAX_FILE_BYTES
    ) -> None:
        try:
            "".encode(encoding)
        except LookupError as exc:
            raise ValueError(f"encoding must be a known codec, but got {encoding!r}") from exc
        if isinstance(max_file_bytes, bool) or not isinstance(max_file_bytes, int) or max_file_bytes <= 0:
            raise ValueError(f"max_file_bytes must be an integer > 0, but got {max_file_bytes!r}")
        self.encoding = encoding
        self.strict = strict
        self.max_file_bytes = max_file_bytes

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self, encoding=self.encoding, strict=self.strict, max_file_bytes=self.max_file_bytes
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MultiFormatConverter:
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document], skipped=list[str], unchanged=list[str])
    def run(
        self,
        sources: list[str | Path],
        meta: dict[str, Any] | None = None,
        known_sources: dict[str, str] | None = None,
        known_hashes: dict[str, str] | None = None,
        skip_unreadable: bool = False,
    ) -> dict[str, Any]:
        """Convert files and directories into one Document per file.

        :param sources: File or directory paths.
        :param meta: Extra metadata added to every document.
        :param known_sources: Sources already stored, ``{source_id: resolved file path}`` (``""`` for a
            source that is not a file): a known file keeps its id, and no other file may take one.
        :param known_hashes: ``{source_id: source_hash}`` of sources already stored: a file whose hash
            (of its bytes and `meta`) is unchanged is neither read nor converted, only listed in
            ``unchanged``. Each document's meta gets its ``source_hash``.
        :param skip_unreadable: A file argument that cannot be read or holds no text is skipped and
            listed, as one found in a directory is, even when strict (the service's uploads: one bad file
            of several must not stop the others).
        :returns: ``{"documents": [...], "skipped": ["path: reason", ...], "unchanged": [source ids]}``.
        """
        hashes = known_hashes or {}
        meta_key = json.dumps(meta or {}, sort_keys=True, ensure_ascii=False, default=str).encode()
        unchanged: list[str] = []
        digests: dict[Path, str] = {}
        skipped: list[str] = []
        taken: dict[str, str] = dict(known_sources or {})
        ids_by_path = {path: source_id for source_id, path in taken.items() if path}
        converted: dict[Path, tuple[str, list[int] | None, str]] = {}  # file -> (text, page starts, id)
        state = _RunState(converted, digests, unchanged, skipped)
        for source in sources:
            try:
                files, passed_over = _expand(source)
            except InputError as exc:
                self._skip_or_raise(exc, skipped)
                continue
            for note in passed_over:
                logger.info("Skipping %s", note)
            skipped.extend(note for note in passed_over if note not in skipped)
            walked = Path(source).expanduser().is_dir()
            for path, default_id in files:
                if path in converted:
                    continue
                source_id = ids_by_path.get(str(path), default_id)
                holder = taken.get(source_id)
                try:
                    if holder is not None and holder != str(path):
                        raise SourceConflictError(
                            f"{path}: source id {source_id!r} is already used by "
                            f"{holder or 'a source that is not a file'}; index a common parent directory "
                            "instead (ids are paths relative to the directory you index), or remove that "
                            "source first"
                        )
                    check_regular_file(path, self.max_file_bytes)  # a FIFO or a device is named as such
                    _check_type(path)
                    data = read_regular_file(path, self.max_file_bytes)  # never a FIFO, device or huge file
                    if path.suffix.lower() == ".zip":
                        self._archive(path, data, source_id, meta_key, hashes, ids_by_path, taken, state)
                        continue
                    digest = hashlib.sha256(data + b"\x00" + meta_key).hexdigest()
                    if hashes.get(source_id) == digest:
                        unchanged.append(source_id)
                        taken[source_id] = str(path)
                        continue
                    converted[path] = (*self._convert(path, data), source_id)
                    digests[path] = digest
                except (UnreadableFileError, EmptyDocumentError) as exc:
                    # a corrupt, locked or textless file (a picture-only slide deck, a scanned PDF) found
                    # in a folder is reported; the folder's rest is indexed
                    self._skip_or_raise(exc, skipped, force=walked or skip_unreadable)
                    continue
                except InputError as exc:
                    self._skip_or_raise(exc, skipped)
                    continue
                taken[source_id] = str(path)
        documents = [
            Document(
                content=text,
                meta={
                    **(meta or {}),
                    "source_id": source_id,
                    "source": source_id,  # one name: what search and ask show (it was the file name)
                    "file_path": str(path),
                    "title": _title(text, path),
                    **({"page_starts": starts} if starts else {}),
                    **({"source_hash": digests[path]} if path in digests else {}),
                    **({"heading_prefix": state.folders[path]} if state.folders.get(path) else {}),
                },
            )
            for path, (text, starts, source_id) in converted.items()
        ]
        return {"documents": documents, "skipped": skipped, "unchanged": unchanged}

    def _archive(
        self,
        path: Path,
        data: bytes,
        archive_id: str,
        meta_key: bytes,
        hashes: dict[str, str],
        ids_by_path: dict[str, str],
        taken: dict[str, str],
        state: _RunState,
    ) -> None:
        """Convert the members of a zip archive, each by its type (`formats.archives`), as sources.

        A member's id is the archive's id and its path inside (``export.zip/guide/setup.html``) and its
        ``file_path`` the archive's path joined with it, so a re-indexed archive's vanished members are
        found like a folder's deleted files. A member that cannot be read is skipped and listed.
        """
        members, passed_over = archive_members(data, str(path), SUPPORTED_EXTENSIONS, self.max_file_bytes)
        state.skipped.extend(note for note in passed_over if note not in state.skipped)
        for member in members:
            inner = path / member.path  # not a real file: the member's identity (its archive and place)
            member_id = ids_by_path.get(str(inner), f"{archive_id}/{member.path}")
            holder = taken.get(member_id)
            if holder is not None and holder != str(inner):
                state.skipped.append(
                    f"{inner}: source id {member_id!r} is already used by {holder or 'another source'}"
                )
                continue
            taken[member_id] = str(inner)
            digest = hashlib.sha256(member.data + b"\x00" + meta_key).hexdigest()
            if hashes.get(member_id) == digest:
                state.unchanged.append(member_id)
                continue
            try:
                text, starts = self._convert_member(inner, member.data)
            except InputError as exc:
                logger.warning("Skipping archive member: %s", exc)
                state.skipped.append(str(exc))
                continue
            state.converted[inner] = (text, starts, member_id)
            state.digests[inner] = digest
            state.folders[inner] = export_folders(member.path)

    def _convert_member(self, inner: Path, data: bytes) -> tuple[str, list[int] | None]:
        """`_convert` for bytes that are not a file of their own (PDF and office readers get a copy)."""
        with tempfile.TemporaryDirectory(prefix="haygraph-member-") as tmp:
            copy = Path(tmp) / f"member{inner.suffix.lower()}"
            copy.write_bytes(data)
            try:
                return self._convert(copy, data)
            except InputError as exc:
                raise type(exc)(str(exc).replace(str(copy), str(inner))) from exc

    def _attachment(self, name: str, data: bytes) -> str | None:
        """A mail attachment's text, converted by its type (None: unsupported, too large or unreadable)."""
        suffix = Path(name).suffix.lower()
        if (
            suffix not in SUPPORTED_EXTENSIONS
            or suffix in {".zip", ".eml"}
            or len(data) > self.max_file_bytes
        ):
            return None
        try:
            text, _ = self._convert_member(Path(f"attachment{suffix}"), data)
        except InputError as exc:
            logger.info("attachment %r not read: %s", name, exc)
            return None
        return text

    def _skip_or_raise(self, exc: InputError, skipped: list[str], force: bool = False) -> None:
        if self.strict and not force:
            raise exc
        logger.warning("Skipping input: %s", exc)
        if str(exc) not in skipped:
            skipped.append(str(exc))

    def _convert(self, path: Path, data: bytes) -> tuple[str, list[int] | None]:
        """Convert one file (`data`: its bytes, already read); return its text and its pages' start offsets.

        PDF and office libraries open the path themselves: it is checked again to be a regular file
        within the size limit just before (it could have been swapped since `data` was read).
        """
        suffix = path.suffix.lower()
        starts: list[int] | None = None
        try:
            if suffix == ".pdf":
                check_regular_file(path, self.max_file_bytes)
                text, starts = _read_pdf(path)
            elif suffix in OFFICE_EXTENSIONS:
                check_regular_file(path, self.max_file_bytes)
                text, starts = read_office(path, self.encoding)
            elif suffix in IMAGE_EXTENSIONS:
                check_regular_file(path, self.max_file_bytes)
                text, starts = _read_image(path)
            elif suffix in ODF_EXTENSIONS or suffix == ".epub":
                check_regular_file(path, self.max_file_bytes)
                check_unpacked_size(path)  # a zip bomb is refused before anything is unpacked
                pages = odf_pages(path) if suffix in ODF_EXTENSIONS else epub_chapters(path)
                if suffix == ".odt":
                    text = pages[0] if pages else ""
                else:
                    text, starts = join_pages([_newlines(page) for page in pages])
            elif suffix == ".eml":
                text = eml_to_markdown(data, self._attachment)
            elif suffix == ".rst":
                text = rst_to_markdown(data.decode(self.encoding).lstrip("\ufeff"))
            else:
                text = data.decode(self.encoding).lstrip("\ufeff")
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(f"{path}: cannot decode as {self.encoding}: {exc.reason}") from exc
        except InputError:
            raise
        except Exception as exc:  # OSError, or any parser failure inside a PDF library
            raise UnreadableFileError(f"{path}: cannot read file: {exc}") from exc
        if suffix in {".html", ".htm"}:
            text = html_to_markdown(text)
        elif suffix in {".md", ".markdown"}:
            text = strip_non_content(text)
        if starts is None:
            text = _newlines(text)
        if not text.strip():
            hint = {
                ".pdf": " (no text layer, and OCR found no text on its pages)",
                ".pptx": " (slides of pictures or charts only; speaker notes are not read)",
                ".docx": " (pictures only?)",
            }.get(suffix, " (OCR found no text in the image)" if suffix in IMAGE_EXTENSIONS else "")
            raise EmptyDocumentError(f"{path}: file has no text content{hint}")
        return text, starts


def read_beir_corpus(
    path: str | Path, limit: int | None = None, *, keep_empty: bool = False
) -> list[Document]:
    r"""Read a BEIR ``corpus.jsonl`` (one ``{"_id", "title", "text"}`` object per line) into Documents.

    This is the one BEIR corpus reader (indexing and evaluation both use it). Content is
    ``title + "\n\n" + text`` (each stripped; the title omitted when empty), the text every retrieval
    figure in this project was measured on; meta is ``{"source_id": _id, "source": _id, "title": title}``.
    Blank lines and a leading byte-order mark are ignored; a record whose title and text are both empty
    is skipped with a warning (kept with content ``""`` when `keep_empty`: evaluation still needs its id,
    which qrels may judge); a repeated ``_id`` is an error.

    :param path: The corpus file.
    :param limit: Read at most this many documents (must be > 0).
    :param keep_empty: Return records without title and text too (content ``""``) instead of skipping them.
    :raises UnreadableFileError: The file is missing, not a regular file (a FIFO, a device) or not UTF-8.
    :raises InputError: A line is not a JSON object with a string ``_id`` and string ``title``/``text``,
        or repeats an ``_id``; the message starts with ``path:line:``.
    :raises EmptyCorpusError: The corpus holds no document.
    """
    if limit is not None and limit <= 0:
        raise ValueError(f"limit must be > 0 or None, but got {limit}")
    path = Path(path)
    check_regular_file(path, limit=None)  # streamed line by line: no size limit, but never a FIFO or device
    documents: list[Document] = []
    seen: set[str] = set()
    empty = 0
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for lineno, line in enumerate(handle, start=1):
                if limit is not None and len(documents) >= limit:
                    break
                if not line.strip():
                    continue
                doc = _beir_document(line, path, lineno, seen)
                if not doc.content:
                    empty += 1
                if doc.content or keep_empty:
                    documents.append(doc)
    except UnicodeDecodeError as exc:
        raise UnreadableFileError(f"{path}: corpus is not valid UTF-8: {exc.reason}") from exc
    except OSError as exc:
        raise UnreadableFileError(f"{path}: cannot read corpus: {exc}") from exc
    if empty and not keep_empty:
        logger.warning("%s: skipped %d record(s) with neither title nor text", path, empty)
    if not any(d.content for d in documents):
        raise EmptyCorpusError(f"{path}: corpus holds no documents")
    return documents


def _beir_document(line: str, path: Path, lineno: int, seen: set[str]) -> Document:
    """Parse one corpus line (content "" when it has neither title nor text). `seen`: ids read so far."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{lineno}: malformed JSON: {exc.msg}") from exc
    if not isinstance(record, dict) or "_id" not in record:
        raise InputError(f"{path}:{lineno}: expected an object with an '_id' field")
    doc_id, title, text = record["_id"], record.get("title") or "", record.get("text") or ""
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str) or not doc_id or not isinstance(title, str) or not isinstance(text, str):
        raise InputError(f"{path}:{lineno}: '_id', 'title' and 'text' must be strings (and '_id' non-empty)")
    if doc_id in seen:
        raise InputError(f"{path}:{lineno}: duplicate document id {doc_id!r}")
    seen.add(doc_id)
    title, text = title.strip(), text.strip()
    content = f"{title}\n\n{text}" if title and text else title or text
    return Document(content=content, meta={"source_id": doc_id, "source": doc_id, "title": title})
