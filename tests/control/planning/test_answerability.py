"""Tests for the answerability decision: signals, entities, rules, and the shipped weights."""

from __future__ import annotations

import json

import pytest

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.planning.decision.model import WEIGHTS_FILE, AnswerabilityModel, shipped_model
from haygraph.control.planning.decision.signals import (
    FEATURE_NAMES,
    answerability_features,
    answerability_signals,
    code_terms,
    key_entities,
    longest_shared_span,
    quotes_type,
    script_shares,
)


def ev(i: int, text: str, relevance: float, coverage: float = 0.0) -> Evidence:
    return Evidence(
        id=f"e{i}", text=text, score=relevance, relevance=relevance, meta={"term_coverage": coverage}
    )


LEAVE = ev(
    1, "Annual leave: less than 3 years of service gives 12 working days; 3 to 9 years 15 days.", 0.8, 0.9
)
PARKING = ev(2, "The office has bicycle racks on the ground floor and showers on floor 2.", 0.45, 0.2)


class TestSignals:
    def test_entities_titles_quotes_numbers_names(self) -> None:
        assert key_entities("《战国无双3》是由哪两个公司开发的") == ["战国无双3", "3"]
        assert key_entities('What does "hot desk" mean in 2026?') == ["hot desk", "2026"]
        assert key_entities("How do stock options vest at Northwind Harbor?") == ["northwind harbor"]
        assert key_entities("VPN 密码多久换一次") == ["vpn"]

    def test_longest_shared_span_ignores_punctuation_and_case(self) -> None:
        # "annualleave" (11 characters) is the longest stretch of the question found in the text.
        assert longest_shared_span("Annual leave?", "my annual-leave balance") == 11
        assert longest_shared_span("锣鼓经是什么", "锣鼓经，又称锣鼓点") == 3

    def test_script_shares(self) -> None:
        assert script_shares("年假 leave") == pytest.approx((2 / 7, 5 / 7, 0.0))
        assert script_shares("Сколько дней отпуска")[2] == 1.0

    def test_signals_of_matching_and_unrelated_evidence(self) -> None:
        good = answerability_signals("How many days of annual leave after 4 years", [LEAVE, PARKING])
        bad = answerability_signals("How much does parking in the garage cost", [PARKING])
        assert good["relevance"] == 0.8 and good["gap"] == pytest.approx(0.35)
        assert good["coverage"] > bad["coverage"]
        assert good["entities"] == 0.0 and good["has_entities"] == 1.0  # "4" is not in the evidence
        assert bad["has_entities"] == 0.0 and bad["entities"] == 1.0

    def test_unit_signals_look_at_one_answer_unit(self) -> None:
        # One sentence holds "annual", "leave" and a number of days; the near miss spreads
        # "parking" and "month" over a chunk that never names a price.
        spread = ev(3, "Parking is not offered.\n\nEach month the office runs a bike day.", 0.6)
        good = answerability_signals("How many days of annual leave", [LEAVE])
        bad = answerability_signals("How much does parking cost per month", [spread])
        # question terms day, annual, leave (2 each; "how many" is question scaffolding): all in one unit
        assert good["unit_coverage"] == pytest.approx(1.0) and good["type_missing"] == 0.0
        # parking, cost, month (2 each): the chunk holds parking and month (4 / 6), but no single
        # unit holds both (2 / 6)
        assert bad["unit_coverage"] == pytest.approx(1 / 3) and bad["coverage"] == pytest.approx(2 / 3)
        assert bad["type_missing"] == 1.0  # "how much" asks for a number; no unit sharing a term holds one

    def test_features_are_blended_by_language(self) -> None:
        signals = answerability_signals("年假有几天", [LEAVE])
        features = answerability_features("年假有几天", signals)
        assert len(features) == len(FEATURE_NAMES)
        assert features[: len(features) // 2] == (0.0,) * (len(features) // 2)  # all-Chinese: en block is 0
        assert features[-1] == 1.0  # zh bias


class TestModel:
    def test_a_required_type_no_unit_holds_refuses_whatever_the_model(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        lazy = ev(1, "By default, v-model syncs the input with the data after each input event.", 0.8, 0.9)
        refused = model.decide("How many milliseconds does v-model wait before it syncs?", [lazy])
        assert not refused.answerable and refused.rule == "no retrieved sentence holds the asked-for duration"
        assert refused.probability > 0.99 and refused.signals["type_missing"] == 1.0
        assert model.decide("How many days of leave do I get?", [LEAVE]).answerable  # 12 working days
        laptop = ev(2, "笔记本电脑使用满三年后，员工可以在IT服务台提交更换申请。", 0.8, 0.9)
        assert model.decide("笔记本电脑用满几年可以申请更换？", [laptop]).answerable  # 三年 is a number
        assert model.decide(
            "Why does v-model sync after each input event?", [lazy]
        ).answerable  # not required
        # a price needs an amount of money: the floor number beside it is none
        printing = ev(3, "彩色打印需要在打印机上刷工牌确认。打印机位于 15 层茶水间旁边。", 0.8, 0.9)
        priced = model.decide("彩色打印每页多少钱？", [printing])
        assert not priced.answerable and priced.rule == "no retrieved sentence holds the asked-for price"
        tariff = ev(4, "彩色打印每页收费 0.5 元，在打印机上刷工牌确认。", 0.8, 0.9)
        assert model.decide("彩色打印每页多少钱？", [tariff]).answerable

    def test_a_count_in_a_measure_word_needs_a_number_of_it(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        # a number of that thing, not a version number
        teleport = ev(5, "Teleport 可以嵌套使用。在 Vue 3.5 及更高版本中，可以使用 defer。", 0.8, 0.9)
        nested = model.decide("Teleport 最多可以嵌套几层？", [teleport])
        assert not nested.answerable and nested.rule == "no retrieved sentence holds a number of '层'"
        floors = ev(6, "Teleport 最多可以嵌套 3 层。", 0.8, 0.9)
        assert model.decide("Teleport 最多可以嵌套几层？", [floors]).answerable

    def test_a_default_in_brackets_is_stated(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        comfort = ev(1, "Comfort mode holds the temperature you set (default 21 °C).", 0.8, 0.9)
        assert model.decide("What's the default comfort temperature?", [comfort]).answerable

    def test_an_everyday_word_with_humps_may_be_written_in_chinese(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        guest = ev(1, "访客无线网络为 SH-Guest，密码每周一更新，张贴在前台。", 0.8, 0.9)
        assert model.decide("访客 WiFi 密码在哪里看？", [guest]).answerable
        hyphen = ev(2, "The guest Wi-Fi password changes every Monday.", 0.8, 0.9)
        assert model.decide("When does the guest WiFi password change?", [hyphen]).answerable
        # an identifier stays required: `.sync` is not "sync"
        lazy = ev(3, "Add the `lazy` modifier to sync after change events.", 0.8, 0.9)
        refused = model.decide("What does the `.sync` modifier become?", [lazy])
        assert not refused.answerable and refused.rule == "no retrieved passage mentions '.sync'"

    def test_the_asked_for_type_must_be_in_what_is_quoted(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        delay = ev(
            1,
            "A loader that fails can be retried. The loading component shows after a delay of 200ms.",
            0.8,
            0.9,
        )
        refused = model.decide("How many times is a failed loader retried?", [delay])
        assert not refused.answerable and refused.rule == "no retrieved sentence holds the asked-for count"
        retries = ev(2, "A loader that fails is retried 3 times.", 0.8, 0.9)
        assert model.decide("How many times is a failed loader retried?", [retries]).answerable
        # a number elsewhere in the chunk, in a unit the answer would not quote, is no answer
        far = ev(
            3,
            "Disabling the Options API support gives smaller bundles.\n\n"
            "Precompiled templates leave the compiler out of bundles, which saves 14kb.",
            0.8,
            0.9,
        )
        question = "How many kb smaller are bundles without the Options API support?"
        assert (
            model.decide(question, [far]).signals["type_missing"] == 0.0
        )  # a unit sharing "bundles" has 14kb
        assert not quotes_type(question, [far], "size")
        assert not model.decide(question, [far]).answerable

    def test_a_sibling_of_the_asked_for_thing_refuses(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        lunch = ev(1, "周末加班满 4 小时的，公司提供午餐补贴 30 元。", 0.8, 0.9)
        refused = model.decide("周末加班的晚餐补贴是多少钱", [lunch])
        assert (
            not refused.answerable
            and refused.rule == "no retrieved passage mentions '晚餐' (they state '午餐')"
        )
        assert model.decide("周末加班的午餐补贴是多少钱", [lunch]).answerable

    def test_an_identifier_no_evidence_mentions_refuses(self) -> None:
        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        flags = ev(
            1, "`__VUE_OPTIONS_API__` defaults to true; `@vitejs/plugin-vue` provides defaults.", 0.8, 0.9
        )
        refused = model.decide("What is the default value of the __VUE_PROD_TIPS__ flag?", [flags])
        assert not refused.answerable and refused.rule == "no retrieved passage mentions '__vue_prod_tips__'"
        assert model.decide("What is the default value of __VUE_OPTIONS_API__?", [flags]).answerable
        assert model.decide("__VUE_OPTIONS_API__ 的默认值是什么？", [flags]).answerable

    def test_code_terms(self) -> None:
        assert code_terms("How often does defineAsyncComponent retry?") == ["defineasynccomponent"]
        assert code_terms("Does KeepAlive cache UreB, TatAD or mRNA?") == ["keepalive"]  # not gene names
        assert code_terms("vue.global.prod.js 压缩后有多大") == ["vue.global.prod.js"]
        assert code_terms("使用defineAsyncComponent时") == ["defineasynccomponent"]
        assert code_terms("What does `v-model.lazy` do with --force?") == ["v-model.lazy", "--force"]
        assert code_terms("How do I reset my VPN password, e.g. for MFA? Is Wi-Fi free?") == []
        assert code_terms("How long do I have to return what I bought on shop.northwind.example?") == []

    def test_bad_weights_and_threshold_are_config_errors(self, tmp_path) -> None:
        with pytest.raises(ConfigError, match="unknown answerability weight"):
            AnswerabilityModel(weights={"nope": 1.0})
        with pytest.raises(ConfigError, match="threshold"):
            AnswerabilityModel(weights={}, threshold=1.0)
        bad = tmp_path / "w.json"
        bad.write_text("{}")
        with pytest.raises(ConfigError, match="cannot load answerability weights"):
            AnswerabilityModel.from_file(bad)

    def test_shipped_weights_load_and_separate(self) -> None:
        data = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
        assert set(data["weights"]) == set(FEATURE_NAMES) and "command" in data
        model = shipped_model()
        yes = model.probability("How many days of annual leave do I get", [LEAVE, PARKING])
        no = model.probability("How much does parking in the garage cost per month", [PARKING])
        assert yes >= model.threshold > no


class TestReaderDecision:
    """The reader's signals, the margin needed, the rule registry and the reader weights file."""

    ENGLISH = Evidence(id="en", text="Staff park on level B2 for 90 EUR a month.", score=0.9, relevance=0.9)
    CHINESE = Evidence(id="zh", text="员工在 B2 层停车，每月 90 欧元。", score=0.9, relevance=0.9)

    @staticmethod
    def reading(item: Evidence, margin: float):  # type: ignore[no-untyped-def]
        from haygraph.control.reading import AnswerSpan, Reading

        start = item.text.index("90")
        spans = [AnswerSpan(evidence_id=item.id, start=start, end=start + 2, text="90", margin=margin)]
        return Reading(spans=spans, margin=margin, read=[item.id])

    def test_the_margin_and_whether_its_span_is_across_languages(self) -> None:
        from haygraph.control.planning.decision.signals import MARGIN_SCALE, reader_signals

        same = reader_signals("How much is parking on B2?", self.reading(self.ENGLISH, 6.0), [self.ENGLISH])
        assert same == {
            "reader_margin": 6.0 / MARGIN_SCALE,
            "reader_across": 0.0,
            "reader_across_margin": 0.0,
        }
        across = reader_signals("B2 层停车多少钱？", self.reading(self.ENGLISH, 6.0), [self.ENGLISH])
        assert across["reader_across"] == 1.0 and across["reader_across_margin"] == 6.0 / MARGIN_SCALE
        none = reader_signals("How much?", None, [self.ENGLISH])
        assert set(none.values()) == {0.0}

    def test_the_margin_needed_solves_the_threshold(self) -> None:
        model = AnswerabilityModel(weights={"en_reader_margin": 4.0, "en_bias": -1.0}, threshold=0.5)
        decision = model.decide(
            "How much is parking on level B2?", [self.ENGLISH], reading=self.reading(self.ENGLISH, 3.0)
        )
        # z = 4 * margin / 4 - 1: p = 0.5 at margin 1
        assert decision.answerable and decision.margin == 3.0
        assert decision.margin_needed == pytest.approx(1.0)
        assert decision.to_dict()["margin_needed"] == 1.0
        no_reader = model.decide("How much is parking on level B2?", [self.ENGLISH])
        assert no_reader.margin is None and no_reader.margin_needed is None

    def test_rules_can_be_turned_off_by_name_and_unknown_names_are_refused(self) -> None:
        from dataclasses import replace

        from haygraph.control.planning.decision.rules import RULE_NAMES

        model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        question = "What does defineAsyncComponent return?"
        assert model.decide(question, [self.ENGLISH]).rule is not None  # no passage names it
        assert replace(model, disabled=frozenset({"identifier"})).decide(question, [self.ENGLISH]).answerable
        assert "identifier" in RULE_NAMES
        with pytest.raises(ConfigError, match="unknown decision rule"):
            AnswerabilityModel(weights={}, disabled=frozenset({"no such rule"}))

    def test_a_missing_reader_weights_file_is_an_error(self, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
        import haygraph.control.planning.decision.model as model_module

        monkeypatch.setattr(model_module, "READER_WEIGHTS_FILE", tmp_path / "answerability_reader.json")
        model_module.shipped_model.cache_clear()
        try:
            with pytest.raises(ConfigError, match=r"decision weights .* are missing"):
                model_module.shipped_model(reader=True)
        finally:
            model_module.shipped_model.cache_clear()


def test_a_question_without_content_terms_is_refused_before_the_model() -> None:
    """Kept against the ablation (no tune row has one): bad input such as "can you tell me about that?"
    must never be answered (`tests/eval/test_agent_harness_integration.py::TestBadInput`)."""
    model = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
    assert model.decide("can you tell me about that?", [LEAVE]).rule == "no content terms"
    assert model.decide("How many days of leave?", [LEAVE]).answerable
