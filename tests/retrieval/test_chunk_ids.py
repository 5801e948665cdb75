import copy
import hashlib

import pytest
from haystack import Document

from haygraph.retrieval.chunk_ids import (
    ChunkIdentifier,
    ContentDeduplicator,
    chunk_digest,
    content_hash,
    normalize_for_hash,
)
from haygraph.retrieval.errors import InputError


class TestNormalizeForHash:
    def test_nfkc_whitespace_case(self):
        # NFKC folds full-width letters and the "ﬁ" ligature; whitespace runs collapse; lowercased.
        assert normalize_for_hash("  Ｈｅｌｌｏ\n\t  ﬁle　World ") == "hello file world"

    def test_chinese_kept(self):
        assert normalize_for_hash(" 年假 \n 二十天 ") == "年假 二十天"


class TestContentHash:
    def test_is_truncated_sha256_of_normalized_text(self):
        expected = hashlib.sha256(b"annual leave is 20 days.").hexdigest()[:16]
        assert content_hash("Annual  leave is 20 days.\n") == expected

    def test_equal_for_normalized_duplicates_only(self):
        assert content_hash("Hello World") == content_hash(" hello\nworld ")
        assert content_hash("Hello World") != content_hash("Hello World!")


class TestChunkIdentifier:
    def test_ids_from_source_and_content(self):
        docs = [
            Document(content="Twenty days.", meta={"source_id": "leave.md", "chunk_index": 0}),
            Document(content="Twenty days.", meta={"source_id": "other.md"}),
            Document(content="Thirty days.", meta={"source_id": "leave.md"}),
        ]
        out = ChunkIdentifier().run(docs)["documents"]
        digest = content_hash("Twenty days.")
        assert out[0].id == f"leave.md::{digest}"
        assert out[0].meta == {"source_id": "leave.md", "chunk_index": 0, "content_hash": digest}
        assert out[1].id == f"other.md::{digest}"
        assert out[2].id != out[0].id and out[2].id.startswith("leave.md::")

    def test_tenant_is_hashed_into_the_id(self):
        docs = [
            Document(content="Twenty days.", meta={"source_id": "leave.md", "tenant": "acme"}),
            Document(content="Twenty days.", meta={"source_id": "leave.md", "tenant": "globex"}),
            Document(content="Twenty days.", meta={"source_id": "leave.md"}),
        ]
        out = ChunkIdentifier().run(docs)["documents"]
        expected = hashlib.sha256(b"acme\x00twenty days.").hexdigest()[:16]
        assert out[0].id == f"leave.md::{expected}" == f"leave.md::{chunk_digest('Twenty days.', 'acme')}"
        assert len({d.id for d in out}) == 3 and all(d.id.startswith("leave.md::") for d in out)
        assert {d.meta["content_hash"] for d in out} == {content_hash("Twenty days.")}  # plain text hash

    @pytest.mark.parametrize("tenant", ["", 7, ["a"]])
    def test_bad_tenant(self, tenant):
        with pytest.raises(InputError, match="tenant"):
            ChunkIdentifier().run([Document(content="x", meta={"source_id": "a", "tenant": tenant})])

    def test_stable_across_runs(self):
        doc = Document(content="Annual leave is 20 days.", meta={"source_id": "a"})
        first = ChunkIdentifier().run([doc])["documents"][0].id
        second = ChunkIdentifier().run([copy.deepcopy(doc)])["documents"][0].id
        assert first == second == "a::" + hashlib.sha256(b"annual leave is 20 days.").hexdigest()[:16]

    def test_input_not_mutated(self):
        doc = Document(content="x", meta={"source_id": "a"})
        before = copy.deepcopy(doc)
        ChunkIdentifier().run([doc])
        assert doc == before

    def test_missing_source_id_or_content(self):
        with pytest.raises(InputError, match="source_id"):
            ChunkIdentifier().run([Document(content="x")])
        with pytest.raises(InputError, match="no text content"):
            ChunkIdentifier().run([Document(content=None, meta={"source_id": "a"})])

    def test_to_dict_and_round_trip(self):
        data = ChunkIdentifier().to_dict()
        assert data == {"type": "haygraph.retrieval.chunk_ids.ChunkIdentifier", "init_parameters": {}}
        assert isinstance(ChunkIdentifier.from_dict(data), ChunkIdentifier)


class TestContentDeduplicator:
    def test_keeps_first_and_drops_normalized_duplicates_within_a_source(self, caplog):
        caplog.set_level("INFO")
        docs = [
            Document(content="Annual leave is 20 days.", meta={"source_id": "a"}),
            Document(content="Sick leave needs a note.", meta={"source_id": "a"}),
            Document(content="  ANNUAL leave\nis 20 days. ", meta={"source_id": "a"}),
            Document(content="Annual leave is 21 days.", meta={"source_id": "b"}),
        ]
        out = ContentDeduplicator().run(docs)["documents"]
        assert [d.content for d in out] == [
            "Annual leave is 20 days.",
            "Sick leave needs a note.",
            "Annual leave is 21 days.",
        ]
        assert out[0].meta["source_id"] == "a"
        assert out[0].meta["content_hash"] == content_hash("Annual leave is 20 days.")
        assert out[0].id == docs[0].id
        assert "Dropped 1 duplicate" in caplog.text

    def test_identical_files_both_stay_sources(self):
        # regression: of pets.md and pets-copy.md (same text) one silently disappeared
        docs = [
            Document(content="Pets are welcome on Fridays.", meta={"source_id": "pets.md"}),
            Document(content="Pets are welcome on Fridays.", meta={"source_id": "pets-copy.md"}),
        ]
        out = ContentDeduplicator().run(ChunkIdentifier().run(docs)["documents"])["documents"]
        assert [d.meta["source_id"] for d in out] == ["pets.md", "pets-copy.md"]
        assert len({d.id for d in out}) == 2

    def test_never_crosses_tenants(self):
        # regression: identical text in tenants A and B indexed together kept only A's copy
        docs = [
            Document(content="Same policy text.", meta={"source_id": "policy.md", "tenant": "A"}),
            Document(content="Same policy text.", meta={"source_id": "policy.md", "tenant": "B"}),
            Document(content="same  POLICY text.", meta={"source_id": "policy.md", "tenant": "B"}),
        ]
        out = ContentDeduplicator().run(ChunkIdentifier().run(docs)["documents"])["documents"]
        assert [d.meta["tenant"] for d in out] == ["A", "B"]
        assert out[0].id != out[1].id  # a store keeps both: the ids differ

    def test_uses_existing_hash(self):
        docs = [
            Document(content="one", meta={"content_hash": "same"}),
            Document(content="two", meta={"content_hash": "same"}),
        ]
        assert [d.content for d in ContentDeduplicator().run(docs)["documents"]] == ["one"]

    def test_after_identifier_pipeline_order(self):
        docs = [Document(content="Same text.", meta={"source_id": "a"})] * 2
        ided = ChunkIdentifier().run(docs)["documents"]
        out = ContentDeduplicator().run(ided)["documents"]
        assert len(out) == 1 and out[0].id == f"a::{content_hash('Same text.')}"

    def test_documents_without_content_pass_through(self):
        docs = [Document(content=None, meta={"k": 1}), Document(content=None, meta={"k": 2})]
        assert ContentDeduplicator().run(docs)["documents"] == docs

    def test_input_not_mutated(self):
        doc = Document(content="x", meta={"source_id": "a"})
        before = copy.deepcopy(doc)
        ContentDeduplicator().run([doc])
        assert doc == before and "content_hash" not in doc.meta

    def test_empty_input(self):
        assert ContentDeduplicator().run([]) == {"documents": []}

    def test_to_dict_and_round_trip(self):
        data = ContentDeduplicator().to_dict()
        assert data == {"type": "haygraph.retrieval.chunk_ids.ContentDeduplicator", "init_parameters": {}}
        assert isinstance(ContentDeduplicator.from_dict(data), ContentDeduplicator)
