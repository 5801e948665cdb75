import os
from typing import ClassVar

import pytest
import yaml
from haystack import Document, Pipeline, component

from haygraph.retrieval.config import QueryConfig, RelevanceConfig, RetrievalConfig
from haygraph.retrieval.errors import ConfigError, ModelUnavailableError, QueryError
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import (
    build_indexing_pipeline,
    build_query_pipeline,
    check_cross_encoder,
    dumps_pipeline,
    loads_pipeline,
    query_inputs,
)
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import small_store
from tests.retrieval.test_embedding_cache import FakeSTEmbedder

BM25_ONLY = QueryConfig(mode="bm25", cut={"enabled": False})
MISSING = "/nonexistent/cross-encoder-model"


def _ids(result, name):
    return [(d.id, round(d.score, 6)) for d in result[name]["documents"]]


def _edges(pipe):
    return {(s, r, e["from_socket"].name, e["to_socket"].name) for s, r, e in pipe.graph.edges(data=True)}


class TestQueryPipeline:
    def test_components_by_mode(self):
        store = small_store()
        pipe, info = build_query_pipeline(RetrievalConfig(), store)
        assert set(info.components) == {"text_embedder", "dense", "bm25", "fusion", "cut", "relevance"}
        # the default cut runs on the calibrated relevance, so relevance comes first
        assert info.output == "cut" and info.mode == "hybrid"
        assert {
            ("fusion", "relevance", "documents", "documents"),
            ("relevance", "cut", "documents", "documents"),
            ("text_embedder", "relevance", "embedding", "query_embedding"),
        } <= _edges(pipe)
        assert pipe.get_component("cut").score_field == "relevance"
        assert pipe.get_component("fusion").dense_languages == ["en"]
        _, info = build_query_pipeline(RetrievalConfig(), store, BM25_ONLY)
        assert (
            info.components == ["bm25", "relevance"] and info.output == "relevance" and info.reranked is None
        )
        _, info = build_query_pipeline(RetrievalConfig(), store, QueryConfig(mode="dense"))
        assert info.components == ["text_embedder", "dense", "relevance", "cut"]

    def test_cut_on_the_ranking_score_runs_before_relevance(self):
        q = QueryConfig(cut={"scale": "score"})
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert ("cut", "relevance", "documents", "documents") in _edges(pipe) and info.output == "relevance"
        assert pipe.get_component("cut").score_field is None
        # without the relevance stage a cut on relevance still gets it
        _, info = build_query_pipeline(
            RetrievalConfig(), small_store(), QueryConfig(), include_relevance=False
        )
        assert info.components[-2:] == ["relevance", "cut"]

    def test_language_aware_fusion_can_be_turned_off(self):
        q = QueryConfig(fusion={"language_aware": False})
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert pipe.get_component("fusion").dense_languages is None
        cfg = RetrievalConfig(embedder={"languages": ["en", "zh"]})
        pipe, _ = build_query_pipeline(cfg, small_store())
        assert pipe.get_component("fusion").dense_languages == ["en", "zh"]

    def test_builder_options(self):
        store = small_store()
        _, info = build_query_pipeline(RetrievalConfig(), store, BM25_ONLY, include_relevance=False)
        assert info.components == ["bm25"] and info.output == "bm25"
        pipe, info = build_query_pipeline(RetrievalConfig(), store, embed_query=False)
        assert "text_embedder" not in info.components and info.output == "cut"
        pipe, _ = build_query_pipeline(RetrievalConfig(), store, stock=True)
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever, InMemoryEmbeddingRetriever

        assert isinstance(pipe.get_component("bm25"), InMemoryBM25Retriever)
        assert isinstance(pipe.get_component("dense"), InMemoryEmbeddingRetriever)

    def test_bm25_cosine_option_embeds_the_query_for_relevance_only(self):
        q = QueryConfig(mode="bm25", relevance={"bm25_uses_cosine": True})
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert info.components == ["text_embedder", "bm25", "relevance", "cut"]
        assert ("text_embedder", "relevance", "embedding", "query_embedding") in _edges(pipe)
        assert pipe.get_component("relevance").weights == RelevanceConfig().bm25_cosine.model_dump()

    @pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
    def test_relevance_weights_follow_the_mode(self, mode):
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), QueryConfig(mode=mode))
        assert pipe.get_component("relevance").weights == RelevanceConfig().for_mode(mode).model_dump()

    def test_yaml_round_trip_runs_the_same(self, tmp_path):
        store = small_store()
        store.save(tmp_path)
        pipe, info = build_query_pipeline(RetrievalConfig(), store, QueryConfig(mode="bm25"))
        text = dumps_pipeline(pipe)
        assert "haygraph.retrieval.bm25_retriever.FastBM25Retriever" in text and "ScoreCliffCutter" in text
        assert "haygraph.retrieval.relevance_scorer.RelevanceScorer" in text
        loaded = loads_pipeline(text)
        assert dumps_pipeline(loaded) == text
        data = query_inputs(pipe, "leave travel")
        expected = pipe.run(data)[info.output]["documents"]
        got = loaded.run(data)[info.output]["documents"]
        assert [(d.id, d.score, d.meta["relevance"]) for d in got] == [
            (d.id, d.score, d.meta["relevance"]) for d in expected
        ]
        assert expected and all(0 < d.meta["relevance"] < 1 for d in expected)

    def test_reranker_unavailable_fails_at_build_time_with_fix(self):
        q = QueryConfig(mode="bm25", reranker={"model": MISSING})
        with pytest.raises(ModelUnavailableError, match=r"Fix:.*on_unavailable='skip'"):
            build_query_pipeline(RetrievalConfig(), small_store(), q)

    def test_reranker_unavailable_recorded_skip(self):
        q = QueryConfig(mode="bm25", reranker={"model": MISSING, "on_unavailable": "skip"})
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), q)
        assert info.reranked is False and "reranker" not in info.components
        assert len(info.notes) == 1 and "reranker skipped" in info.notes[0] and MISSING in info.notes[0]
        docs = pipe.run(query_inputs(pipe, "leave"))[info.output]["documents"]
        assert [d.id for d in docs] == ["d3", "d1"]

    def test_stock_bm25_backend_selectable(self):
        cfg = RetrievalConfig(bm25={"backend": "haystack"})
        pipe, info = build_query_pipeline(cfg, small_store(), BM25_ONLY)
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        assert isinstance(pipe.get_component("bm25"), InMemoryBM25Retriever)
        docs = pipe.run(query_inputs(pipe, "leave"))[info.output]["documents"]
        assert docs[0].id == "d3" and {"d3", "d1"} <= {d.id for d in docs}
        assert all("relevance" in d.meta for d in docs)  # relevance does not depend on the BM25 backend

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
        pipe, info = build_query_pipeline(cfg, store, BM25_ONLY)
        assert [d.id for d in pipe.run(query_inputs(pipe, "zebra"))[info.output]["documents"]] == ["d5"]


@component
class _Stage:
    """A ranking stage that only records its inputs (for the input-mapping tests)."""

    def __init__(self, top_k: int | None = None) -> None:
        self.top_k = top_k

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document], query: str = "", top_k: int | None = None) -> dict:
        return {"documents": documents}


class TestQueryInputs:
    FILTER: ClassVar[dict[str, str]] = {"field": "meta.tenant", "operator": "==", "value": "acme"}

    def test_hybrid(self):
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store())
        assert query_inputs(pipe, "leave", filters=self.FILTER) == {
            "text_embedder": {"text": "leave"},
            "bm25": {"query": "leave", "filters": self.FILTER},
            "dense": {"filters": self.FILTER},
            "fusion": {"query": "leave"},
            "relevance": {"query": "leave"},
        }

    def test_top_k_sizes_the_last_ranking_stage(self):
        store = small_store()
        pipe, _ = build_query_pipeline(RetrievalConfig(), store)  # fusion 5, retrievers 50 candidates
        data = query_inputs(pipe, "leave", top_k=8)
        assert (
            data["fusion"] == {"query": "leave", "top_k": 8}
            and data["bm25"] == {"query": "leave"}
            and "dense" not in data
        )
        data = query_inputs(pipe, "leave", top_k=80)  # retrievers widened to feed the fusion
        assert (
            data["fusion"] == {"query": "leave", "top_k": 80}
            and data["bm25"]["top_k"] == data["dense"]["top_k"] == 80
        )
        pipe, _ = build_query_pipeline(RetrievalConfig(), store, BM25_ONLY)
        assert query_inputs(pipe, "leave", top_k=3)["bm25"] == {"query": "leave", "top_k": 3}

    def test_top_k_goes_to_the_reranker(self):
        pipe = Pipeline()
        pipe.add_component("bm25", _Stage(top_k=10))
        pipe.add_component("reranker", _Stage(top_k=3))
        pipe.connect("bm25.documents", "reranker.documents")
        assert query_inputs(pipe, "q", top_k=4) == {
            "bm25": {"query": "q"},
            "reranker": {"query": "q", "top_k": 4},
        }
        assert query_inputs(pipe, "q", top_k=20)["bm25"] == {"query": "q", "top_k": 20}

    @pytest.mark.parametrize("top_k", [0, -3, True, 2.5, "3"])
    def test_bad_top_k_names_it(self, top_k):
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), BM25_ONLY)
        with pytest.raises(QueryError, match=r"top_k must be an integer >= 1, but got"):
            query_inputs(pipe, "leave", top_k=top_k)

    def test_external_query_vector(self):
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), embed_query=False)
        data = query_inputs(pipe, "leave", query_embedding=[1.0, 0.0, 0.0])
        assert data["dense"] == {"query_embedding": [1.0, 0.0, 0.0]}
        assert data["relevance"] == {"query": "leave", "query_embedding": [1.0, 0.0, 0.0]}
        with pytest.raises(QueryError, match="pass query_embedding"):
            query_inputs(pipe, "leave")

    @pytest.mark.parametrize("mode", ["bm25", "hybrid"])
    def test_pipeline_run_and_run_direct_agree(self, mode):
        pipe, info = build_query_pipeline(
            RetrievalConfig(), small_store(), QueryConfig(mode=mode), embed_query=False
        )
        data = query_inputs(pipe, "leave travel", query_embedding=[1.0, 0.0, 0.0], top_k=4)
        fast = run_direct(pipe, data)[info.output]["documents"]
        stock = pipe.run(data)[info.output]["documents"]
        assert fast and [(d.id, d.score, d.meta) for d in fast] == [(d.id, d.score, d.meta) for d in stock]


class TestIndexingPipeline:
    def test_components(self):
        pipe = build_indexing_pipeline(RetrievalConfig(), EmbeddedDocumentStore())
        assert list(pipe.graph.nodes) == [
            "converter",
            "cleaner",
            "splitter",
            "locator",
            "chunk_ids",
            "dedup",
            "embedder",
            "writer",
        ]
        pipe = build_indexing_pipeline(
            RetrievalConfig(splitter={"enabled": False}), EmbeddedDocumentStore(), from_files=False
        )
        assert "splitter" not in pipe.graph.nodes and "converter" not in pipe.graph.nodes

    def test_without_embedder(self):
        store = EmbeddedDocumentStore()
        pipe = build_indexing_pipeline(
            RetrievalConfig(splitter={"enabled": False}), store, from_files=False, embed=False
        )
        assert list(pipe.graph.nodes) == ["cleaner", "locator", "chunk_ids", "dedup", "writer"]
        pipe.run(
            {
                "cleaner": {
                    "documents": [Document(content="Staff get 15 days of leave.", meta={"source_id": "a.md"})]
                }
            }
        )
        assert store.count_documents() == 1 and store.matrix() is None

    def test_yaml_round_trip_runs(self, tmp_path, monkeypatch):
        import haystack_integrations.components.embedders.sentence_transformers as st

        monkeypatch.setattr(st, "SentenceTransformersDocumentEmbedder", FakeSTEmbedder)
        cfg = RetrievalConfig(embedder={"cache_dir": str(tmp_path / "cache"), "backend": "torch"})
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

    def test_hybrid_yaml_is_portable_and_round_trips(self, kb, tmp_path, monkeypatch):
        import shutil

        from haygraph.retrieval.knowledge_base import KnowledgeBase
        from haygraph.retrieval.model_paths import bundled_model_path

        shutil.copytree(kb.store.path, tmp_path / "kb")
        monkeypatch.chdir(tmp_path)
        store = KnowledgeBase.open("kb").store  # a store given by a relative path
        pipe, info = build_query_pipeline(kb.config, store)
        text = dumps_pipeline(pipe)
        strings = _strings(yaml.safe_load(text))
        # the model by its symbolic name (the corpus holds Chinese text: auto chose multilingual-e5-small)
        assert kb.config.embedder.model == "multilingual-e5-small" and kb.config.embedder.model in strings
        assert not [v for v in strings if os.path.isabs(v)], "absolute path in the dumped pipeline"
        assert bundled_model_path() not in text
        loaded = loads_pipeline(text)
        query = "how many vacation days do I get"
        expected = pipe.run(query_inputs(pipe, query))[info.output]["documents"]
        got = loaded.run(query_inputs(loaded, query))[info.output]["documents"]
        assert expected and expected[0].id.startswith("leave::")
        assert [(d.id, round(d.score, 6), round(d.meta["relevance"], 6)) for d in got] == [
            (d.id, round(d.score, 6), round(d.meta["relevance"], 6)) for d in expected
        ]
        # a paraphrase ("vacation" for leave): e5's calibrated relevance puts it near 0.45
        assert 0.3 < expected[0].meta["relevance"] <= 1 and expected[0].meta["dense_score"] > 0.3

    def test_stock_backends_run_hybrid(self, kb):
        pipe, info = build_query_pipeline(kb.config, kb.store, stock=True)
        docs = pipe.run(query_inputs(pipe, "laptop encryption"))[info.output]["documents"]
        assert docs and docs[0].id.startswith("it::")


def _strings(node):
    """Every string value in a parsed YAML tree."""
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return [node] if isinstance(node, str) else []


class TestCheckCrossEncoder:
    def test_embedding_model_dir_refused(self, tmp_path):
        (tmp_path / "config.json").write_text('{"architectures": ["BertModel"]}', encoding="utf-8")
        with pytest.raises(ConfigError, match=r"not a cross-encoder.*BertModel"):
            check_cross_encoder(str(tmp_path))
        q = QueryConfig(mode="bm25", reranker={"model": str(tmp_path), "on_unavailable": "skip"})
        with pytest.raises(ConfigError, match="not a cross-encoder"):  # misconfigured, not unavailable
            build_query_pipeline(RetrievalConfig(), small_store(), q)

    def test_sequence_classifier_accepted(self, tmp_path):
        (tmp_path / "config.json").write_text(
            '{"architectures": ["BertForSequenceClassification"]}', encoding="utf-8"
        )
        check_cross_encoder(str(tmp_path))

    def test_unreadable_config_refused(self, tmp_path):
        (tmp_path / "config.json").write_text("{not json", encoding="utf-8")
        with pytest.raises(ConfigError, match="cannot read"):
            check_cross_encoder(str(tmp_path))
