"""Tests for retrieval.store_config and `KnowledgeBase.open`: saved store settings vs a caller's config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import ConfigError, CorruptStoreError, IndexSettingsMismatchError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.store_config import is_indexing_key, leaves, merge_store_config
from tests.retrieval.store_helpers import small_store

BM25_STORE = RetrievalConfig.from_dict(
    {"splitter": {"max_chars": 600}, "query": {"mode": "bm25", "cut": {"max_keep": 3}}}
).model_dump(mode="json")


def _saved_store(tmp_path: Path, config: dict) -> Path:
    store = small_store()
    store.meta["config"] = config
    store.save(tmp_path / "kb")
    return tmp_path / "kb"


class TestMergeStoreConfig:
    def test_no_config_gives_the_stores_settings(self):
        merged = merge_store_config(BM25_STORE, None, where="kb")
        assert (merged.query.mode, merged.query.cut.max_keep, merged.splitter.max_chars) == ("bm25", 3, 600)

    def test_old_store_without_query_section_takes_the_defaults(self):
        saved = {k: v for k, v in BM25_STORE.items() if k != "query"}
        assert merge_store_config(saved, None, where="kb").query == RetrievalConfig().query

    def test_only_the_keys_a_config_sets_override(self):
        given = RetrievalConfig.from_dict({"query": {"cut": {"drop_ratio": 0.3}}})
        merged = merge_store_config(BM25_STORE, given, where="kb")
        assert merged.query.mode == "bm25"  # from the store: the config did not name it
        assert (merged.query.cut.drop_ratio, merged.query.cut.max_keep) == (0.3, 3)

    def test_a_default_config_object_changes_nothing(self):
        assert merge_store_config(BM25_STORE, RetrievalConfig(), where="kb").query.mode == "bm25"

    def test_backends_and_runtime_knobs_may_change(self):
        given = RetrievalConfig.from_dict(
            {"bm25": {"backend": "haystack"}, "dense": {"backend": "haystack"}, "embedder": {"batch_size": 4}}
        )
        merged = merge_store_config(BM25_STORE, given, where="kb")
        assert (merged.bm25.backend, merged.dense.backend, merged.embedder.batch_size) == (
            "haystack",
            "haystack",
            4,
        )

    def test_repeating_the_stores_indexing_settings_is_fine(self):
        given = RetrievalConfig.from_dict({"splitter": {"max_chars": 600}, "query": {"mode": "dense"}})
        assert merge_store_config(BM25_STORE, given, where="kb").query.mode == "dense"

    @pytest.mark.parametrize(
        ("override", "key"),
        [
            ({"splitter": {"max_chars": 700}}, "splitter.max_chars"),
            ({"embedder": {"model": "/models/other"}}, "embedder.model"),
            ({"bm25": {"k1": 1.5}}, "bm25.k1"),
        ],
    )
    def test_changing_an_indexing_setting_names_the_key_and_both_values(self, override, key):
        given = RetrievalConfig.from_dict(override)
        pattern = rf"config key '{key}' is .* indexed with"
        with pytest.raises(IndexSettingsMismatchError, match=pattern) as info:
            merge_store_config(BM25_STORE, given, where="kb/v-1/manifest.json")
        assert "kb/v-1/manifest.json" in str(info.value) and isinstance(info.value, ConfigError)

    def test_unknown_persisted_key_names_the_store_file(self):
        saved = {**BM25_STORE, "query": {**BM25_STORE["query"], "moed": "bm25"}}
        with pytest.raises(ConfigError, match=r"^kb/v-1/manifest.json: .*unknown config key 'query.moed'"):
            merge_store_config(saved, None, where="kb/v-1/manifest.json")


class TestHelpers:
    def test_leaves_are_dotted_and_skip_empty_sections(self):
        data = {"query": {"mode": "bm25", "cut": {"max_keep": 2}}, "splitter": {}}
        assert list(leaves(data)) == [("query.mode", "bm25"), ("query.cut.max_keep", 2)]

    @pytest.mark.parametrize(
        ("key", "expected"),
        [
            ("splitter.min_chars", True),
            ("embedder.model", True),
            ("embedder.batch_size", False),
            ("bm25.language", True),
            ("bm25.backend", False),
            ("query.mode", False),
        ],
    )
    def test_indexing_keys(self, key, expected):
        assert is_indexing_key(key) is expected


class TestOpen:
    def test_open_uses_the_persisted_query_settings(self, tmp_path):
        kb = KnowledgeBase.open(_saved_store(tmp_path, BM25_STORE))
        assert kb.config.query.mode == "bm25" and kb.runner().info.components[0] == "bm25"
        assert "dense" not in kb.runner().info.components

    def test_open_with_a_config_overrides_the_query_settings(self, tmp_path):
        given = RetrievalConfig.from_dict({"query": {"cut": {"enabled": False}}})
        kb = KnowledgeBase.open(_saved_store(tmp_path, BM25_STORE), given)
        assert (kb.config.query.mode, kb.config.query.cut.enabled) == ("bm25", False)

    def test_unknown_key_in_the_store_file_is_named(self, tmp_path):
        store = _saved_store(tmp_path, {**BM25_STORE, "retriever": {"mode": "x"}})
        manifest = store / (store / "CURRENT").read_text().strip() / "manifest.json"
        assert json.loads(manifest.read_text())["meta"]["config"]["retriever"] == {"mode": "x"}
        # Loading validates every store file: the error names the manifest and the fix (re-index).
        with pytest.raises(CorruptStoreError, match="unknown config key 'retriever'") as info:
            KnowledgeBase.open(store)
        assert str(manifest) in str(info.value) and "re-index" in str(info.value)
