import math

import numpy as np
import pytest

from haygraph.retrieval.bm25_retriever import FastBM25Retriever, top_k_positions
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import small_store

ACME = {"field": "meta.tenant", "operator": "==", "value": "acme"}


class TestTopKPositions:
    def test_descending_with_ties_by_position(self):
        scores = np.array([0.5, 2.0, 0.5, 2.0, 1.0, 0.5], dtype=np.float32)
        assert top_k_positions(scores, 4) == [1, 3, 4, 0]

    def test_ties_at_the_cut_are_broken_by_position(self):
        # argpartition alone picks an arbitrary subset of the tied values at the k-th place
        rng = np.random.default_rng(0)
        for _ in range(50):
            scores = rng.integers(0, 3, size=40).astype(np.float32)
            expected = sorted(range(40), key=lambda i: (-scores[i], i))[:5]
            assert top_k_positions(scores, 5) == expected

    def test_within_candidates(self):
        scores = np.array([3.0, 2.0, 1.0, 4.0], dtype=np.float32)
        assert top_k_positions(scores, 2, candidates=[0, 1, 2]) == [0, 1]
        assert top_k_positions(scores, 2, candidates=[]) == []

    def test_k_larger_than_list(self):
        assert top_k_positions(np.array([1.0, 2.0]), 10) == [1, 0]


class TestFastBM25Retriever:
    def test_ranking_and_hand_computed_score(self):
        # tokens: d1 [leav, polici] (2), d2 [expens, claim] (2), d3 [leav, leav, travel] (3),
        #         d4 [offic, guid] (2)
        # N=4, avgdl=9/4, df(leav)=2 -> idf = ln(1 + (4-2+0.5)/(2+0.5)) = ln 2
        # lucene tf part = tf / (tf + k1 * (1 - b + b * dl/avgdl)), k1=1.2, b=0.75
        # d3: 2 / (2 + 1.2 * (0.25 + 0.75 * 3/2.25)) = 2/3.5
        # d1: 1 / (1 + 1.2 * (0.25 + 0.75 * 2/2.25)) = 1/2.1
        docs = FastBM25Retriever(small_store()).run(query="leave")["documents"]
        assert [d.id for d in docs] == ["d3", "d1"]  # documents without the term are never returned
        assert docs[0].score == pytest.approx(math.log(2) * 2 / 3.5, rel=1e-5)
        assert docs[1].score == pytest.approx(math.log(2) / 2.1, rel=1e-5)
        assert docs[0].meta["bm25_score"] == docs[0].score

    def test_top_k(self):
        retriever = FastBM25Retriever(small_store(), top_k=1)
        assert [d.id for d in retriever.run(query="leave")["documents"]] == ["d3"]
        assert len(retriever.run(query="leave", top_k=5)["documents"]) == 2

    def test_filters_init_and_runtime(self):
        store = small_store()
        assert [d.id for d in FastBM25Retriever(store).run(query="leave", filters=ACME)["documents"]] == [
            "d1"
        ]
        assert [d.id for d in FastBM25Retriever(store, filters=ACME).run(query="leave")["documents"]] == [
            "d1"
        ]
        none = {"field": "meta.tenant", "operator": "==", "value": "nobody"}
        assert FastBM25Retriever(store).run(query="leave", filters=none)["documents"] == []

    def test_empty_store(self):
        assert FastBM25Retriever(EmbeddedDocumentStore()).run(query="leave") == {"documents": []}

    @pytest.mark.parametrize("query", ["zebra unicorn", "", "   ", "the and of"])
    def test_no_known_terms(self, query):
        assert FastBM25Retriever(small_store()).run(query=query) == {"documents": []}

    def test_sees_new_documents(self):
        from haystack import Document

        store = small_store()
        retriever = FastBM25Retriever(store)
        retriever.warm_up()
        store.write_documents([Document(id="d5", content="zebra crossing")])
        assert [d.id for d in retriever.run(query="zebra")["documents"]] == ["d5"]

    def test_to_dict_and_from_dict(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "haygraph.retrieval"
        )  # as loads_pipeline does
        store = small_store()
        store.save(tmp_path)
        data = FastBM25Retriever(store, top_k=3, filters=ACME, language="en", k1=1.5).to_dict()
        assert data["type"] == "haygraph.retrieval.bm25_retriever.FastBM25Retriever"
        assert data["init_parameters"] == {
            "document_store": {
                "type": "haygraph.retrieval.store.EmbeddedDocumentStore",
                "init_parameters": {"path": str(tmp_path)},
            },
            "top_k": 3,
            "filters": ACME,
            "language": "en",
            "stemming": True,
            "stopwords": True,
            "k1": 1.5,
            "b": 0.75,
            "method": "lucene",
        }
        loaded = FastBM25Retriever.from_dict(data)
        assert (loaded.top_k, loaded.k1, loaded.language) == (3, 1.5, "en")
        assert [d.id for d in loaded.run(query="leave")["documents"]] == ["d1"]

    def test_bad_top_k(self):
        with pytest.raises(ValueError, match="top_k"):
            FastBM25Retriever(small_store(), top_k=0)
