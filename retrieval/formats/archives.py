r"""The members of a ``.zip`` archive (a Confluence or Notion export, a folder sent as one file), safely.

`archive_members(data, name)` lists the members `MultiFormatConverter` indexes, each by its own type,
with its path inside the archive (``guide/setup.html``; a nested archive's members as
``inner.zip/page.md``), and the members it passed over with why. What a hostile archive tries is
refused before anything is unpacked, or while it is:

- more than `MAX_MEMBERS` entries, or a declared unpacked total over `MAX_UNPACKED_BYTES` (a zip
  bomb): the whole archive is refused (`UnreadableFileError`);
- a member whose bytes, counted while they are unpacked, pass its declared size or the limits (a
  lying header): the whole archive is refused;
- a name that climbs out (``../``), is absolute (``/etc/passwd``, ``C:\\``), holds a backslash or a NUL,
  names a link, is encrypted, or is hidden (``.git/``, ``__MACOSX/``): that member is skipped and listed;
- archives inside archives deeper than `MAX_NESTING`: skipped and listed.

Nothing is written to disk here: members are read into memory, each up to the converter's file limit.
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from dataclasses import dataclass

from haygraph.retrieval.errors import UnreadableFileError

__all__ = ["MAX_MEMBERS", "MAX_NESTING", "MAX_UNPACKED_BYTES", "Member", "archive_members", "export_folders"]

MAX_MEMBERS = 10_000
"""Most entries an archive (nested ones included) may hold."""

MAX_UNPACKED_BYTES = 512 * 1024 * 1024
"""Largest total unpacked size of an archive's members (nested ones included)."""

MAX_NESTING = 2
"""Archives inside an archive are read this many levels deep (``a.zip/b.zip/c.md`` is level 1)."""


_NOTION_ID = re.compile(r"\s+[0-9a-f]{32}$")


def export_folders(path: str) -> list[str]:
    """The folders of a member path as page titles: an export's hierarchy (``Space/Parent/page.md``).

    Notion names a page's folder ``Title <32 hex digits>``: the id is dropped; a nested archive's
    name (``old.zip``) is not a title and is left out.
    """
    folders = path.split("/")[:-1]
    return [_NOTION_ID.sub("", f).strip() for f in folders if f and not f.lower().endswith(".zip")]


@dataclass(frozen=True)
class Member:
    """One member to index: its path inside the archive and its bytes."""

    path: str
    data: bytes


class _Budget:
    def __init__(self) -> None:
        self.members = 0
        self.bytes = 0


def archive_members(
    data: bytes,
    name: str,
    supported: frozenset[str],
    max_member_bytes: int,
) -> tuple[list[Member], list[str]]:
    """The members of the zip archive `data` whose type is in `supported`, and ``"name/path: reason"`` skips.

    :param name: How the archive is named in messages (its path).
    :param supported: Extensions (``.md``...) to read; others are listed as skipped. ``.zip`` members
        are opened in turn, down to `MAX_NESTING` levels.
    :param max_member_bytes: A member larger than this (unpacked) is skipped.
    :raises UnreadableFileError: Not a zip archive, encrypted as a whole, too many members, or a zip bomb.
    """
    members: list[Member] = []
    skipped: list[str] = []
    _walk(data, name, "", 0, supported, max_member_bytes, _Budget(), members, skipped)
    return members, skipped


def _unsafe(filename: str) -> str | None:
    """Why a member name is refused (None: safe)."""
    if "\x00" in filename or "\\" in filename:
        return "a backslash or NUL in its name"
    if filename.startswith("/") or (len(filename) > 1 and filename[1] == ":"):
        return "an absolute path"
    if any(part == ".." for part in filename.split("/")):
        return "a name that climbs out of the archive ('..')"
    return None


def _walk(
    data: bytes,
    name: str,
    prefix: str,
    depth: int,
    supported: frozenset[str],
    max_member_bytes: int,
    budget: _Budget,
    members: list[Member],
    skipped: list[str],
) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnreadableFileError(f"{name}: not a readable zip archive ({exc})") from exc
    with archive:
        infos = archive.infolist()
        budget.members += len(infos)
        if budget.members > MAX_MEMBERS:
            raise UnreadableFileError(f"{name}: more than {MAX_MEMBERS:,} members; refused")
        declared = sum(info.file_size for info in infos)
        if budget.bytes + declared > MAX_UNPACKED_BYTES:
            raise UnreadableFileError(
                f"{name}: would unpack to {declared:,} bytes, over the limit of {MAX_UNPACKED_BYTES:,} "
                "(a zip bomb?); refused"
            )
        for info in infos:
            if info.is_dir():
                continue
            path = info.filename
            where = f"{name}/{prefix}{path}"
            why = _unsafe(path)
            if why is None and any(part.startswith(".") or part == "__MACOSX" for part in path.split("/")):
                why = "hidden (names starting with '.' and __MACOSX are not indexed)"
            if why is None and stat.S_ISLNK(info.external_attr >> 16):
                why = "a link (not followed)"
            if why is None and info.flag_bits & 0x1:
                why = "encrypted"
            suffix = ("." + path.rsplit(".", 1)[1].lower()) if "." in path.rsplit("/", 1)[-1] else ""
            if why is None and suffix != ".zip" and suffix not in supported:
                why = f"unsupported file type {suffix or '(none)'!r}"
            if why is None and info.file_size > max_member_bytes:
                why = f"{info.file_size:,} bytes unpacked, over the limit of {max_member_bytes:,}"
            if why is None and suffix == ".zip" and depth >= MAX_NESTING:
                why = f"an archive nested more than {MAX_NESTING} levels deep"
            if why is not None:
                skipped.append(f"{where}: {why}")
                continue
            content = _read(archive, info, where, budget)
            if suffix == ".zip":
                _walk(
                    content,
                    name,
                    f"{prefix}{path}/",
                    depth + 1,
                    supported,
                    max_member_bytes,
                    budget,
                    members,
                    skipped,
                )
            else:
                members.append(Member(f"{prefix}{path}", content))


def _read(archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, budget: _Budget) -> bytes:
    """A member's bytes, counted while unpacking: more than declared or over the total refuses all."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as handle:
            while chunk := handle.read(1024 * 1024):
                size += len(chunk)
                budget.bytes += len(chunk)
                if size > info.file_size or budget.bytes > MAX_UNPACKED_BYTES:
                    raise UnreadableFileError(
                        f"{where}: unpacks to more than it declares (a zip bomb?); refused"
                    )
                chunks.append(chunk)
    except (zipfile.BadZipFile, OSError, EOFError, RuntimeError, NotImplementedError) as exc:
        raise UnreadableFileError(f"{where}: cannot unpack ({exc})") from exc
    return b"".join(chunks)
