import pytest
from haystack import Document

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.qdrant.scores import RetrieverScores
from haygraph.retrieval.qdrant.sparse import (
    BM25SparseDocumentEmbedder,
    BM25SparseTextEmbedder,
    average_length,
    bm25_term_weights,
    query_term_weights,
    term_index,
    to_sparse,
)
from haygraph.retrieval.tokenize import BM25Tokenizer


class TestTermIndex:
    def test_stable_and_31_bit(self):
        assert term_index("leav") == term_index("leav")
        assert term_index("leav") != term_index("travel")
        assert all(0 <= term_index(t) < 2**31 for t in ("a", "年假", "x" * 100))


class TestWeights:
    def test_hand_worked_bm25_tf(self):
        # dl = 3, avgdl = 3: norm = k1 * (1 - b + b * 1) = 1.2; "a": 2 / (2 + 1.2) = 0.625, "b": 1 / 2.2
        w = bm25_term_weights(["a", "a", "b"], k1=1.2, b=0.75, avgdl=3.0)
        assert w["a"] == pytest.approx(0.625)
        assert w["b"] == pytest.approx(1 / 2.2)

    def test_longer_documents_weigh_less(self):
        short = bm25_term_weights(["a", "b"], k1=1.2, b=0.75, avgdl=4.0)["a"]
        long = bm25_term_weights(["a", "b", "c", "d", "e", "f"], k1=1.2, b=0.75, avgdl=4.0)["a"]
        assert short > long

    def test_bad_avgdl(self):
        with pytest.raises(ValueError, match="avgdl must be > 0"):
            bm25_term_weights(["a"], k1=1.2, b=0.75, avgdl=0)

    def test_query_counts(self):
        assert query_term_weights(["a", "b", "a"]) == {"a": 2.0, "b": 1.0}

    def test_to_sparse_sorted(self):
        emb = to_sparse({"x": 1.0, "y": 2.0})
        assert emb.indices == sorted(emb.indices)
        assert dict(zip(emb.indices, emb.values, strict=True)) == {term_index("x"): 1.0, term_index("y"): 2.0}

    def test_idf_times_weights_equals_bm25s(self):
        # Qdrant's IDF modifier multiplies ln(1 + (N - df + 0.5) / (df + 0.5)) into the dot product of these
        # vectors; done by hand here, the result must be bm25s' lucene score for every document.
        texts = ["annual leave is twenty days", "leave requests go to HR", "parking is free", "年假有多少天"]
        tok = BM25Tokenizer()
        index = BM25Index(tok, 1.2, 0.75, "lucene").build(texts)
        avgdl = average_length(tok, texts)
        docs = BM25SparseDocumentEmbedder(avgdl=avgdl).run([Document(content=t) for t in texts])["documents"]
        query = "how much annual leave"
        q = BM25SparseTextEmbedder().run(query)["sparse_embedding"]
        expected = index.scores(query)
        import math

        df: dict[int, int] = {}
        for d in docs:
            for i in d.sparse_embedding.indices:
                df[i] = df.get(i, 0) + 1
        n = len(docs)
        for pos, d in enumerate(docs):
            weights = dict(zip(d.sparse_embedding.indices, d.sparse_embedding.values, strict=True))
            score = sum(
                qv * weights.get(qi, 0.0) * math.log(1 + (n - df.get(qi, 0) + 0.5) / (df.get(qi, 0) + 0.5))
                for qi, qv in zip(q.indices, q.values, strict=True)
            )
            assert score == pytest.approx(float(expected[pos]), rel=1e-5)


class TestComponents:
    def test_document_embedder_does_not_mutate(self):
        doc = Document(content="leave policy")
        out = BM25SparseDocumentEmbedder(avgdl=2.0).run([doc])["documents"]
        assert doc.sparse_embedding is None
        assert out[0].sparse_embedding is not None and len(out[0].sparse_embedding.indices) == 2

    def test_round_trip(self):
        comp = BM25SparseDocumentEmbedder(avgdl=3.5, language="en", k1=1.5)
        data = comp.to_dict()
        assert data["init_parameters"] == {
            "avgdl": 3.5,
            "language": "en",
            "stemming": True,
            "stopwords": True,
            "k1": 1.5,
            "b": 0.75,
        }
        assert BM25SparseDocumentEmbedder.from_dict(data).to_dict() == data
        text = BM25SparseTextEmbedder(language="zh")
        assert BM25SparseTextEmbedder.from_dict(text.to_dict()).language == "zh"

    def test_chinese_query_is_segmented(self):
        terms = BM25Tokenizer()("年假有多少天")
        assert any(len(t) > 1 for t in terms)  # jieba words, not characters
        emb = BM25SparseTextEmbedder().run("年假有多少天")["sparse_embedding"]
        assert set(emb.indices) == {term_index(t) for t in terms}


class TestRetrieverScores:
    def test_bm25_drops_zero_and_records(self):
        docs = [Document(id="a", content="x", score=2.0), Document(id="b", content="y", score=0.0)]
        out = RetrieverScores(kind="bm25").run(docs)["documents"]
        assert [(d.id, d.meta["bm25_score"]) for d in out] == [("a", 2.0)]

    def test_dense_scaled_keeps_raw_cosine(self):
        out = RetrieverScores(kind="dense", scale_score=True).run([Document(content="x", score=0.5)])
        doc = out["documents"][0]
        assert doc.score == pytest.approx(0.75) and doc.meta["dense_score"] == 0.5

    def test_bad_kind(self):
        with pytest.raises(ValueError, match="kind must be one of"):
            RetrieverScores(kind="sparse")  # type: ignore[arg-type]
