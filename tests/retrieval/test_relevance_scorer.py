import math

import pytest
from haystack import Document

from haygraph.retrieval.bm25_retriever import FastBM25Retriever
from haygraph.retrieval.errors import ConfigError, QueryError
from haygraph.retrieval.relevance import FEATURE_NAMES
from haygraph.retrieval.relevance_scorer import RelevanceScorer
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import small_docs, small_store

LEXICAL = {"en_coverage": 2.0, "en_bm25": 1.0, "en_bias": -1.0}
# Hand-worked for "leave travel" over the small store (tokens: d1 [leav, polici], d3 [leav, leav, travel]):
# BM25 (lucene, k1=1.2, b=0.75, N=4, avgdl=9/4): leav idf ln 2, travel idf ln(1 + 3.5/1.5) = ln(10/3)
#   d3 = ln2 * 2/3.5 + ln(10/3) * 1/2.5 = the score bound (d3 is best on both terms) -> normalized 1
#   d1 = ln2 / 2.1                                                                   -> normalized d1/d3
# coverage (idf mass of the query's terms present): d1 ln2 / (ln2 + ln(10/3)), d3 1
D3 = math.log(2) * 2 / 3.5 + math.log(10 / 3) / 2.5
D1 = math.log(2) / 2.1
COV_D1 = math.log(2) / (math.log(2) + math.log(10 / 3))


def _sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-z))


def _ranked(store, query="leave travel"):
    return FastBM25Retriever(store).run(query=query)["documents"]


class TestRelevanceScorer:
    def test_hand_computed_lexical_relevance(self):
        store = small_store()
        docs = _ranked(store)
        out = RelevanceScorer(store, LEXICAL).run(documents=docs, query="leave travel")["documents"]
        assert [d.id for d in out] == ["d3", "d1"]
        d3, d1 = out
        assert d3.meta["bm25_normalized"] == pytest.approx(1.0, rel=1e-5)
        assert d1.meta["bm25_normalized"] == pytest.approx(D1 / D3, rel=1e-5)
        assert d3.meta["term_coverage"] == pytest.approx(1.0)
        assert d1.meta["term_coverage"] == pytest.approx(COV_D1)
        assert d1.meta["relevance"] == pytest.approx(_sigmoid(2 * COV_D1 + D1 / D3 - 1), rel=1e-5)
        assert d3.meta["relevance"] == pytest.approx(_sigmoid(2 + 1 - 1), rel=1e-5)
        assert "dense_score" not in d1.meta  # no query embedding: no cosine

    def test_scores_order_and_input_untouched(self):
        store = small_store()
        docs = _ranked(store)
        before = [(d.id, d.score, dict(d.meta)) for d in docs]
        out = RelevanceScorer(store, LEXICAL).run(documents=docs, query="leave travel")["documents"]
        assert [(d.id, d.score) for d in out] == [(i, s) for i, s, _ in before]
        assert [(d.id, d.score, d.meta) for d in docs] == before

    def test_cosine_from_query_embedding(self):
        store = small_store()
        weights = {"en_cosine": 4.0, "en_bias": -2.0}
        docs = [store.get("d2"), Document(id="d1", content="leave policy", meta={"dense_score": 0.3})]
        out = RelevanceScorer(store, weights).run(
            documents=docs, query="leave", query_embedding=[2.0, 0.0, 0.0]
        )["documents"]
        assert out[0].meta["dense_score"] == pytest.approx(0.8)  # filled from the store's matrix
        assert out[1].meta["dense_score"] == 0.3  # a retriever's cosine is kept
        assert out[0].meta["relevance"] == pytest.approx(_sigmoid(4 * 0.8 - 2))

    def test_chinese_block_used_for_chinese_queries(self):
        store = EmbeddedDocumentStore()
        store.write_documents([Document(id="z", content="年假天数根据工龄确定")])
        weights = {"en_bias": -5.0, "zh_coverage": 3.0, "zh_bias": -1.0}
        [doc] = RelevanceScorer(store, weights).run(documents=[store.get("z")], query="年假")["documents"]
        assert doc.meta["term_coverage"] == 1.0
        assert doc.meta["relevance"] == pytest.approx(_sigmoid(3 - 1))

    def test_empty_input(self):
        assert RelevanceScorer(small_store(), LEXICAL).run(documents=[], query="x") == {"documents": []}

    def test_cosine_weights_need_the_query_embedding(self):
        store = small_store()
        with pytest.raises(QueryError, match="query_embedding is required"):
            RelevanceScorer(store, {"en_cosine": 1.0}).run(documents=_ranked(store), query="leave travel")

    def test_cosine_weights_need_stored_embeddings(self):
        store = EmbeddedDocumentStore()
        store.write_documents([Document(id="a", content="leave policy")])
        with pytest.raises(ConfigError, match="no embeddings"):
            RelevanceScorer(store, {"en_cosine": 1.0}).warm_up()
        RelevanceScorer(store, LEXICAL).warm_up()  # lexical weights need none

    def test_embedding_size_mismatch(self):
        store = small_store()
        with pytest.raises(QueryError, match="shape"):
            RelevanceScorer(store, {"en_cosine": 1.0}).run(
                documents=_ranked(store), query="leave", query_embedding=[1.0, 0.0]
            )

    def test_unknown_weight_names_listed(self):
        with pytest.raises(ValueError, match=r"en_cosin.*valid: en_cosine"):
            RelevanceScorer(small_store(), {"en_cosin": 1.0})

    def test_to_dict_and_round_trip(self, tmp_path, monkeypatch):
        monkeypatch.setenv(
            "HAYSTACK_DESERIALIZATION_ALLOWLIST", "haygraph.retrieval"
        )  # as loads_pipeline does
        store = EmbeddedDocumentStore(path=str(tmp_path / "kb"))
        store.write_documents(small_docs())
        store.save()
        scorer = RelevanceScorer(store, LEXICAL, language="en", k1=1.5)
        data = scorer.to_dict()
        assert data == {
            "type": "haygraph.retrieval.relevance_scorer.RelevanceScorer",
            "init_parameters": {
                "document_store": {
                    "type": "haygraph.retrieval.store.EmbeddedDocumentStore",
                    "init_parameters": {"path": str(tmp_path / "kb")},
                },
                "weights": {name: LEXICAL.get(name, 0.0) for name in FEATURE_NAMES},
                "language": "en",
                "stemming": True,
                "stopwords": True,
                "k1": 1.5,
                "b": 0.75,
                "method": "lucene",
            },
        }
        loaded = RelevanceScorer.from_dict(data)
        assert loaded.to_dict() == data
        docs = _ranked(loaded.document_store)
        assert [
            d.meta["relevance"] for d in loaded.run(documents=docs, query="leave travel")["documents"]
        ] == [
            d.meta["relevance"]
            for d in scorer.run(documents=_ranked(store), query="leave travel")["documents"]
        ]
