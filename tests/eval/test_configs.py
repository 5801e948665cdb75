"""Tests for eval.configs: named configurations -> query pipeline configs."""

from __future__ import annotations

import pytest

from haygraph.eval.configs import DEFAULT_CONFIGS, TunedParams, build_configs, parse_config_names
from haygraph.eval.errors import EvalError
from haygraph.eval.index_prep import whole_document_config


class TestParseConfigNames:
    def test_default_is_every_base_and_its_cut(self):
        names = parse_config_names(None)
        assert names == list(DEFAULT_CONFIGS)
        assert {"bm25", "dense", "hybrid", "hybrid-minmax", "hybrid+rerank", "hybrid-minmax+cut"} <= set(
            names
        )
        assert "hybrid-tuned" in parse_config_names("", tuned=True)

    def test_comma_list_is_stripped_and_deduped(self):
        assert parse_config_names(" bm25, dense ,bm25") == ["bm25", "dense"]

    def test_unknown_name_lists_valid_ones(self):
        with pytest.raises(EvalError, match=r"'bm99'.*valid: default, default\+cut, bm25"):
            parse_config_names("bm25,bm99")


class TestBuildConfigs:
    def setup_method(self):
        self.base = whole_document_config()

    def test_modes_fusion_and_depth(self):
        configs = {
            c.name: c
            for c in build_configs(["bm25", "dense", "hybrid", "hybrid-minmax"], self.base, depth=100)
        }
        assert configs["bm25"].query.mode == "bm25" and not configs["bm25"].needs_embeddings
        assert configs["dense"].query.mode == "dense" and configs["dense"].needs_embeddings
        assert configs["hybrid"].query.fusion.method == "rrf"
        assert configs["hybrid-minmax"].query.fusion.method == "minmax"
        for cfg in configs.values():
            assert (
                cfg.query.top_k == 100 and cfg.query.cut.enabled is False and cfg.query.reranker.model is None
            )
        assert configs["hybrid"].query.fusion.candidates >= 100

    def test_cut_variant_enables_the_cut(self):
        cut = build_configs(["hybrid+cut"], self.base)[0]
        assert cut.cut and cut.base == "hybrid"
        assert cut.query.cut.enabled and cut.query.cut.max_keep == 5 and cut.query.cut.drop_ratio == 0.5

    def test_missing_reranker_is_skipped_with_reason(self):
        cfgs = build_configs(
            ["hybrid+rerank", "hybrid+rerank+cut"], self.base, reranker_model="/nonexistent/ce"
        )
        for cfg in cfgs:
            assert cfg.query is None
            assert "not available offline" in cfg.skip_reason and "/nonexistent/ce" in cfg.skip_reason

    def test_tuned_params_are_applied(self):
        tuned = TunedParams("minmax", (0.3, 0.7), 60, 100, 0.4, 3)
        plain, cut = build_configs(["hybrid-tuned", "hybrid-tuned+cut"], self.base, tuned=tuned)
        assert plain.query.fusion.method == "minmax" and plain.query.fusion.weights == (0.3, 0.7)
        assert cut.query.cut.enabled and (cut.query.cut.drop_ratio, cut.query.cut.max_keep) == (0.4, 3)
        # tuned on the fused score with no floor, so it cuts on that scale, not on the relevance
        assert (cut.query.cut.scale, cut.query.cut.min_score) == ("score", 0.0)
        assert tuned.query_overrides()["query"]["cut"]["scale"] == "score"
        # the untuned cut keeps its defaults
        assert build_configs(["hybrid+cut"], self.base, tuned=tuned)[0].query.cut.drop_ratio == 0.5

    def test_tuned_without_params_is_an_error(self):
        with pytest.raises(EvalError, match="haygraph tune"):
            build_configs(["hybrid-tuned"], self.base)

    def test_default_is_the_shipped_query_config_uncut(self):
        plain, cut = build_configs(["default", "default+cut"], self.base, depth=100)
        shipped = self.base.query
        assert plain.base == cut.base == "default" and plain.needs_embeddings
        assert plain.query.mode == shipped.mode and plain.query.fusion.method == shipped.fusion.method
        assert plain.query.fusion.language_aware and plain.query.top_k == 100
        assert not plain.query.cut.enabled and cut.query.cut.enabled
        assert cut.query.cut.scale == shipped.cut.scale
        bm25_base = self.base.with_overrides(query={"mode": "bm25"})
        assert not build_configs(["default"], bm25_base)[0].needs_embeddings

    def test_a_reranker_folder_without_a_model_is_an_error_not_a_skip(self, tmp_path):
        (tmp_path / "notes.txt").write_text("not a model")
        with pytest.raises(EvalError, match=r"--reranker: .*holds no model"):
            build_configs(["hybrid-minmax+rerank"], self.base, reranker_model=str(tmp_path))

    def test_minmax_rerank_with_a_non_cross_encoder_is_an_error(self):
        # the bundled embedding model is a BertModel, not a sequence classifier
        from haygraph.retrieval.model_paths import bundled_model_path

        with pytest.raises(EvalError, match=r"--reranker: .*not a cross-encoder.*haygraph train-reranker"):
            build_configs(["hybrid-minmax+rerank"], self.base, reranker_model=bundled_model_path())
