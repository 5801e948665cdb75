import pytest
from haystack import Document

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.pipelines import (
    build_indexing_pipeline,
    build_query_pipeline,
    dumps_pipeline,
    loads_pipeline,
)
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import small_store
from tests.retrieval.test_embedding_cache import FakeSTEmbedder

BM25_ONLY = QueryConfig(mode="bm25", cut={"enabled": False})
MISSING = "/nonexistent/cross-encoder-model"


def _ids(result, name):
    return [(d.id, round(d.score, 6)) for d in result[name]["documents"]]


class TestQueryPipeline:
    def test_components_by_mode(self):
        store = small_store()
        _, info = build_query_pipeline(RetrievalConfig(), store)
        assert (
            set(info.components) == {"text_embedder", "dense", "bm25", "fusion", "cut"}
            and info.output == "cut"
        )
        _, info = build_query_pipeline(RetrievalConfig(), store, BM25_ONLY)
        assert info.components == ["bm25"] and info.output == "bm25" and info.reranked is None

    def test_yaml_round_trip_runs_the_same(self, tmp_path):
        store = small_store()
        store.save(tmp_path)
        pipe, _ = build_query_pipeline(RetrievalConfig(), store, QueryConfig(mode="bm25"))
        text = dumps_pipeline(pipe)
        assert "haygraph.retrieval.bm25_retriever.FastBM25Retriever" in text and "ScoreCliffCutter" in text
        loaded = loads_pipeline(text)
        assert dumps_pipeline(loaded) == text
        data = {"bm25": {"query": "leave travel"}}
        expected = pipe.run(data)
        assert _ids(loaded.run(data), "cut") == _ids(expected, "cut") != []

    def test_reranker_unavailable_fails_at_build_time_with_fix(self):
        q = QueryConfig(mode="bm25", reranker={"model": MISSING})
        with pytest.raises(ModelUnavailableError, match=r"Fix:.*on_unavailable='skip'"):
            build_query_pipeline(RetrievalConfig(), small_store(), q)

    def test_reranker_unavailable_recorded_skip(self):
        q = QueryConfig(mode="bm25", reranker={"model": MISSING, "on_unavailable": "skip"})
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert info.reranked is False and "reranker" not in info.components
        assert len(info.notes) == 1 and "reranker skipped" in info.notes[0] and MISSING in info.notes[0]
        assert [d.id for d in pipe.run({"bm25": {"query": "leave"}})["cut"]["documents"]] == ["d3", "d1"]

    def test_stock_bm25_backend_selectable(self):
        cfg = RetrievalConfig(bm25={"backend": "haystack"})
        pipe, _ = build_query_pipeline(cfg, small_store(), BM25_ONLY)
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        assert isinstance(pipe.get_component("bm25"), InMemoryBM25Retriever)
        docs = pipe.run({"bm25": {"query": "leave"}})["bm25"]["documents"]
        assert docs[0].id == "d3" and {"d3", "d1"} <= {d.id for d in docs}

    def test_stock_dense_backend_selectable(self):
        store = small_store()
        cfg = RetrievalConfig(dense={"backend": "haystack"})
        pipe, _ = build_query_pipeline(cfg, store, QueryConfig(mode="dense", cut={"enabled": False}))
        from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever

        dense = pipe.get_component("dense")
        assert isinstance(dense, InMemoryEmbeddingRetriever)
        docs = dense.run(query_embedding=[1.0, 0.0, 0.0])["documents"]
        assert [d.id for d in docs] == ["d1", "d2", "d3", "d4"]
        assert [d.score for d in docs] == pytest.approx([1.0, 0.8, 0.0, -1.0], abs=1e-5)

    def test_stock_store_copy_follows_changes(self):
        store = small_store()
        cfg = RetrievalConfig(bm25={"backend": "haystack"})
        build_query_pipeline(cfg, store, BM25_ONLY)
        store.write_documents([Document(id="d5", content="zebra zebra", embedding=[0, 0, 1.0])])
        pipe, _ = build_query_pipeline(cfg, store, BM25_ONLY)
        assert [d.id for d in pipe.run({"bm25": {"query": "zebra"}})["bm25"]["documents"]] == ["d5"]


class TestIndexingPipeline:
    def test_components(self):
        pipe = build_indexing_pipeline(RetrievalConfig(), EmbeddedDocumentStore())
        assert list(pipe.graph.nodes) == [
            "converter",
            "cleaner",
            "splitter",
            "chunk_ids",
            "dedup",
            "embedder",
            "writer",
        ]
        pipe = build_indexing_pipeline(
            RetrievalConfig(splitter={"enabled": False}), EmbeddedDocumentStore(), from_files=False
        )
        assert "splitter" not in pipe.graph.nodes and "converter" not in pipe.graph.nodes

    def test_yaml_round_trip_runs(self, tmp_path, monkeypatch):
        import haystack_integrations.components.embedders.sentence_transformers as st

        monkeypatch.setattr(st, "SentenceTransformersDocumentEmbedder", FakeSTEmbedder)
        cfg = RetrievalConfig(embedder={"cache_dir": str(tmp_path / "cache")})
        pipe = build_indexing_pipeline(
            cfg, EmbeddedDocumentStore(path=str(tmp_path / "kb")), from_files=False
        )
        text = dumps_pipeline(pipe)
        loaded = loads_pipeline(text)
        original, reloaded = pipe.to_dict(), loaded.to_dict()
        assert reloaded["components"] == original["components"]
        key = lambda c: (c["sender"], c["receiver"])  # noqa: E731
        assert sorted(reloaded["connections"], key=key) == sorted(original["connections"], key=key)
        docs = [
            Document(content="# Leave\n\nStaff get 15 days of annual leave.", meta={"source_id": "a.md"}),
            Document(content="Expenses are approved by the department head.", meta={"source_id": "b.md"}),
        ]
        loaded.run({"cleaner": {"documents": docs}})
        written = loaded.get_component("writer").document_store
        assert written.count_documents() == 2
        assert {d.meta["source_id"] for d in written.documents} == {"a.md", "b.md"}
        assert all("::" in d.id for d in written.documents)
        assert written.matrix().shape == (2, 2)


@pytest.mark.integration
class TestQueryPipelineWithModel:
    @pytest.fixture(scope="class")
    def kb(self, tmp_path_factory):
        from haygraph.retrieval.knowledge_base import KnowledgeBase

        root = tmp_path_factory.mktemp("pipe")
        cfg = RetrievalConfig(embedder={"cache_dir": str(root / "cache")}, splitter={"enabled": False})
        kb = KnowledgeBase(cfg, root / "kb")
        kb.index_documents(
            [
                Document(
                    content="Employees get 15 days of annual leave per year.", meta={"source_id": "leave"}
                ),
                Document(
                    content="Expense claims above USD 500 need the department head.",
                    meta={"source_id": "exp"},
                ),
                Document(
                    content="Laptops must use full-disk encryption and a screen lock.",
                    meta={"source_id": "it"},
                ),
                Document(content="年假天数根据工龄确定，满一年可休五天。", meta={"source_id": "zh"}),
            ]
        )
        return kb

    def test_hybrid_yaml_round_trip(self, kb):
        pipe, info = build_query_pipeline(kb.config, kb.store)
        loaded = loads_pipeline(dumps_pipeline(pipe))
        query = "how many vacation days do I get"
        data = {"text_embedder": {"text": query}, "bm25": {"query": query}}
        expected = _ids(pipe.run(data), info.output)
        assert expected and expected[0][0].startswith("leave::")
        assert _ids(loaded.run(data), info.output) == expected

    def test_stock_backends_run_hybrid(self, kb):
        cfg = kb.config.with_overrides(bm25={"backend": "haystack"}, dense={"backend": "haystack"})
        pipe, info = build_query_pipeline(cfg, kb.store)
        query = "laptop encryption"
        result = pipe.run({"text_embedder": {"text": query}, "bm25": {"query": query}})
        docs = result[info.output]["documents"]
        assert docs and docs[0].id.startswith("it::")
