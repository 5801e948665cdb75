from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.errors import InputError, UnknownSourceError
from haygraph.retrieval.sources import (
    check_extra_meta,
    known_sources,
    match_sources,
    source_key,
    sources_under,
)


def chunk(source_id: str, file_path: str = "", tenant: str | None = None) -> Document:
    meta = {"source_id": source_id}
    if file_path:
        meta["file_path"] = file_path
    if tenant is not None:
        meta["tenant"] = tenant
    return Document(content=f"text of {source_id}", meta=meta)


@pytest.fixture
def docs(tmp_path: Path) -> list[Document]:
    return [
        chunk("sub/travel.md", str(tmp_path / "docs" / "sub" / "travel.md")),
        chunk("sub/travel.md", str(tmp_path / "docs" / "sub" / "travel.md")),  # a second chunk
        chunk("pets.md", str(tmp_path / "docs" / "pets.md")),
        chunk("pets.md", str(tmp_path / "acme" / "pets.md"), tenant="acme"),
        chunk("beir-17"),
    ]


class TestSources:
    def test_source_key(self):
        assert source_key(chunk("a.md", tenant="acme")) == ("acme", "a.md")
        assert source_key(chunk("a.md")) == (None, "a.md")

    def test_known_sources_of_one_tenant(self, docs, tmp_path):
        assert known_sources(docs, None) == {
            "sub/travel.md": str(tmp_path / "docs" / "sub" / "travel.md"),
            "pets.md": str(tmp_path / "docs" / "pets.md"),
            "beir-17": "",
        }
        assert known_sources(docs, "acme") == {"pets.md": str(tmp_path / "acme" / "pets.md")}

    def test_sources_under_a_directory(self, docs, tmp_path):
        assert sources_under(docs, [tmp_path / "docs" / "sub"], None) == {(None, "sub/travel.md")}
        assert sources_under(docs, [tmp_path / "docs"], None) == {(None, "sub/travel.md"), (None, "pets.md")}
        assert sources_under(docs, [tmp_path / "docs"], "acme") == set()
        assert sources_under(docs, [tmp_path / "doc"], None) == set()  # a prefix of a name is not a parent

    def test_match_by_id_or_path(self, docs, tmp_path):
        found = match_sources(docs, ["sub/travel.md", str(tmp_path / "docs" / "pets.md")], None, "kb")
        assert found == {(None, "sub/travel.md"), (None, "pets.md")}
        assert match_sources(docs, ["pets.md"], "acme", "kb") == {("acme", "pets.md")}

    def test_ambiguous_and_unknown(self, docs):
        with pytest.raises(InputError, match=r"several tenants \(acme, no tenant\)"):
            match_sources(docs, ["pets.md"], None, "kb")
        with pytest.raises(UnknownSourceError, match=r"not in store kb for tenant 'acme': 'sub/travel\.md'"):
            match_sources(docs, ["sub/travel.md"], "acme", "kb")

    def test_check_extra_meta(self):
        assert check_extra_meta(None) == {}
        assert check_extra_meta({"tenant": "acme", "team": "hr"}) == {"tenant": "acme", "team": "hr"}
        for bad, message in [
            ({"file_path": "/x"}, "may not set file_path"),
            ({"tenant": 3}, "non-empty string"),
            ({"": "x"}, "non-empty string keys"),
            ({"when": object()}, r"meta\['when'\] cannot be saved as JSON"),
        ]:
            with pytest.raises(InputError, match=message):
                check_extra_meta(bad)
