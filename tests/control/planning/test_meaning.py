from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

import pytest

from haygraph.control.evidence import Evidence
from haygraph.control.planning.decision.model import AnswerabilityModel, Decision, shipped_model
from haygraph.control.planning.extractive import extractive_answer
from haygraph.control.planning.meaning import (
    COSINE_CEIL,
    COSINE_FLOOR,
    MeaningEncoder,
    contrasted_words,
    key_words,
    meaning_signals,
    missing_share,
    missing_words,
    scaled_cosine,
    sibling_nouns,
)


class FakeEncoder:
    """Maps each text to a fixed unit vector: questions and passages that share the word 'leave' align."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[str, ...], bool]] = []

    def embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        self.calls.append((tuple(texts), query))
        out = []
        for text in texts:
            if "leave" in text.lower() or "假" in text:
                out.append([1.0, 0.0])
            else:
                out.append([math.cos(1.2), math.sin(1.2)])  # cosine 0.36 to the first
        return out


class TestKeyWords:
    def test_chinese_words_without_question_words(self):
        assert key_words("周末晚餐补贴是多少") == ("周末", "晚餐", "补贴")
        assert "几年" not in key_words("笔记本电脑用满几年可以申请更换？")
        assert "可以" not in key_words("笔记本电脑用满几年可以申请更换？")

    def test_english_content_words_without_how_phrases(self):
        assert key_words("How long is the probation period?") == ("probation", "period")


class TestMissingWords:
    def test_the_asked_for_thing_missing_from_every_unit(self):
        texts = ["工作日午餐补贴每天30元。周末加班午餐补贴每天50元。"]
        assert missing_words("周末晚餐补贴是多少", texts) == (["晚餐"], 3)
        assert missing_share("周末午餐补贴是多少", texts) == 0.0

    def test_words_of_another_script_are_not_looked_up(self):
        # an English question over Chinese evidence is left to the meaning signals
        assert missing_words("How much is the weekend dinner allowance?", ["周末加班午餐补贴每天50元。"]) == (
            [],
            0,
        )

    def test_english_plural_and_case(self):
        texts = ["Each employee may order one laptop."]
        assert missing_share("How many Laptops can I order?", texts) == 0.0
        assert missing_share("How many monitors can I order?", texts) == 0.5


class VectorsByWord:
    """Passage vectors looked up by text (unit length), for the synonym check."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


class TestContrastedWords:
    LUNCH: ClassVar[list[str]] = ["周末加班满 4 小时的，公司提供午餐补贴 30 元。"]

    def test_a_sibling_of_the_missing_thing_is_a_near_miss(self):
        assert contrasted_words("周末加班的晚餐补贴是多少钱", self.LUNCH, self.LUNCH) == [("晚餐", "午餐")]
        assert contrasted_words("周末加班的午餐补贴是多少钱", self.LUNCH, self.LUNCH) == []

    def test_the_word_after_how_is_an_action_not_a_thing(self):
        # jieba tags both 收费 and 计费 as nouns; "how is it charged" is answered by "billed at 0.8 元"
        billed = ["超出部分按每 GB 0.8 元计费。"]
        assert contrasted_words("超出流量怎么收费", billed, billed) == []
        # only the word after "how": the thing asked about still needs its own word
        assert contrasted_words("周末加班的晚餐补贴怎么领取", self.LUNCH, self.LUNCH) == [("晚餐", "午餐")]

    def test_the_kind_after_an_interrogative_is_not_a_missing_thing(self):
        fish = ["班卡雀鲷为辐鳍鱼纲鲈形目鲈亚目雀鲷科的其中一个种。"]
        assert contrasted_words("班卡雀鲷属于什么科目？", fish, fish) == []

    def test_a_yes_no_question_is_answered_by_the_contrast(self):
        auto = ["使用 v-model.number 时，输入框的值会被自动转换为数字。"]
        assert contrasted_words("输入框还需要手动转换为数字吗？", auto, auto) == []
        rewritten = "输入框还需要手动转换为数字"  # the query rewriting drops the trailing 吗
        assert contrasted_words(rewritten, auto, auto, asked="输入框还需要手动转换为数字吗？") == []
        assert contrasted_words("输入框手动转换的数字是多少", auto, auto) == [("手动", "自动")]

    def test_what_questions_are_not_yes_no_questions(self):
        lunch = ["周末加班满 4 小时的，公司提供午餐补贴 30 元。"]
        # "是什么" ends in 么 but asks what, so the sibling rule applies; "…么" after a verb asks yes/no
        assert contrasted_words("周末加班的晚餐补贴是什么", lunch, lunch) == [("晚餐", "午餐")]
        assert contrasted_words("周末加班有晚餐补贴么", lunch, lunch) == []

    def test_a_verbal_noun_used_as_a_verb_is_no_thing(self):
        cache = ["KeepAlive 是一个内置组件，当缓存数量超过上限时，最久没有被访问的缓存实例将被销毁。"]
        assert (
            contrasted_words("KeepAlive 设置了 max 以后，缓存数量超过上限时会销毁哪一个实例？", cache, cache)
            == []
        )

    def test_verbs_numerals_and_synonyms_are_not_siblings(self):
        day = ["出差伙食补助当天按标准发放，每人每天 100 元。"]
        assert contrasted_words("出差的伙食补助一天是多少钱", day, day) == []  # 一天 is a numeral
        pay = ["员工的工资每月 10 日发放。"]
        assert contrasted_words("薪资什么时候发放", pay, pay) == [("薪资", "工资")]
        close = VectorsByWord({"薪资": [1.0, 0.0], "工资": [0.99, math.sqrt(1 - 0.99**2)]})
        assert contrasted_words("薪资什么时候发放", pay, pay, close) == []  # as close as a synonym
        far = VectorsByWord({"薪资": [1.0, 0.0], "工资": [0.9, math.sqrt(1 - 0.81)]})
        assert contrasted_words("薪资什么时候发放", pay, pay, far) == [("薪资", "工资")]


class TestSiblingNouns:
    LEAVE = "事假为无薪假，按日扣除基本工资。每年累计事假原则上不超过 10 天；"

    def test_a_unit_on_another_leave_names_a_sibling(self):
        # jieba cuts 年假 apart (年 / 假): the question's single characters still pair up
        assert sibling_nouns("年假有几天？", self.LEAVE) == ["事假"]
        assert sibling_nouns("周末晚餐补贴是多少", "工作日午餐补贴为每人每天 30 元。") == ["午餐"]

    def test_no_sibling_when_the_unit_names_the_asked_thing_or_the_question_names_both(self):
        assert sibling_nouns("年假有几天？", "年假未休完的，应先使用年假，再请事假。") == []
        assert sibling_nouns("事假和年假有什么区别？", self.LEAVE) == []
        # a word pair across a word boundary is no noun: 加班 / 工资 holds no 班工 for 员工 to mirror
        assert sibling_nouns("周末加班工资怎么算？", "员工离职时，未使用的调休按小时工资的 200% 折算。") == []

    def test_extractive_answer_skips_a_further_unit_on_a_sibling(self):
        leave = Evidence(
            id="l",
            score=1.0,
            text="\n\n".join(["年假最小单位为半天。", self.LEAVE, "年假天数以英文《Leave Policy》为准。"]),
        )
        answer = extractive_answer("年假有几天？", [leave])
        assert answer is not None and "事假" not in answer.answer and "Leave Policy" in answer.answer


class TestMeaningSignals:
    def test_scaled_cosine_is_clipped(self):
        assert scaled_cosine([1.0, 0.0], [1.0, 0.0]) == 1.0
        assert scaled_cosine([1.0, 0.0], [0.0, 1.0]) == 0.0
        middle = (COSINE_FLOOR + COSINE_CEIL) / 2
        assert scaled_cosine([1.0, 0.0], [middle, math.sqrt(1 - middle**2)]) == pytest.approx(0.5)

    def test_best_unit_and_heading_with_an_encoder(self):
        encoder = FakeEncoder()
        assert isinstance(encoder, MeaningEncoder)
        signals = meaning_signals(
            "How many days of leave?",
            ["Parking is free.", "Annual leave is 15 days."],
            ["Leave policy"],
            ["Leave policy Annual leave is 15 days. Parking is free."],
            encoder,
        )
        assert signals["meaning_unit"] == 1.0 and signals["meaning_heading"] == 1.0
        assert encoder.calls == [
            (("How many days of leave?",), True),
            (("Parking is free.", "Annual leave is 15 days.", "Leave policy"), False),
        ]

    def test_without_an_encoder_only_missing_words(self):
        signals = meaning_signals("How many days of leave?", ["Parking is free."], ["Parking"], ["x"], None)
        assert signals["meaning_unit"] == 0.0 and signals["meaning_heading"] == 0.0
        assert signals["missing_words"] == 1.0


class TestDecision:
    EVIDENCE: ClassVar[list[Evidence]] = [
        Evidence(id="1", text="Annual leave is 15 days per year.", score=0.9, source="leave.md")
    ]

    def test_decide_carries_probability_threshold_and_signals(self):
        decision = shipped_model().decide("How many days of annual leave?", self.EVIDENCE)
        assert isinstance(decision, Decision) and decision.rule is None
        assert decision.answerable == (decision.probability >= decision.threshold)
        data = decision.to_dict()
        assert set(data) == {
            "answerable",
            "probability",
            "threshold",
            "signals",
            "rule",
            "margin",
            "margin_needed",
        }
        assert {"meaning_unit", "missing_words", "coverage"} <= set(data["signals"])

    def test_no_evidence_is_decided_before_the_model(self):
        model = shipped_model()
        assert model.decide("How many days?", []).rule == "no evidence"

    def test_encoder_goes_with_its_weights(self):
        encoder = FakeEncoder()
        model = shipped_model(encoder)
        assert model.encoder is encoder
        model.decide("How many days of annual leave?", self.EVIDENCE)
        assert encoder.calls  # the meaning signals were read
        assert shipped_model().encoder is None
        assert AnswerabilityModel(weights={}, encoder=encoder) == AnswerabilityModel(weights={})


class TestClosestInMeaning:
    def test_no_shared_word_quotes_the_unit_closest_in_meaning(self):
        from haygraph.control.planning.extractive import extractive_answer

        evidence = [
            Evidence(id="p", text="停车场每天开放12小时。每位员工年假为15天。", score=0.9, source="zh.md"),
        ]
        # no English word occurs in the Chinese chunk: without an encoder the first unit is quoted
        plain = extractive_answer("How many days of leave?", evidence)
        assert plain is not None and plain.answer.startswith("停车场")
        closest = extractive_answer("How many days of leave?", evidence, encoder=FakeEncoder())
        assert closest is not None and closest.answer == "每位员工年假为15天。 [p]"
