import json

import pytest
from pydantic import ValidationError

from haygraph.retrieval.config import SCENARIO_WEIGHTS, FusionConfig, RetrievalConfig
from haygraph.retrieval.errors import ConfigError
from tests.bounded_calls import TIMEOUT, run_bounded, within


class TestRetrievalConfig:
    def test_defaults(self):
        cfg = RetrievalConfig()
        assert cfg.query.mode == "hybrid" and cfg.bm25.backend == "bm25s" and cfg.dense.backend == "numpy"
        assert cfg.query.cut.drop_ratio == 0.5 and cfg.query.cut.max_keep == 5
        assert cfg.query.fusion.resolved_weights() == (0.5, 0.5)

    def test_unknown_key_is_named(self):
        with pytest.raises(ConfigError, match=r"unknown config key 'query\.fusion\.wieghts'"):
            RetrievalConfig.from_dict({"query": {"fusion": {"wieghts": [0.5, 0.5]}}})

    def test_unknown_top_level_section(self):
        with pytest.raises(ConfigError, match="'rerank'"):
            RetrievalConfig.from_dict({"rerank": {}})

    @pytest.mark.parametrize(
        ("data", "where"),
        [
            ({"query": {"cut": {"drop_ratio": 1.5}}}, "query.cut.drop_ratio"),
            ({"query": {"mode": "sparse"}}, "query.mode"),
            ({"bm25": {"b": 2}}, "bm25.b"),
            ({"query": {"fusion": {"weights": [-1, 1]}}}, "weights must be non-negative"),
            ({"query": {"fusion": {"weights": [0, 0]}}}, "not all zero"),
            ({"splitter": {"min_chars": 900, "max_chars": 800}}, "min_chars must be <= max_chars"),
            ({"embedder": {"batch_size": 0}}, "embedder.batch_size"),
            ({"dense": {"backend": "faiss"}}, "dense.backend"),
        ],
    )
    def test_bad_values(self, data, where):
        with pytest.raises(ConfigError) as info:
            RetrievalConfig.from_dict(data)
        assert where in str(info.value)

    def test_frozen(self):
        cfg = RetrievalConfig()
        with pytest.raises(ValidationError, match="frozen"):
            cfg.query.top_k = 3  # type: ignore[misc]

    @pytest.mark.parametrize(("scenario", "weights"), sorted(SCENARIO_WEIGHTS.items()))
    def test_scenario_presets(self, scenario, weights):
        cfg = RetrievalConfig.from_dict({"query": {"fusion": {"scenario": scenario}}})
        assert cfg.query.fusion.resolved_weights() == weights

    def test_preset_values(self):
        assert SCENARIO_WEIGHTS == {"faq": (0.3, 0.7), "technical": (0.5, 0.5), "ids": (0.7, 0.3)}

    def test_explicit_weights_override_preset(self):
        fusion = FusionConfig(scenario="faq", weights=(0.9, 0.1))
        assert fusion.resolved_weights() == (0.9, 0.1)

    def test_from_file_yaml(self, tmp_path):
        path = tmp_path / "cfg.yaml"
        path.write_text("query:\n  mode: bm25\n  fusion:\n    scenario: ids\nbm25:\n  language: zh\n")
        cfg = RetrievalConfig.from_file(path)
        assert (cfg.query.mode, cfg.query.fusion.scenario, cfg.bm25.language) == ("bm25", "ids", "zh")

    def test_from_file_json(self, tmp_path):
        path = tmp_path / "cfg.json"
        path.write_text(json.dumps({"query": {"cut": {"enabled": False}, "top_k": 7}}))
        cfg = RetrievalConfig.from_file(path)
        assert cfg.query.cut.enabled is False and cfg.query.top_k == 7

    def test_from_file_empty_yaml_is_default(self, tmp_path):
        path = tmp_path / "cfg.yaml"
        path.write_text("")
        assert RetrievalConfig.from_file(path) == RetrievalConfig()

    @pytest.mark.parametrize(
        ("name", "text", "match"),
        [
            ("bad.yaml", "query: [unclosed", "not valid yaml"),
            ("bad.json", "{", "not valid json"),
            ("list.yaml", "- a\n- b\n", "must hold a mapping"),
            ("unknown.yaml", "querry: {}\n", "unknown config key 'querry'"),
        ],
    )
    def test_from_file_errors(self, tmp_path, name, text, match):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=match):
            RetrievalConfig.from_file(path)

    def test_from_file_missing(self, tmp_path):
        with pytest.raises(ConfigError, match="cannot read"):
            RetrievalConfig.from_file(tmp_path / "none.yaml")

    def test_with_overrides(self):
        cfg = RetrievalConfig().with_overrides(query={"mode": "bm25", "cut": {"max_keep": 3}})
        assert cfg.query.mode == "bm25" and cfg.query.cut.max_keep == 3 and cfg.query.cut.drop_ratio == 0.5
        with pytest.raises(ConfigError, match="unknown config section 'qurey'"):
            RetrievalConfig().with_overrides(qurey={})
        with pytest.raises(ConfigError, match=r"query\.cut\.max_keep"):
            RetrievalConfig().with_overrides(query={"cut": {"max_keep": 0}})

    def test_json_dump_round_trip(self):
        cfg = RetrievalConfig().with_overrides(query={"fusion": {"weights": (0.2, 0.8)}})
        assert RetrievalConfig.from_dict(cfg.model_dump(mode="json")) == cfg


class TestConfigValidation:
    """Issue 11: finite, in-range numbers; strict booleans; configs that cannot blow up the parser."""

    @pytest.mark.parametrize(
        ("data", "where"),
        [
            ({"bm25": {"k1": float("inf")}}, "bm25.k1: Input should be a finite number"),  # regression
            ({"bm25": {"k1": float("nan")}}, "bm25.k1: Input should be a finite number"),
            ({"bm25": {"k1": 50}}, "bm25.k1"),
            ({"query": {"fusion": {"weights": [float("nan"), 1]}}}, "query.fusion.weights.0"),  # regression
            ({"query": {"fusion": {"weights": [1, float("inf")]}}}, "query.fusion.weights.1"),
            ({"query": {"fusion": {"weights": [True, 1]}}}, "must be numbers"),
            (
                {"splitter": {"min_chars": True}},
                "splitter.min_chars: Value error, must be a number",
            ),  # regression
            ({"splitter": {"enabled": 1}}, "splitter.enabled: Value error, must be true or false"),
            ({"embedder": {"use_cache": "no"}}, "embedder.use_cache"),
            ({"query": {"cut": {"drop_ratio": float("-inf")}}}, "query.cut.drop_ratio"),
            ({"query": {"cut": {"min_keep": 6, "max_keep": 5}}}, "min_keep must be <= max_keep"),
            ({"query": {"relevance": {"en_bias": float("nan")}}}, "query.relevance.en_bias"),
            ({"embedder": {"batch_size": 10**9}}, "embedder.batch_size"),
            ({"query": {"top_k": False}}, "query.top_k"),
        ],
    )
    def test_bad_numbers_and_booleans(self, data, where):
        with pytest.raises(ConfigError) as info:
            RetrievalConfig.from_dict(data)
        assert where in str(info.value)

    def test_numbers_still_accept_ints_and_yaml_floats(self, tmp_path):
        cfg = RetrievalConfig.from_dict({"bm25": {"k1": 2, "b": 0}, "query": {"fusion": {"weights": [1, 0]}}})
        assert cfg.bm25.k1 == 2.0 and cfg.query.fusion.weights == (1.0, 0.0)
        path = tmp_path / "inf.yaml"
        path.write_text("bm25: {k1: .inf}\n")
        with pytest.raises(ConfigError, match=r"bm25\.k1: Input should be a finite number"):
            RetrievalConfig.from_file(path)

    @pytest.mark.parametrize("suffix", [".yaml", ".json"])
    def test_nesting_bomb(self, tmp_path, suffix):
        # regression: 50,000 nested "[" raised RecursionError
        path = tmp_path / f"bomb{suffix}"
        path.write_text("[" * 50_000)
        with pytest.raises(ConfigError, match="nested too deeply"):
            RetrievalConfig.from_file(path)

    def test_nesting_within_parser_limits_but_too_deep(self, tmp_path):
        path = tmp_path / "deep.json"
        path.write_text('{"query": ' + "[" * 100 + "]" * 100 + "}")
        with pytest.raises(ConfigError, match="nested deeper than 32 levels"):
            RetrievalConfig.from_file(path)

    def test_alias_bomb(self, tmp_path):
        lines = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
        for prev, name in zip("abcdefg", "bcdefgh", strict=True):
            lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")  # 10^8 values expanded
        path = tmp_path / "laughs.yaml"
        path.write_text("\n".join(lines) + "\n")
        with pytest.raises(ConfigError, match="holds more than 10,000 values"):
            RetrievalConfig.from_file(path)

    def test_oversized_and_undecodable_files(self, tmp_path):
        big = tmp_path / "big.yaml"
        big.write_text("# " + "x" * 1_000_001)
        with pytest.raises(ConfigError, match="larger than 1,000,000 bytes"):
            RetrievalConfig.from_file(big)
        latin = tmp_path / "latin.yaml"
        latin.write_bytes("bm25: {language: é}".encode("latin-1"))
        with pytest.raises(ConfigError, match="not UTF-8"):
            RetrievalConfig.from_file(latin)

    @pytest.mark.parametrize("data", [None, [1], "bm25"])
    def test_from_dict_needs_a_mapping(self, data):
        with pytest.raises(ConfigError, match="must be a mapping"):
            RetrievalConfig.from_dict(data)


class TestConfigFileKinds:
    def test_fifo_config_is_refused_without_blocking(self, fifo):
        config = fifo.with_name("config.yaml")
        fifo.rename(config)
        with pytest.raises(ConfigError, match=r"config\.yaml: is a FIFO \(named pipe\), not a regular file"):
            within(TIMEOUT, lambda: RetrievalConfig.from_file(config))

    def test_dev_zero_config_is_refused_before_reading(self):
        proc = run_bounded(
            "from haygraph.retrieval.config import RetrievalConfig\n"
            "try:\n    RetrievalConfig.from_file('/dev/zero')\n"
            "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
        )
        assert proc.stdout.strip() == (
            "ConfigError cannot read config file /dev/zero: is a device, not a regular file; "
            "only regular files are read"
        ), proc.stderr
