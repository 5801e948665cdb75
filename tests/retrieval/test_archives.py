"""`.zip` archives: members indexed by their own type as ``archive.zip/inner/path``, hostile archives refused.

Real zip files written with `zipfile`; the KnowledgeBase test uses the fake embedder of the other
indexing tests (what it checks is which sources are kept and removed).
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from haygraph.retrieval.converters import MultiFormatConverter
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import InputError, UnreadableFileError
from haygraph.retrieval.formats import archives
from haygraph.retrieval.knowledge_base import KnowledgeBase
from tests.retrieval.store_helpers import fake_warm_up

HOME = (
    "<html><body><nav>Space menu</nav>"
    "<main><h1>Home</h1><p>Welcome to the team space.</p></main></body></html>"
)


def write_zip(path: Path, members: dict[str, bytes | str], compression: int = zipfile.ZIP_DEFLATED) -> Path:
    with zipfile.ZipFile(path, "w", compression) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def zip_bytes(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def convert(*paths: Path) -> dict:
    return MultiFormatConverter().run(list(paths))


def test_members_are_read_by_their_own_type_with_ids_inside_the_archive(tmp_path: Path) -> None:
    export = write_zip(
        tmp_path / "export.zip",
        {
            "Space/Home.html": HOME,
            "Space/Child/Page.md": "# Child page\n\nThe quorum is seven members.",
            "rooms.csv": "room,seats\nOak,12\n",
            "notes.txt": "Plain notes.",
            "setup.exe": b"MZ",
            "Space/": "",
        },
    )
    result = convert(export)
    by_id = {d.meta["source_id"]: d for d in result["documents"]}
    assert sorted(by_id) == [
        "export.zip/Space/Child/Page.md",
        "export.zip/Space/Home.html",
        "export.zip/notes.txt",
        "export.zip/rooms.csv",
    ]
    home = by_id["export.zip/Space/Home.html"]
    assert home.content == "# Home\n\nWelcome to the team space." and home.meta["title"] == "Home"
    assert home.meta["file_path"] == str(export.resolve() / "Space" / "Home.html")
    assert "| Oak | 12 |" in (by_id["export.zip/rooms.csv"].content or "")
    assert result["skipped"] == [f"{export.resolve()}/setup.exe: unsupported file type '.exe'"]


def test_names_that_climb_out_links_hidden_and_encrypted_members_are_skipped(tmp_path: Path) -> None:
    members: dict[str, bytes | str] = {
        "ok.md": "# Fine\n\nA fine page.",
        "../escape.md": "# x",
        "a/../../escape2.md": "# x",
        "/etc/passwd.md": "# x",
        "C:/windows.md": "# x",
        "back\\slash.md": "# x",
        ".git/config.md": "# x",
        "__MACOSX/._ok.md": "# x",
    }
    path = write_zip(tmp_path / "bad.zip", members)
    with zipfile.ZipFile(path, "a") as archive:
        link = zipfile.ZipInfo("link.md")
        link.external_attr = (0o120777 << 16) | 0
        archive.writestr(link, "/etc/passwd")
    result = convert(path)
    assert [d.meta["source_id"] for d in result["documents"]] == ["bad.zip/ok.md"]
    reasons = " | ".join(result["skipped"])
    assert reasons.count("climbs out") == 2 and reasons.count("absolute path") == 2
    assert "backslash" in reasons and reasons.count("hidden") == 2 and "a link" in reasons
    assert not (tmp_path.parent / "escape.md").exists()  # nothing is ever written next to the archive


def test_zip_bombs_and_too_many_members_refuse_the_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archives, "MAX_UNPACKED_BYTES", 10 * 1024 * 1024)
    bomb = write_zip(tmp_path / "bomb.zip", {"zeros.txt": b"0" * (50 * 1024 * 1024)})
    assert bomb.stat().st_size < 200_000  # 50 MB unpacked from a small file
    with pytest.raises(UnreadableFileError, match="zip bomb"):
        convert(bomb)
    # nested bombs count towards the same total: ten 2 MB members inside a zip inside the zip
    nested = write_zip(
        tmp_path / "nested.zip", {"inner.zip": zip_bytes({f"p{i}.txt": b"1" * 2**21 for i in range(6)})}
    )
    with pytest.raises(UnreadableFileError, match="zip bomb"):
        convert(nested)
    monkeypatch.setattr(archives, "MAX_MEMBERS", 5)
    many = write_zip(tmp_path / "many.zip", {f"p{i}.md": f"# Page {i}\n\ntext {i}" for i in range(6)})
    with pytest.raises(UnreadableFileError, match="more than 5 members"):
        convert(many)
    # inside a folder a refused archive is listed and the rest is indexed
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "fine.md").write_text("# Fine\n\nFine text.", encoding="utf-8")
    many.rename(folder / "many.zip")
    result = convert(folder)
    assert [d.meta["source_id"] for d in result["documents"]] == ["fine.md"]
    assert any("more than 5 members" in line for line in result["skipped"])


def test_a_header_that_lies_about_its_size_is_caught_while_unpacking(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "liar.zip", {"page.md": "# Page\n\n" + "words " * 50_000}, zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    # shrink the size the central directory declares (uncompressed size at offset 24 of its entry)
    central = data.rfind(b"PK\x01\x02")
    data[central + 24 : central + 28] = (100).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(UnreadableFileError, match=r"liar\.zip"):
        convert(path)


def test_archives_nest_two_levels_deep(tmp_path: Path) -> None:
    level3 = zip_bytes({"l3.md": "# Level three\n\ntoo deep"})
    level2 = zip_bytes({"l2.md": "# Level two\n\nstill read", "l3.zip": level3})
    level1 = zip_bytes({"l1.md": "# Level one\n\nread", "l2.zip": level2})
    path = write_zip(tmp_path / "outer.zip", {"top.md": "# Top\n\ntop text", "l1.zip": level1})
    result = convert(path)
    assert sorted(d.meta["source_id"] for d in result["documents"]) == [
        "outer.zip/l1.zip/l1.md",
        "outer.zip/l1.zip/l2.zip/l2.md",
        "outer.zip/top.md",
    ]
    assert any("l2.zip/l3.zip: an archive nested more than 2 levels deep" in s for s in result["skipped"])


def test_reindexing_an_archive_keeps_unchanged_members_and_removes_vanished_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)
    path = write_zip(
        tmp_path / "export.zip",
        {"a.md": "# A\n\nAlpha text.", "b.md": "# B\n\nBeta text.", "c.md": "# C\n\nGamma text."},
    )
    kb = KnowledgeBase(store_dir=tmp_path / "store")
    first = kb.index(path)
    assert first.sources == 3
    write_zip(path, {"a.md": "# A\n\nAlpha text.", "b.md": "# B\n\nBeta text, edited."})
    again = kb.index(path)
    assert (again.sources, again.unchanged, again.removed_sources) == (1, 1, ["export.zip/c.md"])
    assert {d.meta["source_id"] for d in kb.store.documents} == {"export.zip/a.md", "export.zip/b.md"}
    assert kb.search("Beta edited", config="bm25").hits[0].source == "export.zip/b.md"


def test_an_exports_page_hierarchy_becomes_the_heading_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)
    notion = "Team Wiki 0123456789abcdef0123456789abcdef"
    path = write_zip(
        tmp_path / "export.zip",
        {
            "Space/Child/Page.md": "# Child page\n\n## Rules\n\nThe quorum is seven members.",
            f"{notion}/Travel.md": "# Travel\n\nBook trains two weeks ahead.",
            "top.md": "# Top\n\nTop-level page.",
        },
    )
    kb = KnowledgeBase(store_dir=tmp_path / "store")
    kb.index(path)
    paths = {d.meta["source_id"]: d.meta["heading_path"] for d in kb.store.documents}
    assert paths["export.zip/Space/Child/Page.md"] == ["Space", "Child", "Child page", "Rules"]
    assert paths[f"export.zip/{notion}/Travel.md"] == ["Team Wiki", "Travel"]
    assert paths["export.zip/top.md"] == ["Top"]
    with pytest.raises(InputError, match="heading_prefix"):
        kb.index(path, meta={"heading_prefix": ["x"]})
