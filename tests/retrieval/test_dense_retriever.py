import numpy as np
import pytest

from haygraph.retrieval.dense_retriever import FastEmbeddingRetriever
from haygraph.retrieval.errors import QueryError
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import small_store

GLOBEX = {"field": "meta.tenant", "operator": "==", "value": "globex"}


class TestFastEmbeddingRetriever:
    def test_cosine_ranking(self):
        # cosines with [2, 0, 0] (not normalized on purpose): d1 1.0, d2 0.8, d3 0.0, d4 -1.0
        docs = FastEmbeddingRetriever(small_store()).run(query_embedding=[2.0, 0.0, 0.0])["documents"]
        assert [d.id for d in docs] == ["d1", "d2", "d3", "d4"]
        assert [d.score for d in docs] == pytest.approx([1.0, 0.8, 0.0, -1.0], abs=1e-6)
        assert docs[1].meta["dense_score"] == pytest.approx(0.8)

    def test_scale_score(self):
        docs = FastEmbeddingRetriever(small_store(), scale_score=True).run(query_embedding=[1.0, 0, 0])[
            "documents"
        ]
        # (cos + 1) / 2; the raw cosine stays in meta
        assert [d.score for d in docs] == pytest.approx([1.0, 0.9, 0.5, 0.0], abs=1e-6)
        assert docs[3].meta["dense_score"] == pytest.approx(-1.0)

    def test_top_k(self):
        retriever = FastEmbeddingRetriever(small_store(), top_k=2)
        assert [d.id for d in retriever.run(query_embedding=[0, 1.0, 0])["documents"]] == ["d3", "d2"]
        assert len(retriever.run(query_embedding=[0, 1.0, 0], top_k=3)["documents"]) == 3

    def test_filters(self):
        store = small_store()
        docs = FastEmbeddingRetriever(store).run(query_embedding=[1.0, 0, 0], filters=GLOBEX)["documents"]
        assert [d.id for d in docs] == ["d3", "d4"]
        docs = FastEmbeddingRetriever(store, filters=GLOBEX).run(query_embedding=[1.0, 0, 0])["documents"]
        assert {d.meta["tenant"] for d in docs} == {"globex"}

    def test_empty_store(self):
        assert FastEmbeddingRetriever(EmbeddedDocumentStore()).run(query_embedding=[1.0, 0, 0]) == {
            "documents": []
        }

    @pytest.mark.parametrize("embedding", [[0.0, 0.0, 0.0], [float("nan"), 0.0, 1.0]])
    def test_degenerate_query(self, embedding):
        assert FastEmbeddingRetriever(small_store()).run(query_embedding=embedding) == {"documents": []}

    def test_wrong_dimension(self):
        with pytest.raises(QueryError, match="3-d"):
            FastEmbeddingRetriever(small_store()).run(query_embedding=[1.0, 0.0])

    def test_matches_brute_force(self):
        rng = np.random.default_rng(1)
        from haystack import Document

        vectors = rng.normal(size=(50, 8))
        store = EmbeddedDocumentStore()
        store.write_documents(
            [Document(id=f"x{i}", content=str(i), embedding=v.tolist()) for i, v in enumerate(vectors)]
        )
        query = rng.normal(size=8)
        cos = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
        expected = [f"x{i}" for i in np.argsort(-cos)[:7]]
        assert [
            d.id
            for d in FastEmbeddingRetriever(store, top_k=7).run(query_embedding=query.tolist())["documents"]
        ] == expected

    def test_to_dict_and_from_dict(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "haygraph.retrieval"
        )  # as loads_pipeline does
        store = small_store()
        store.save(tmp_path)
        data = FastEmbeddingRetriever(store, top_k=2, filters=GLOBEX, scale_score=True).to_dict()
        assert data == {
            "type": "haygraph.retrieval.dense_retriever.FastEmbeddingRetriever",
            "init_parameters": {
                "document_store": {
                    "type": "haygraph.retrieval.store.EmbeddedDocumentStore",
                    "init_parameters": {"path": str(tmp_path)},
                },
                "top_k": 2,
                "filters": GLOBEX,
                "scale_score": True,
            },
        }
        loaded = FastEmbeddingRetriever.from_dict(data)
        assert [d.id for d in loaded.run(query_embedding=[1.0, 0, 0])["documents"]] == ["d3", "d4"]

    def test_bad_top_k(self):
        with pytest.raises(ValueError, match="top_k"):
            FastEmbeddingRetriever(small_store(), top_k=-1)
