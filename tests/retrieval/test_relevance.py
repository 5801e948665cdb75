import math

import pytest

from haygraph.retrieval.config import RelevanceConfig, RelevanceWeights
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.relevance import (
    FEATURE_NAMES,
    cjk_share,
    normalized_bm25,
    relevance_features,
    relevance_probability,
)


class TestRelevanceMath:
    def test_cjk_share(self):
        assert cjk_share("annual leave") == 0.0
        assert cjk_share("年假") == 1.0
        assert cjk_share("VPN 密码") == pytest.approx(2 / 5)
        assert cjk_share("?!") == 0.0

    def test_features_in_weight_order(self):
        # 'ab年' : cjk share 1/3 -> English block x 2/3, Chinese block x 1/3
        features = relevance_features(0.6, 0.3, 0.9, "ab年")
        assert len(features) == len(FEATURE_NAMES) == 8
        assert features == pytest.approx((0.4, 0.2, 0.6, 2 / 3, 0.2, 0.1, 0.3, 1 / 3))

    def test_probability_is_a_stable_logistic(self):
        assert relevance_probability((1.0, 2.0), (0.5, -0.25)) == pytest.approx(0.5)
        assert relevance_probability((1.0,), (2.0,)) == pytest.approx(1 / (1 + math.exp(-2)))
        assert relevance_probability((1.0,), (-1000.0,)) == 0.0  # no overflow
        assert relevance_probability((1.0,), (1000.0,)) == 1.0

    @pytest.mark.parametrize(
        ("score", "bound", "expected"), [(2.0, 4.0, 0.5), (5.0, 4.0, 1.0), (0.0, 4.0, 0.0), (1.0, 0.0, 0.0)]
    )
    def test_normalized_bm25(self, score, bound, expected):
        assert normalized_bm25(score, bound) == expected


class TestRelevanceConfig:
    def test_weight_fields_follow_feature_order(self):
        assert tuple(RelevanceWeights.model_fields) == FEATURE_NAMES
        assert RelevanceWeights(en_bias=-1.0, zh_bm25=2.0).vector() == (0, 0, 0, -1.0, 0, 0, 2.0, 0)

    def test_weights_selected_by_mode(self):
        cfg = RelevanceConfig()
        assert cfg.for_mode("hybrid") == cfg.hybrid and cfg.for_mode("dense") == cfg.dense
        assert cfg.for_mode("bm25") == cfg.bm25
        assert cfg.bm25.en_cosine == cfg.bm25.zh_cosine == 0  # bm25 mode loads no model by default
        with_cosine = RelevanceConfig(bm25_uses_cosine=True)
        assert (
            with_cosine.for_mode("bm25") == with_cosine.bm25_cosine and with_cosine.bm25_cosine.en_cosine > 0
        )
        with pytest.raises(ConfigError, match="valid: bm25, dense, hybrid"):
            cfg.for_mode("sparse")
