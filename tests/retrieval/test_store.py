import json
import os

import numpy as np
import pytest
from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval import store_files
from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.errors import (
    CorruptStoreError,
    StoreConflictError,
    StoreError,
    StoreLockedError,
    StoreNotFoundError,
)
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.store_lock import StoreLock
from haygraph.retrieval.tokenize import BM25Tokenizer
from tests.retrieval.store_helpers import small_docs, small_store

ACME = {"field": "meta.tenant", "operator": "==", "value": "acme"}


def _template() -> BM25Index:
    return BM25Index(BM25Tokenizer())


def _version_dir(root) -> os.PathLike:
    return root / (root / "CURRENT").read_text().strip()


class TestEmbeddedDocumentStore:
    def test_write_and_count(self):
        store = small_store()
        assert store.count_documents() == 4
        assert [d.id for d in store.documents] == ["d1", "d2", "d3", "d4"]
        assert all(d.embedding is None for d in store.documents)  # embeddings live in the matrix

    def test_matrix_is_normalized_float32(self):
        matrix = small_store().matrix()
        assert matrix.dtype == np.float32 and matrix.shape == (4, 3)
        np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-6)
        np.testing.assert_allclose(matrix[1], [0.8, 0.6, 0.0], rtol=1e-6)

    def test_duplicate_skip_and_none(self):
        store = small_store()
        assert (
            store.write_documents(
                [Document(id="d1", content="new", embedding=[0, 0, 1.0])], DuplicatePolicy.SKIP
            )
            == 0
        )
        assert store.write_documents([Document(id="d1", content="new", embedding=[0, 0, 1.0])]) == 0
        assert store.get("d1").content == "leave policy"

    def test_duplicate_overwrite(self):
        store = small_store()
        store.matrix()  # cached matrix must be invalidated by the overwrite
        assert (
            store.write_documents(
                [Document(id="d1", content="new", embedding=[0, 0, 2.0])], DuplicatePolicy.OVERWRITE
            )
            == 1
        )
        assert store.count_documents() == 4 and store.get("d1").content == "new"
        np.testing.assert_allclose(store.matrix()[0], [0, 0, 1.0])

    def test_duplicate_fail(self):
        with pytest.raises(StoreError, match="d1"):
            small_store().write_documents([Document(id="d1", content="x")], DuplicatePolicy.FAIL)

    def test_write_rejects_non_documents(self):
        with pytest.raises(StoreError, match="dict"):
            EmbeddedDocumentStore().write_documents([{"content": "x"}])  # type: ignore[list-item]

    def test_delete(self):
        store = small_store()
        store.delete_documents(["d2", "unknown"])
        assert [d.id for d in store.documents] == ["d1", "d3", "d4"]
        assert store.position("d3") == 1 and store.get("d2") is None
        np.testing.assert_allclose(store.matrix()[1], [0, 1.0, 0])

    def test_filters(self):
        store = small_store()
        assert [d.id for d in store.filter_documents(ACME)] == ["d1", "d2"]
        source = {"field": "meta.source_id", "operator": "==", "value": "travel.md"}
        found = store.filter_documents(source)
        assert [d.id for d in found] == ["d3"] and found[0].embedding == pytest.approx([0.0, 1.0, 0.0])
        both = {
            "operator": "AND",
            "conditions": [
                ACME,
                {"field": "meta.source_id", "operator": "in", "value": ["expense.md", "office.md"]},
            ],
        }
        assert [d.id for d in store.filter_documents(both)] == ["d2"]
        assert len(store.filter_documents()) == 4

    def test_malformed_filter(self):
        with pytest.raises(StoreError, match="invalid filters"):
            small_store().filter_documents({"field": "meta.tenant", "operator": "~~", "value": "x"})

    def test_mixed_embedding_sizes_refused(self):
        store = small_store()
        store.write_documents([Document(id="d5", content="x", embedding=[1.0, 0.0])])
        with pytest.raises(StoreError, match="different sizes"):
            store.matrix()

    def test_persistence_round_trip(self, tmp_path):
        store = small_store()
        store.meta["config"] = {"bm25": {"k1": 1.5}}
        bm25 = store.bm25_index(_template())
        store.save(tmp_path / "kb")
        loaded = EmbeddedDocumentStore.load(tmp_path / "kb")
        assert [(d.id, d.content, d.meta) for d in loaded.documents] == [
            (d.id, d.content, d.meta) for d in store.documents
        ]
        np.testing.assert_array_equal(loaded.matrix(), store.matrix())
        assert loaded.meta == {"config": {"bm25": {"k1": 1.5}}}
        reloaded_bm25 = loaded.bm25_index(_template())
        assert reloaded_bm25 is not bm25 and reloaded_bm25._bm25 is not None
        np.testing.assert_allclose(reloaded_bm25.scores("leave"), bm25.scores("leave"))

    def test_saved_bm25_index_is_reused_not_rebuilt(self, tmp_path, monkeypatch):
        store = small_store()
        store.bm25_index(_template())
        store.save(tmp_path / "kb")
        loaded = EmbeddedDocumentStore.load(tmp_path / "kb")
        monkeypatch.setattr(BM25Index, "build", lambda *a, **k: pytest.fail("index was rebuilt"))
        assert loaded.bm25_index(_template()).num_docs == 4

    def test_damaged_bm25_index_is_refused_naming_the_file(self, tmp_path):
        store = small_store()
        store.bm25_index(_template())
        store.save(tmp_path / "kb")
        (_version_dir(tmp_path / "kb") / "bm25" / "haygraph_bm25.json").write_text("{not json")
        with pytest.raises(
            CorruptStoreError, match=r"haygraph_bm25\.json \(BM25 index\) is unreadable.*re-index"
        ):
            EmbeddedDocumentStore.load(tmp_path / "kb")

    def test_bm25_index_with_infinite_k1_is_refused(self, tmp_path):
        # regression: bm25.k1 = .inf was saved, and bm25 search then returned nothing
        store = small_store()
        store.bm25_index(BM25Index(BM25Tokenizer(), k1=float("inf")))
        store.save(tmp_path / "kb")
        with pytest.raises(CorruptStoreError, match="k1 and b must be finite"):
            EmbeddedDocumentStore.load(tmp_path / "kb")

    def test_save_replaces_previous_version(self, tmp_path):
        store = small_store()
        store.save(tmp_path)
        store.delete_documents(["d1"])
        store.save(tmp_path)
        assert EmbeddedDocumentStore.load(tmp_path).count_documents() == 3
        assert len(list(tmp_path.glob("v-*"))) == 1

    @pytest.mark.parametrize("error", [OSError(28, "No space left on device"), RuntimeError("killed")])
    def test_atomic_save_on_crash(self, tmp_path, monkeypatch, error):
        store = small_store()
        store.save(tmp_path)
        before = sorted(p.name for p in tmp_path.iterdir())
        store.write_documents([Document(id="d5", content="new doc", embedding=[0, 0, 1.0])])

        def crash(*args, **kwargs):
            raise error

        monkeypatch.setattr(store_files, "_write_matrix", crash)  # dies while writing embeddings.npy
        with pytest.raises(StoreError if isinstance(error, OSError) else RuntimeError):
            store.save(tmp_path)
        monkeypatch.undo()
        assert sorted(p.name for p in tmp_path.iterdir()) == before  # no half-written version left
        loaded = EmbeddedDocumentStore.load(tmp_path)
        assert [d.id for d in loaded.documents] == ["d1", "d2", "d3", "d4"]
        assert loaded.matrix().shape == (4, 3)

    def test_save_streams_rows_without_building_the_matrix(self, tmp_path):
        store = EmbeddedDocumentStore()
        vectors = np.random.default_rng(1).standard_normal((5000, 8)).astype(np.float32)
        store.write_documents(
            [Document(id=f"d{i}", content=f"doc {i}", embedding=v) for i, v in enumerate(vectors)]
        )
        store.save(tmp_path)
        assert store._matrix is None  # saving wrote the rows block by block, no contiguous copy
        expected = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        np.testing.assert_allclose(EmbeddedDocumentStore.load(tmp_path).matrix(), expected, rtol=1e-6)
        np.testing.assert_allclose(store.matrix(), expected, rtol=1e-6)

    def test_save_without_path(self):
        with pytest.raises(StoreError, match="no path"):
            small_store().save()

    def test_embeddings_without_embeddings_file_in_manifest(self, tmp_path):
        store = EmbeddedDocumentStore()
        store.write_documents([Document(id="a", content="no vector")])
        store.save(tmp_path)
        assert EmbeddedDocumentStore.load(tmp_path).matrix() is None  # a store without vectors is fine
        np.save(_version_dir(tmp_path) / "embeddings.npy", np.zeros((1, 3), dtype=np.float32))
        with pytest.raises(CorruptStoreError, match="records no embeddings"):
            EmbeddedDocumentStore.load(tmp_path)

    def test_missing_dir(self, tmp_path):
        with pytest.raises(StoreNotFoundError, match="does not exist"):
            EmbeddedDocumentStore.load(tmp_path / "nope")

    def test_dir_without_index(self, tmp_path):
        with pytest.raises(StoreNotFoundError, match="no haygraph index"):
            EmbeddedDocumentStore.load(tmp_path)

    @pytest.mark.parametrize(
        ("filename", "content"),
        [
            ("documents.jsonl", "this is not json\n"),
            ("documents.jsonl", "[1, 2]\n"),
            ("documents.jsonl", json.dumps({"id": "d1", "content": "x"}) + "\n"),  # count disagrees
            ("manifest.json", "{broken"),
            ("manifest.json", "[1]"),
            ("manifest.json", json.dumps({"format": 99, "count": 4})),
            ("embeddings.npy", "garbage bytes"),
            ("documents.jsonl", "\n".join([json.dumps({"id": "d1", "content": "x"})] * 4) + "\n"),  # same id
            (
                "manifest.json",
                json.dumps({"format": 1, "count": 4, "dim": 3, "meta": {"config": {"bm25": 1}}}),
            ),
        ],
    )
    def test_corrupt_files(self, tmp_path, filename, content):
        small_store().save(tmp_path)
        (_version_dir(tmp_path) / filename).write_text(content)
        with pytest.raises(CorruptStoreError, match=rf"{filename}.*Fix: re-index"):
            EmbeddedDocumentStore.load(tmp_path)

    @pytest.mark.parametrize("filename", ["documents.jsonl", "manifest.json", "embeddings.npy"])
    def test_missing_files(self, tmp_path, filename):
        # regression (embeddings.npy): a store without its embeddings loaded without a word
        small_store().save(tmp_path)
        (_version_dir(tmp_path) / filename).unlink()
        with pytest.raises(CorruptStoreError, match=rf"{filename} is missing"):
            EmbeddedDocumentStore.load(tmp_path)

    def test_truncated_embeddings(self, tmp_path):
        # regression: a truncated embeddings.npy surfaced as EOFError ("unexpected failure")
        small_store().save(tmp_path)
        npy = _version_dir(tmp_path) / "embeddings.npy"
        npy.write_bytes(npy.read_bytes()[:100])
        with pytest.raises(CorruptStoreError, match=r"embeddings\.npy is unreadable or truncated"):
            EmbeddedDocumentStore.load(tmp_path)

    @pytest.mark.parametrize(
        "content",
        [
            b"\x80\x04" + b"x" * 600,  # numpy: "This file contains pickled (object) data. If you trust ..."
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), }",  # cut
            b"\x93NUMPY\x01\x00\x40\x00{'descr': 'no-such-dtype-' " + b"x" * 600,  # numpy quotes the header
        ],
        ids=["not-npy", "truncated-header", "bad-header"],
    )
    def test_corrupt_embeddings_are_one_short_line(self, tmp_path, content):
        # regression: numpy's own text (over 500 characters) was pasted into the one-line error
        small_store().save(tmp_path)
        npy = _version_dir(tmp_path) / "embeddings.npy"
        npy.write_bytes(content)
        with pytest.raises(CorruptStoreError) as info:
            EmbeddedDocumentStore.load(tmp_path)
        cause = type(info.value.__cause__).__name__
        assert str(info.value) == (
            f"store {tmp_path} is corrupt: {npy} is unreadable or truncated ({cause}). Fix: re-index — "
            f"delete {tmp_path} and run `haygraph index PATH... --store {tmp_path}` again (or index into a "
            "new directory)"
        )
        assert info.value.__cause__ is not None  # numpy's detail: shown by `--debug`

    @pytest.mark.parametrize(
        "matrix",
        [
            np.zeros((4, 3), dtype=np.float64),
            np.zeros((4, 2), dtype=np.float32),
            np.full((4, 3), np.nan, np.float32),
        ],
        ids=["float64", "wrong dim", "nan"],
    )
    def test_embeddings_of_the_wrong_kind(self, tmp_path, matrix):
        small_store().save(tmp_path)
        np.save(_version_dir(tmp_path) / "embeddings.npy", matrix)
        with pytest.raises(CorruptStoreError, match=r"embeddings\.npy"):
            EmbeddedDocumentStore.load(tmp_path)

    def test_embedding_matrix_with_wrong_row_count(self, tmp_path):
        small_store().save(tmp_path)
        np.save(_version_dir(tmp_path) / "embeddings.npy", np.zeros((2, 3), dtype=np.float32))
        with pytest.raises(CorruptStoreError, match="counts disagree"):
            EmbeddedDocumentStore.load(tmp_path)

    def test_pointer_to_missing_version(self, tmp_path):
        small_store().save(tmp_path)
        (tmp_path / "CURRENT").write_text("v-gone")
        with pytest.raises(CorruptStoreError, match="names version v-gone"):
            EmbeddedDocumentStore.load(tmp_path)
        (tmp_path / "CURRENT").write_text("../../etc")
        with pytest.raises(CorruptStoreError, match="does not name a version"):
            EmbeddedDocumentStore.load(tmp_path)

    def test_path_that_is_a_file(self, tmp_path):
        (tmp_path / "kb").write_text("x")
        with pytest.raises(StoreError, match="is a file, not a store directory"):
            EmbeddedDocumentStore.load(tmp_path / "kb")

    def test_to_dict_and_from_dict_load_saved_store(self, tmp_path):
        store = small_store()
        store.save(tmp_path)
        data = store.to_dict()
        assert data == {
            "type": "haygraph.retrieval.store.EmbeddedDocumentStore",
            "init_parameters": {"path": str(tmp_path)},
        }
        loaded = EmbeddedDocumentStore.from_dict(data)
        assert loaded.count_documents() == 4 and EmbeddedDocumentStore.from_dict(data) is loaded

    def test_from_dict_without_saved_store_is_empty(self, tmp_path):
        data = EmbeddedDocumentStore(path=str(tmp_path / "new")).to_dict()
        assert EmbeddedDocumentStore.from_dict(data).count_documents() == 0

    def test_documents_not_mutated_on_write(self):
        docs = small_docs()
        EmbeddedDocumentStore().write_documents(docs)
        assert docs[0].embedding == [1.0, 0.0, 0.0]


class TestWriters:
    """One writer at a time, no lost update, no lost version, no leftovers."""

    def _doc(self, doc_id: str) -> Document:
        return Document(id=doc_id, content=f"text of {doc_id}", embedding=[0.0, 0.0, 1.0])

    def test_missing_current_uses_the_newest_complete_version(self, tmp_path, caplog):
        store = small_store()
        store.save(tmp_path)
        (tmp_path / "CURRENT").unlink()
        (tmp_path / "v-incomplete").mkdir()  # no manifest: not a candidate
        assert EmbeddedDocumentStore.load(tmp_path).count_documents() == 4
        assert "no CURRENT file" in caplog.text

    def test_writer_without_current_keeps_previous_documents(self, tmp_path):
        # regression: with CURRENT missing, a new index replaced the 126-chunk version with 1 chunk
        small_store().save(tmp_path)
        (tmp_path / "CURRENT").unlink()
        fresh = EmbeddedDocumentStore(path=str(tmp_path))
        with fresh.writing():
            fresh.write_documents([self._doc("d5")])
            fresh.save()
        assert [d.id for d in EmbeddedDocumentStore.load(tmp_path).documents] == [
            "d1",
            "d2",
            "d3",
            "d4",
            "d5",
        ]

    def test_second_writer_loads_the_first_ones_update(self, tmp_path):
        # regression: two concurrent writers both succeeded and one update was lost
        small_store().save(tmp_path)
        first, second = EmbeddedDocumentStore.load(tmp_path), EmbeddedDocumentStore.load(tmp_path)
        with first.writing():
            first.write_documents([self._doc("d5")])
            first.save()
        with second.writing():  # catches up with d5 before changing anything
            second.write_documents([self._doc("d6")])
            second.save()
        assert {d.id for d in EmbeddedDocumentStore.load(tmp_path).documents} == {
            "d1",
            "d2",
            "d3",
            "d4",
            "d5",
            "d6",
        }

    def test_unsaved_changes_on_an_old_version_are_refused(self, tmp_path):
        small_store().save(tmp_path)
        first, second = EmbeddedDocumentStore.load(tmp_path), EmbeddedDocumentStore.load(tmp_path)
        second.write_documents([self._doc("d6")])  # outside the lock
        first.write_documents([self._doc("d5")])
        first.save()
        with pytest.raises(StoreConflictError, match="saved by another writer"):
            second.save()
        assert {d.id for d in EmbeddedDocumentStore.load(tmp_path).documents} == {
            "d1",
            "d2",
            "d3",
            "d4",
            "d5",
        }

    def test_clear_then_save_replaces(self, tmp_path):
        small_store().save(tmp_path)
        store = EmbeddedDocumentStore(path=str(tmp_path))
        store.clear()
        store.write_documents([self._doc("d9")])
        store.save()
        assert [d.id for d in EmbeddedDocumentStore.load(tmp_path).documents] == ["d9"]

    def test_leftovers_of_a_killed_save_are_removed_by_the_next_writer(self, tmp_path):
        # regression: .tmp-v-* directories of a kill -9 during save were never cleaned up
        small_store().save(tmp_path)
        (tmp_path / ".tmp-v-deadbeef0000").mkdir()
        (tmp_path / ".tmp-v-deadbeef0000" / "documents.jsonl").write_text("partial")
        (tmp_path / ".CURRENT.tmp").write_text("v-deadbeef0000")
        store = EmbeddedDocumentStore.load(tmp_path)  # readers leave them alone
        assert (tmp_path / ".tmp-v-deadbeef0000").exists()
        with store.writing():
            pass
        assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "CURRENT", store.version]

    def test_leftovers_are_kept_while_another_writer_holds_the_lock(self, tmp_path):
        small_store().save(tmp_path)
        with StoreLock(tmp_path):
            (tmp_path / ".tmp-v-inflight00000").mkdir()  # the holder's save in progress
            waiting = EmbeddedDocumentStore.load(tmp_path)
            waiting.lock_timeout = 0.2
            with pytest.raises(StoreLockedError, match=rf"pid {os.getpid()}"), waiting.writing():
                pass
            assert (tmp_path / ".tmp-v-inflight00000").exists()

    def test_reader_retries_when_a_writer_replaces_the_version(self, tmp_path, monkeypatch):
        small_store().save(tmp_path)
        real_read = store_files.read_version
        calls = []

        writer = EmbeddedDocumentStore.load(tmp_path)

        def read_while_a_writer_commits(root, name):
            if not calls:
                writer.write_documents([self._doc("d5")])
                writer.save()  # commits a new version and deletes `name`
            calls.append(name)
            return real_read(root, name)

        monkeypatch.setattr(store_files, "read_version", read_while_a_writer_commits)
        loaded = EmbeddedDocumentStore.load(tmp_path)
        assert loaded.count_documents() == 5 and len(calls) == 2 and calls[0] != calls[1]

    def test_failed_first_write_leaves_no_directory(self, tmp_path):
        store = EmbeddedDocumentStore(path=str(tmp_path / "new"))
        with pytest.raises(RuntimeError), store.writing():
            raise RuntimeError("conversion failed")
        assert not (tmp_path / "new").exists()
