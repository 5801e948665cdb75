"""Offline extractive answers: verbatim evidence sentences, each with its id."""

from __future__ import annotations

import pytest

from haygraph.control.evidence import Evidence
from haygraph.control.planning.answer_units import chunk_units
from haygraph.control.planning.decision.lexicon import (
    asked_measure,
    asked_time_unit,
    asked_type,
    holds_measure,
    holds_type,
)
from haygraph.control.planning.extractive import (
    answer_units,
    extractive_answer,
    heading_names,
    insufficient_message,
    question_terms,
    question_text,
    sentence_score,
    table_row_text,
    terms,
)
from haygraph.control.texts import INSUFFICIENT_EVIDENCE
from tests.control.graph_helpers import cited_sentences


def ev(id_: str, text: str, relevance: float = 0.8) -> Evidence:
    return Evidence(id=id_, text=text, score=relevance, relevance=relevance)


class TestTerms:
    def test_english_words_minus_stop_words_plural_stripped(self) -> None:
        assert terms("What are the refund policies?") == {"refund": 2.0, "policy": 2.0}

    def test_chinese_characters_and_bigrams(self) -> None:
        # 年 假 几 天 (有 is a function character) + bigrams 年假 几天 (none with a function character)
        assert terms("年假有几天") == {"年": 1.0, "假": 1.0, "几": 1.0, "天": 1.0, "年假": 2.0, "几天": 2.0}

    def test_question_phrases_are_not_terms(self) -> None:
        # 能不能 / 告诉我 / 多少 say how the question is asked; no bigram spans a removed phrase
        assert question_text("能不能告诉我伙食补助是多少钱") == "  伙食补助是 钱"
        assert question_terms("能不能告诉我伙食补助是多少钱") == terms("伙食补助") | terms("钱")
        assert question_terms("请问一下") == {}
        # English function words are stop words already; "am" and "any" too
        assert question_terms("Am I allowed any home office money?") == terms("allowed home office money")

    def test_sentence_score(self) -> None:
        # refund (2) + policy (2); "days" not in the query
        assert sentence_score(terms("refund policy"), "Our refund policy lasts 30 days.") == 4.0


class TestExtractiveAnswer:
    def test_best_sentence_with_id(self) -> None:
        evidence = [
            ev("hr.md::a1", "# Leave\nEmployees get 20 days of annual leave. The office closes on Sundays."),
            ev("hr.md::b2", "Sick leave is unlimited with a doctor's note."),
        ]
        result = extractive_answer("How many days of annual leave do employees get?", evidence)
        assert result is not None
        assert result.answer == "Employees get 20 days of annual leave. [hr.md::a1]"
        assert result.evidence_ids == ["hr.md::a1"]

    def test_sentences_from_several_chunks_each_cited(self) -> None:
        evidence = [
            ev("p.md::1", "Refunds are paid within 14 days. Shipping is free."),
            ev("p.md::2", "A refund needs the original receipt. Stores open at 9."),
        ]
        result = extractive_answer("refund", evidence)
        assert result is not None
        assert cited_sentences(result.answer) == [
            ("Refunds are paid within 14 days.", "p.md::1"),
            ("A refund needs the original receipt.", "p.md::2"),
        ]
        assert result.evidence_ids == ["p.md::1", "p.md::2"]

    def test_every_sentence_is_verbatim_from_its_chunk(self) -> None:
        evidence = [
            ev("zh.md::1", "员工每年享有15天带薪年假。年假需提前两周申请！病假另行计算。"),
            ev("zh.md::2", "年假未休完可以顺延到次年三月；过期作废。"),
        ]
        result = extractive_answer("年假有几天", evidence)
        assert result is not None
        texts = {e.id: e.text for e in evidence}
        pairs = cited_sentences(result.answer)
        assert 1 <= len(pairs) <= 3
        assert pairs[0] == ("员工每年享有15天带薪年假。", "zh.md::1")
        for sentence, ev_id in pairs:
            assert sentence in texts[ev_id]

    def test_at_most_three_sentences(self) -> None:
        text = " ".join(f"Parking rule {i} applies to parking." for i in range(6))
        result = extractive_answer("parking rule", [ev("r::1", text)])
        assert result is not None
        assert len(cited_sentences(result.answer)) == 3

    def test_weak_sentences_are_dropped(self) -> None:
        # best sentence scores 6 (annual, leave, day); the other one 2 (leave) < 6 / 2
        evidence = [ev("x::1", "Annual leave is 20 days. Leave the keys at the desk.")]
        result = extractive_answer("annual leave days", evidence)
        assert result is not None
        assert result.answer == "Annual leave is 20 days. [x::1]"

    def test_no_overlap_uses_first_sentence_of_best_chunk(self) -> None:
        evidence = [ev("a::1", "Alpha sentence. Beta sentence."), ev("b::1", "Gamma.")]
        result = extractive_answer("zzz", evidence)
        assert result is not None
        assert result.answer == "Alpha sentence. [a::1]"

    def test_only_top_chunks_are_considered(self) -> None:
        evidence = [ev(f"c::{i}", "Nothing relevant.") for i in range(3)] + [ev("c::9", "Refund rules.")]
        result = extractive_answer("refund", evidence, max_evidence=3)
        assert result is not None
        assert result.evidence_ids == ["c::0"]

    def test_no_evidence(self) -> None:
        assert extractive_answer("anything", []) is None


class TestInsufficientMessage:
    def test_language(self) -> None:
        assert insufficient_message("What is X?") == INSUFFICIENT_EVIDENCE.en
        assert insufficient_message("X 是什么") == INSUFFICIENT_EVIDENCE.zh


class TestAnswerUnits:
    def test_wrapped_lines_are_joined_and_headings_dropped(self) -> None:
        from haygraph.control.planning.extractive import answer_units

        text = (
            "## 2. Your first day\n\n"
            "- Arrive at **09:00** at the reception on **floor 12**, or at\n"
            "  the reception of your local office.\n"
            "- Bring a photo ID.\n"
        )
        # list markers and bold are markup, not text: the unit is what the rendered page shows
        assert answer_units(text) == [
            "Arrive at 09:00 at the reception on floor 12, or at the reception of your local office.",
            "Bring a photo ID.",
        ]

    def test_numbered_item_is_not_split_after_its_number(self) -> None:
        from haygraph.control.planning.extractive import answer_units

        # a list item is one unit; a paragraph is split at sentence ends, never after "1."
        assert answer_units("1. Log in to PeopleHub. Then choose Leave.") == [
            "1. Log in to PeopleHub. Then choose Leave."
        ]
        assert answer_units("1) Log in to PeopleHub. " + "Then choose Leave. " * 20)[0] == (
            "1) Log in to PeopleHub."
        )

    def test_chinese_lines_join_without_space_and_labels_name_what_follows(self) -> None:
        from haygraph.control.planning.extractive import answer_units

        text = "**婚假**\n员工依法登记结婚的，可享受婚假\n13 天。须在一年内休完。\n|---|---|\n"
        # the bare label is not a unit of its own; it names the paragraph's first unit
        assert answer_units(text) == ["婚假：员工依法登记结婚的，可享受婚假 13 天。", "须在一年内休完。"]


LEAVE_CHUNK = """### 2.1 Entitlement

Annual leave is counted in working days and depends on your continuous service.

| Continuous service | Annual leave per year |
|---|---|
| Less than 3 years | 12 working days |
| 3 to 9 years | 15 working days |
| 10 years or more | 20 working days |

### 2.4 Carry-over

- Up to **5 days** of unused annual leave can be carried over into the next year.
"""

FAQ_CHUNK = """## 常见问题

**问：年假可以按小时请吗？**
答：不可以。年假最小单位为半天。

**问：试用期员工可以请婚假吗？**
答：可以，婚假不受试用期限制。
"""


class TestStructuredUnits:
    def test_short_two_column_table_is_quoted_whole_with_its_header(self) -> None:
        units = answer_units(LEAVE_CHUNK)
        table = [u for u in units if "→" in u]
        assert table == [
            "Continuous service → Annual leave per year: Less than 3 years → 12 working days; "
            "3 to 9 years → 15 working days; 10 years or more → 20 working days"
        ]
        assert not any(u.startswith("|") for u in units)  # no raw or half rows

    def test_wider_table_rows_are_quoted_one_by_one_with_headers(self) -> None:
        text = "| Item | Amount | How |\n|---|---|---|\n| Chair | USD 250 | Ask IT |\n"
        text += "| Monitor | Lent | Desk |\n"
        assert answer_units(text) == [
            "Item Chair → Amount: USD 250, How: Ask IT",
            "Item Monitor → Amount: Lent, How: Desk",
        ]
        assert table_row_text([], ["a", "b"]) == "a | b"

    def test_a_table_row_is_keyed_by_its_first_cell(self) -> None:
        text = "| Item | Amount | How |\n|---|---|---|\n| Chair | USD 250 | Ask IT |\n"
        assert [(u.text, u.key) for u in chunk_units(text)] == [
            ("Item Chair → Amount: USD 250, How: Ask IT", "Chair")
        ]
        # a short two-column table is one unit about no single row; prose has no key
        assert {u.key for u in chunk_units(LEAVE_CHUNK)} == {""}

    def test_the_row_named_by_the_question_comes_before_rows_naming_it_in_a_side_column(self) -> None:
        periods = (
            "| Holiday | First day off | Last day off |\n|---|---|---|\n"
            "| Labour Day | 2026-05-01 | 2026-05-05 |\n"
            "| National Day Golden Week | 2026-10-01 | 2026-10-07 |\n"
        )
        make_up = (
            "| Date | Weekday | Works as | Related holiday |\n|---|---|---|---|\n"
            "| 2026-09-20 | Sunday | Normal working day | National Day |\n"
            "| 2026-10-10 | Saturday | Normal working day | National Day |\n"
        )
        evidence = [ev("h::make-up", make_up, 0.8), ev("h::periods", periods, 0.7)]
        result = extractive_answer("When is the National Day holiday in 2026?", evidence)
        assert result is not None
        assert result.units[0].startswith("Holiday National Day Golden Week → First day off: 2026-10-01")

    def test_after_the_row_the_question_names_no_row_it_does_not_name_is_quoted(self) -> None:
        shuttle = (
            "| 站点 | 首班车 | 末班车 |\n|---|---|---|\n"
            "| 东门地铁站 | 07:10 | 21:40 |\n| 科技园站 | 07:30 | 20:50 |\n| 高铁站 | 06:50 | 22:30 |\n"
        )
        result = extractive_answer("高铁站的末班车是几点？", [ev("g::bus", shuttle)])
        assert result is not None
        assert result.units == ["站点 高铁站 → 首班车: 06:50, 末班车: 22:30"]  # not 东门地铁站 (铁站 shared)
        both = extractive_answer("高铁站和东门地铁站的末班车分别是几点？", [ev("g::bus", shuttle)])
        assert both is not None
        assert sorted(u.split(" → ")[0] for u in both.units) == ["站点 东门地铁站", "站点 高铁站"]

    def test_units_of_the_fourth_and_fifth_evidence_are_read(self) -> None:
        evidence = [ev(f"c::{i}", "Nothing relevant here.") for i in range(4)] + [ev("c::9", "Refund rules.")]
        result = extractive_answer("refund", evidence)
        assert result is not None
        assert result.evidence_ids == ["c::9"]

    def test_lower_ranked_evidence_adds_candidates_not_weights(self) -> None:
        # "alpha" fills the 4th and 5th items: it must not turn common, or "beta" would outweigh it
        evidence = [ev("c::0", "Alpha is here."), ev("c::1", "Beta is there."), ev("c::2", "Nothing else.")]
        evidence += [ev(f"c::{i}", "Alpha one. Alpha two. Alpha three. Alpha four.") for i in (3, 4)]
        result = extractive_answer("alpha beta", evidence)
        assert result is not None
        assert result.units[0] == "Alpha is here."

    def test_faq_pairs_lose_their_markers(self) -> None:
        units = answer_units(FAQ_CHUNK)
        assert units == [
            "年假可以按小时请吗？不可以。年假最小单位为半天。",
            "试用期员工可以请婚假吗？可以，婚假不受试用期限制。",
        ]
        assert not any("问：" in u or "答：" in u or "**" in u for u in units)

    def test_headline_question_is_answered_with_the_entitlement(self) -> None:
        evidence = [Evidence(id="leave#1", text=LEAVE_CHUNK, score=0.9, relevance=0.9)]
        result = extractive_answer("How many days of annual leave do I get", evidence)
        assert result is not None
        assert result.answer.startswith("Continuous service → Annual leave per year: Less than 3 years → 12")
        assert "20 working days" in result.answer

    def test_asked_type(self) -> None:
        assert asked_type("How long does a refund take?") == "duration"
        assert asked_type("By when must I use carried-over days?") == "date"
        assert asked_type("How many days of leave do I get?") == "duration"  # a count of days
        assert asked_type("How many laptops can I order?") == "number"
        assert asked_type("Who approves my claim?") == "name"
        assert asked_type("在哪里领取工牌") == "place"
        assert asked_type("Tell me about the leave policy") is None
        assert holds_type("date", "by 31 March") and not holds_type("date", "by the end")

    def test_a_count_of_times_is_not_a_measure(self) -> None:
        assert asked_type("How many times does defineAsyncComponent retry a failed loader?") == "count"
        assert asked_type("异步组件加载失败后，默认会自动重试几次？") == "count"
        for held in ("It retries 3 times.", "最多重试 3 次", "retries: 3", "最多重试三次", "It tries twice."):
            assert holds_type("count", held), held
        for measure in ("默认为 200ms", "a delay of 200 ms", "Default: Infinity", "缩小 14kb", "v3.2"):
            assert not holds_type("count", measure), measure

    def test_a_version_question_needs_a_version(self) -> None:
        assert asked_type("使用 :slotted 伪类最低需要 Vue 的哪个版本？") == "version"
        assert asked_type("Which version of Node do I need?") == "version"
        assert holds_type("version", "需要 Vue 3.3+") and holds_type("version", "since v2")
        assert not holds_type("version", "这在插件中很有用，因为可能需要根据不同的 Vue 版本执行不同的逻辑。")

    def test_sizes_named_by_unit_and_largest_numbers(self) -> None:
        assert asked_type("How many kb smaller does the bundle get when the flag is set to false?") == "size"
        assert asked_type("What is the largest number I can pass to the max prop?") == "number"
        assert not holds_type("number", "the least recently used instance is dropped for the new one.")
        assert holds_type("number", "It takes one day.")

    def test_titles_and_ages_are_not_sizes(self) -> None:
        assert asked_type("《大小姐×执事！》是哪个作家所著的轻小说？") != "size"
        assert asked_type("这本书的作者当时年龄多大？") == "number"  # an age, asked with 多大
        assert asked_type("这个文件有多大？") == "size"

    def test_what_time_asks_for_a_clock_time(self) -> None:
        assert asked_type("It's my first day tomorrow - what time should I show up?") == "time"
        assert asked_type("几点上班？") == "time" and asked_type("When is the deadline?") == "date"
        assert holds_type("time", "Arrive at **09:00** at the reception") and holds_type(
            "time", "早上九点到前台"
        )
        assert not holds_type("time", "Tracking can take up to 24 hours to show the first scan.")

    def test_a_clock_time_between_chinese_characters_is_a_time(self) -> None:
        # Chinese is written without spaces, and CJK characters are word characters to `\b`: the old
        # `\b\d{1,2}:\d{2}\b` missed "每天16:00统一寄出", so "快递每天几点寄出？" was refused
        assert holds_type("time", "前台每天16:00统一寄出快递") and holds_type("time", "开放时间9:30至18:00")
        assert holds_type("time", "Doors open at 9:00am.")
        assert not holds_type("time", "Build 2024:123 failed") and not holds_type("time", "ID 123:456")

    def test_a_default_is_held_by_a_stated_default_not_by_the_word(self) -> None:
        for held in (
            "Default: Infinity.",
            "默认值是：Infinity",
            "默认为 200ms",
            "It defaults to true.",
            "By default, it syncs.",
            "- **默认：** `'condense'`",
            "默认 `'condense'`",
            "The default strategy is condense.",
        ):
            assert holds_type("default", held), held
        assert not holds_type(
            "default", "It switches to fallback content before the new default content renders."
        )
        assert not holds_type("default", "将导致在替换默认内容时立即显示后备内容")
        assert not holds_type("default", "A value of 0 shows the fallback when default content is replaced.")
        assert asked_type("Suspense 的 timeout 默认值是多少毫秒？") == "duration"
        assert asked_type("How many milliseconds does it wait?") == "duration"

    def test_numbers_in_words_hold_a_number_or_duration(self) -> None:
        assert holds_type("number", "使用满三年后可以更换") and holds_type("number", "最多报销两次")
        assert holds_type("duration", "试用期为六个月") and holds_type("duration", "It takes an hour.")
        assert holds_type("duration", "The probation period lasts six months.")
        assert holds_type("number", "You may bring twice as many guests.")
        assert not holds_type("number", "统一管理，一起提交") and not holds_type(
            "number", "There is no limit."
        )
        assert not holds_type("duration", "By default, v-model syncs after each input event.")
        assert not holds_type("duration", "Annual leave can be taken in half days.")

    @pytest.mark.parametrize(
        "unit",
        [
            "Option `--timeout` → Description: Seconds to wait for the health check, Default: `120`",
            "timeout (ms): 5000",
            "The delay, in seconds, before retrying: 5",
            "Number of seconds between polls; defaults to 10",
            "超时时间（秒）：30",
            "单位为毫秒，默认 200",
        ],
    )
    def test_a_unit_of_time_named_apart_from_a_bare_value_is_a_duration(self, unit: str) -> None:
        # reference tables give the unit in the description and the value alone
        assert holds_type("duration", unit)

    @pytest.mark.parametrize(
        "unit",
        ["It takes seconds to set up.", "Wait a few minutes, then go to step 2.", "秒杀活动每人限购 3 件"],
    )
    def test_a_unit_of_time_without_a_value_of_it_is_not(self, unit: str) -> None:
        assert not holds_type("duration", unit)

    def test_how_many_days_prefers_a_duration_to_a_date(self) -> None:
        # Both units share "annual", "leave", "day"; only the second holds a number of days ("1 January"
        # is a date), so it leads: "how many days" asks for a duration, not for any digit.
        text = (
            "Annual leave days are counted from 1 January of the leave year.\n\n"
            "Annual leave is 12 working days a year for every employee."
        )
        evidence = [Evidence(id="e1", text=text, score=0.9, relevance=0.9)]
        result = extractive_answer("How many days of annual leave do I get", evidence)
        assert result is not None
        assert result.answer.startswith("Annual leave is 12 working days")

    def test_hyphenated_words_match_their_joined_form(self) -> None:
        assert {"wi-fi", "wifi", "wi", "fi"} <= set(terms("The Wi-Fi network"))
        assert {"nwh-guest", "nwhguest", "guest"} <= set(terms("NWH-Guest"))
        evidence = [
            Evidence(id="e1", text="Never connect routers to the office network.", score=0.9, relevance=0.9),
            Evidence(id="e2", text="Guest Wi-Fi network: NWH-Guest.", score=0.8, relevance=0.8),
        ]
        result = extractive_answer("What is the guest wifi network", evidence)
        assert result is not None and result.evidence_ids[0] == "e2"

    def test_unit_with_the_asked_type_wins_a_tie(self) -> None:
        evidence = [
            Evidence(
                id="e1",
                text="Refund requests are reviewed by the returns team.\n\n"
                "Refunds are paid within 5 working days.",
                score=0.9,
                relevance=0.9,
            )
        ]
        result = extractive_answer("How long do refunds take", evidence, max_sentences=1)
        assert result is not None and result.answer == "Refunds are paid within 5 working days. [e1]"


class TestUnitChoice:
    def test_a_unit_inherits_the_subject_its_passage_names_once(self) -> None:
        # The answer sentence says 牠们 ("they"); the passage's subject is named in other sentences.
        text = (
            "普通鸣冠雉是一种鸟，分布于南美洲。普通鸣冠雉主要是黑色，有紫色光泽。"
            "普通鸣冠雉以往是包含所有鸣冠雉的亚种。牠们主要以果实及草莓为食。"
        )
        got = extractive_answer("普通鸣冠雉主要以什么为食？", [ev("a", text)], max_sentences=1)
        assert got is not None
        assert got.answer == "牠们主要以果实及草莓为食。 [a]"

    def test_a_unit_sharing_no_query_term_inherits_nothing(self) -> None:
        text = (
            "We ship to **32 countries**.\n\n"
            "Express shipping to any of them costs USD 12.00.\n\n"
            "Parcels refused at customs are returned."
        )
        got = extractive_answer("How much does express shipping cost?", [ev("a", text)], max_sentences=1)
        assert got is not None
        assert got.answer.startswith("Express shipping")

    def test_a_lead_in_is_said_once_for_consecutive_items(self) -> None:
        text = (
            "未显式处理的错误在开发和生产模式下有不同的行为：\n\n"
            "- 在开发模式下，错误会被抛出。\n\n"
            "- 在生产模式下，错误只会被记录到控制台。\n"
        )
        got = extractive_answer("未处理的错误在开发和生产模式下有什么不同的行为？", [ev("a", text)])
        assert got is not None
        assert got.answer == (
            "未显式处理的错误在开发和生产模式下有不同的行为：在开发模式下，错误会被抛出。 [a] "
            "在生产模式下，错误只会被记录到控制台。 [a]"
        )
        # each quoted unit keeps its lead-in (the asked-for type is checked on whole units)
        assert all(unit.startswith("未显式处理的错误") for unit in got.units)

    def test_a_lead_in_stays_when_another_item_came_between(self) -> None:
        first = "Refunds go back: to the card within 5 days.\n\nRefund rules differ by country."
        got = extractive_answer(
            "How do refunds go back to the card or the wallet?",
            [ev("a", first), ev("b", "Refunds go back: to the wallet within 2 days.")],
        )
        assert got is not None
        assert "Refunds go back: to the wallet" in got.answer

    def test_reason_and_definition_types(self) -> None:
        assert asked_type("增城挂绿为什么叫挂绿？") == "reason"
        assert asked_type("Why are USB sticks blocked?") == "reason"
        assert holds_type("reason", "每个果实都环绕有一圈绿线，故名挂绿。")
        assert asked_type("操场的定义是什么？") == "definition"
        assert holds_type("definition", "操场是指用以进行步操、阅兵、集会的场地。")
        assert not holds_type("definition", "有盖操场的规模较小。")


class TestAskedTypesAdded:
    def test_size_default_and_flag_questions_in_both_languages(self) -> None:
        assert asked_type("How big can an attachment be?") == "size"
        assert asked_type("What is the maximum size of an upload?") == "size"
        assert asked_type("附件大小有限制吗？") == "size"
        assert asked_type("上传文件最多多少MB？") == "size"
        assert asked_type("What is the default timeout?") == "default"
        assert asked_type("超时时间默认是多少？") == "default"
        assert asked_type("Which flag turns on verbose output?") == "flag"
        assert asked_type("Which command rebuilds the index?") == "flag"
        assert asked_type("哪个参数可以关闭重排？") == "flag"
        assert asked_type("用什么命令删除文档？") == "flag"
        assert asked_type("Which lifecycle hook runs after mounting?") == "flag"
        assert asked_type("Which function defines an async component?") == "flag"
        assert asked_type("异步组件用哪个函数来定义？") == "flag"
        assert asked_type("自定义指令有哪些钩子？") == "flag"
        assert asked_type("组件卸载之前会调用哪个生命周期钩子？") == "flag"
        assert asked_type("What is the minimum delay of nextTick in milliseconds?") == "duration"
        assert asked_type("What is the minimum order value?") == "number"
        assert holds_type("flag", "Vue 提供了 `defineAsyncComponent` 方法。")
        # 大小写 is letter case, not a size
        assert asked_type("组件的 props 名字应该用什么大小写？") != "size"
        assert asked_type("附件大小有限制吗？") == "size"
        # asking about options in general is not asking for a flag
        assert asked_type("What options do I have for returns?") is None

    def test_price_questions_ask_for_money_not_any_number(self) -> None:
        assert asked_type("How much does express shipping cost?") == "price"
        assert asked_type("What does a parking space cost per month?") == "price"
        assert asked_type("What is the fee for a replacement badge?") == "price"
        assert asked_type("How much do I have to pay for a lost badge?") == "price"
        assert asked_type("彩色打印每页多少钱？") == "price"
        assert asked_type("停车的收费标准是多少？") == "price"
        assert asked_type("How much is the hotel limit per night?") == "number"  # not necessarily money
        assert asked_type("年假有多少天？") != "price"
        assert holds_type("price", "Express costs USD 12.00.")
        assert holds_type("price", "It costs $5 per month.")
        assert holds_type("price", "伙食补助每人每天 100 元。")
        assert holds_type("price", "住宿上限（元/间·晚）: 450")  # the currency in the table header
        assert holds_type("price", "按采购价的 60% 赔偿。")  # a share of a price
        assert holds_type("price", "Parking is free for employees.")
        assert not holds_type("price", "打印机位于 15 层茶水间旁边。")  # a floor is no price
        assert not holds_type("price", "Colour printing needs your badge at the printer.")

    def test_how_long_also_asks_for_a_length(self) -> None:
        assert asked_type("How long must my password be?") == "duration"
        assert holds_type("duration", "Minimum length: 14 characters.")
        assert holds_type("duration", "The trail is 5 km long.")
        assert not holds_type("duration", "密码至少 12 位")  # 多久 asks for time only
        # the unit names the dimension as a noun; the question asks with its adjective
        assert "long" in terms("Minimum length: 14 characters.")
        assert "big" not in terms("The maximum size of an upload")  # made another build's size an answer

    def test_when_joining_a_clause_does_not_ask_for_a_date(self) -> None:
        assert asked_type("When is the deadline for expense claims?") == "date"
        assert asked_type("When's payday?") == "date"
        assert asked_type("By when must I use my carried-over leave?") == "date"
        assert asked_type("What's the reimbursement rate when I drive my own car?") is None
        assert asked_type("What's the hotel limit per night when I travel to Singapore?") == "number"

    def test_further_units_are_in_the_questions_language(self) -> None:
        english = ev("en", "The `max` prop of KeepAlive limits the number of cached instances.")
        chinese = ev("zh", "KeepAlive 的 `max` prop 用来限制可被缓存的最大组件实例数。")
        answer = extractive_answer("What does the `max` prop of KeepAlive limit?", [english, chinese])
        assert answer is not None and answer.evidence_ids == ["en"]  # not the Chinese page's copy too
        # the best unit is kept whatever its language (a question in the other language)
        only = extractive_answer("What does the `max` prop limit?", [chinese])
        assert only is not None and only.evidence_ids == ["zh"]

    def test_a_default_thing_is_no_default_value(self) -> None:
        assert asked_type("插槽的默认内容怎么写？") != "default"
        assert asked_type("How do I provide default slot content?") != "default"
        assert asked_type("插槽的默认值是什么？") == "default"

    def test_one_as_the_article_is_no_number(self) -> None:
        assert not holds_type("number", "`<KeepAlive>` 的行为类似一个 LRU 缓存。")
        assert not holds_type("number", "我们推荐使用一种可以复用 Vite 配置的测试框架。")
        assert not holds_type("number", "下面是几个例子。")  # several
        assert holds_type("number", "每个组件只有一个根节点。")  # said as a count
        assert holds_type("number", "共十一个")
        assert holds_type("number", "笔记本电脑的使用年限为三年。")

    def test_the_default_action_is_no_default_value(self) -> None:
        assert asked_type("如何在模板中使用事件修饰符阻止默认行为？") != "default"
        assert asked_type("How do I prevent the default behavior of a form submit?") != "default"
        assert asked_type("What is the default timeout?") == "default"

    def test_how_many_is_answered_by_any_number_of(self) -> None:
        assert holds_type("number", "Vue 3 components can have multiple root nodes.")
        assert holds_type("number", "附件数量不限。")
        assert not holds_type("number", "Components can have a root node.")

    def test_names_that_only_look_like_type_words(self) -> None:
        # 科罗拉多大学 holds 多大, 版块 holds 版: neither asks for a size or a version
        assert asked_type("马特从科罗拉多大学获得了什么学位？") != "size"
        assert asked_type("华北陆块目前是哪个版块的一部分？") != "version"
        assert asked_type("这个文件有多大？") == "size"
        # answers the type patterns missed (CMRC 2018 tune passages)
        assert holds_type("size", "全镇总面积72平方公里。")
        assert holds_type("version", "此专辑于2003年3月31日推出DSD版本唱片。")
        assert holds_type("time", "结束于民国10年（1921年）5月14日。")  # 什么时间结束: a date

    def test_a_duration_in_a_named_unit_prefers_units_stating_it(self) -> None:
        assert asked_type("会议室最长能订几个小时？") == "duration"
        assert asked_type("他读几年级？") != "duration"
        assert asked_type("几月几号放假？") == "date"

    def test_which_dates_and_which_days_ask_for_dates(self) -> None:
        assert asked_type("Which dates are the National Day holidays in 2026?") == "date"
        assert asked_type("Which days can I work from home?") == "date"
        assert asked_type("What dates is the office closed?") == "date"
        assert asked_type("How many days off do I get?") != "date"  # a number of days, not a date
        assert holds_type("date", "Remote work is possible on Tuesdays and Thursdays.")
        rooms = ev(
            "r",
            "周期性会议的预订最长 3 个月，到期后须重新预订。\n\n"
            "单次预订时长不超过 4 小时，需要全天使用的请联系行政部。",
        )
        answer = extractive_answer("会议室最长能订几个小时？", [rooms], max_sentences=1)
        assert answer is not None and "4 小时" in answer.answer
        assert asked_time_unit("How long is probation?") is None  # names no unit

    def test_units_that_hold_them(self) -> None:
        assert holds_type("size", "Attachments may be up to 10 MB each.")
        assert holds_type("size", "单个附件不超过 20MB。")
        assert holds_type("size", "Room Harbor seats 12 people.")
        assert not holds_type("size", "Attachments must be PDF files.")
        assert holds_type("size", "Each desk has two 27-inch monitors.")  # hyphenated number and unit
        assert holds_type("size", "Developers may choose a 16 -inch model.")
        assert holds_type("default", "Defaults to 30 seconds.")
        assert holds_type("default", "默认值是 30 秒。")
        assert not holds_type("default", "The timeout is configurable.")
        assert holds_type("flag", "Pass `--verbose` to see more.")
        assert holds_type("flag", "Use --no-rerank to skip it.")
        assert not holds_type("flag", "Verbose output helps when debugging.")


class TestUnitsThatCarryTheAnswer:
    def test_sentence_is_quoted_with_the_next_one_holding_the_asked_type(self) -> None:
        chunk = (
            "# Logs\nAudit logs are kept on the central log server. They are deleted after 90 days. "
            "Access needs approval."
        )
        result = extractive_answer("How long are audit logs kept?", [ev("ops.md::logs", chunk)])
        assert result is not None
        assert result.answer.startswith(
            "Audit logs are kept on the central log server. They are deleted after 90 days. [ops.md::logs]"
        )

    def test_no_pairing_when_the_first_sentence_holds_the_type(self) -> None:
        chunk = "Audit logs are kept for 90 days on the server. They are deleted after 2 years elsewhere."
        result = extractive_answer("How long are audit logs kept?", [ev("ops.md::logs", chunk)])
        assert result is not None
        assert result.answer.split(" [")[0] == "Audit logs are kept for 90 days on the server."

    def test_flag_question_quotes_the_flag_with_its_default(self) -> None:
        chunk = (
            "## Options\n\n"
            "- `--rerank-top-k`: how many fused hits the reranker reads.\n"
            "  Default: `10`.\n"
            "- Reranking can be turned off.\n"
            "  Use `--no-rerank` for that.\n"
        )
        result = extractive_answer("Which flag turns reranking off?", [ev("cli.md::opts", chunk)])
        assert result is not None
        assert result.answer.startswith(
            "Reranking can be turned off. Use `--no-rerank` for that. [cli.md::opts]"
        )

    def test_a_name_asked_for_is_the_identifier_heading_the_unit_sits_under(self) -> None:
        chunk = (
            "## onBeforeUnmount() {#onbeforeunmount}\n\n"
            "Registers a hook to be called right before a component instance is to be unmounted.\n"
        )
        result = extractive_answer(
            "Which lifecycle hook is called right before a component is unmounted?", [ev("api.md::h", chunk)]
        )
        assert result is not None
        assert result.answer.startswith("`onBeforeUnmount()`: Registers a hook to be called right before")
        zh = "## onBeforeUnmount() {#onbeforeunmount}\n\n注册一个钩子，在组件实例被卸载之前调用。\n"
        answer = extractive_answer("组件卸载之前会调用哪个生命周期钩子？", [ev("zh.md::h", zh)])
        assert answer is not None and answer.answer.startswith("`onBeforeUnmount()`: 注册一个钩子")
        # a unit above the chunk's first heading line takes the chunk's heading, without its anchor
        above = Evidence(
            id="api.md::m",
            text="Registers a hook to be called after the component has been mounted.",
            score=0.8,
            relevance=0.8,
            heading_path=["Lifecycle Hooks", "onMounted() {#onmounted}"],
        )
        mounted = extractive_answer("Which hook is called after the component has been mounted?", [above])
        assert mounted is not None and mounted.answer.startswith("`onMounted()`: Registers a hook")

    def test_heading_names(self) -> None:
        assert heading_names("onBeforeUnmount() {#onbeforeunmount}") == ["onBeforeUnmount()"]
        assert heading_names("app.mount()") == ["app.mount()"]
        assert heading_names("beforeCreate") == ["beforeCreate"]
        assert heading_names("<KeepAlive>") == ["<KeepAlive>"]
        assert heading_names("`<Teleport>`") == ["<Teleport>"]
        assert heading_names('useTemplateRef() <sup class="vt-badge" data-text="3.5+" />') == [
            "useTemplateRef()"
        ]
        assert heading_names("Installation") == []  # a plain word names nothing
        assert heading_names("2. Your first day") == []

    def test_quoted_units_are_readable_and_the_evidence_is_unchanged(self) -> None:
        # a source with markup; the chunk is source[120:...] and must stay exactly that
        source = "x" * 120 + (
            "## Retention\n\n"
            '- Logs are kept for <a href="/policy#logs">the retention period</a>.\n'
            "  Defaults to **90 days** (about 3 months), see [policy](https://p.example).\n"
            "<!--@include: ./footer.md-->\n"
        )
        body = source[120:]
        item = Evidence(
            id="ops.md::r", text=body, score=0.8, relevance=0.8, char_start=120, char_end=len(source)
        )
        before = item.model_dump()
        result = extractive_answer("How long are logs kept by default?", [item])
        assert result is not None
        assert result.answer == (
            "Logs are kept for the retention period. Defaults to 90 days (about 3 months), see policy. "
            "[ops.md::r]"
        )
        assert item.model_dump() == before  # text, char_start, char_end untouched
        assert source[item.char_start : item.char_end] == item.text
        # every word of the quote stands, in order, in the cited span of the source
        position = item.char_start or 0
        for word in result.answer.split(" [")[0].replace(",", " ").replace(".", " ").split():
            position = source.index(word.strip("()"), position, item.char_end)

    def test_headline_table_still_answers(self) -> None:
        result = extractive_answer(
            "How many days of annual leave do I get if I've been with the company for 4 years?",
            [ev("leave-policy.md::t", LEAVE_CHUNK)],
        )
        assert result is not None
        assert "3 to 9 years → 15 working days" in result.answer


class TestMeasureWords:
    """The measure rule's lexicon (`decision.rules._measure`)."""

    def test_a_chinese_count_needs_a_number_of_what_it_counts(self) -> None:
        assert asked_measure("Teleport 最多可以嵌套几层？") == "层"
        assert asked_measure("屈臣氏在香港设有多少家分店？") == "家"
        assert asked_measure("雇员有哪几种？") is None  # which kinds, not how many
        assert asked_measure("婚假有几天？") is None  # a duration: ASKED_TYPES
        assert asked_measure("他一共有几个？") is None  # 个 alone counts anything
        # no measure word follows 个: 多少个座位 counts 座位 (a 座位数 column states it), not 座
        assert asked_measure("青松厅有多少个座位？") == "座位"
        assert holds_measure("青松厅有多少个座位？", "会议室 青松厅 → 座位数: 8, 楼层: 3")
        assert not holds_measure("青松厅有多少个座位？", "会议室 青松厅 → 楼层: 3")
        assert asked_measure("公司有多少个人？") == "人"
        assert not holds_measure("Teleport 最多可以嵌套几层？", "在 Vue 3.5 及更高版本中，可以推迟解析。")
        assert holds_measure("大楼有几层？", "大楼共十二层。")
        assert holds_type("number", "个人快递请寄到大厦一楼的快递柜。")  # 一楼: the first floor
        assert holds_measure("快递柜在几楼？", "个人快递请寄到大厦一楼的快递柜。")
        assert holds_measure("大楼有几层？", "整栋建筑有 12 楼。")  # a word for the same thing
        assert holds_measure("屈臣氏在香港设有多少家分店？", "在香港设有28间分店。")
        # the counted thing may stand for the measure word, after the number or before it
        assert holds_measure("上颌前端具有多少颗犬齿？", "上颌前端具2至4犬齿，内列齿绒毛状。")
        assert holds_measure("地震规模是几级？", "此次地震的规模为7.2。")
        assert holds_measure("镇内有多少人口？", "全镇人口8.57万。")
        assert holds_measure("How many floors?", "any text")  # no Chinese measure: nothing to hold
        assert asked_measure("观澜厅有几块白板？") == "块"
        assert asked_measure("一杯咖啡几块钱？") is None  # a price
        assert not holds_measure("观澜厅有几块白板？", "设备: 75 英寸电视、视频会议系统、白板")

    def test_ge_counts_the_noun_after_it(self) -> None:
        question = "Vue 的虚拟 DOM 最多能渲染多少个节点？"
        assert asked_measure(question) == "节点"
        assert not holds_measure(question, "一个运行时渲染器将会遍历整个虚拟 DOM 树。")  # 一个 is "a"
        assert holds_measure("公司有几个会议室？", "公司共有 6 个会议室。")
        assert not holds_measure("公司有几个会议室？", "会议室一览：灯塔厅、观澜厅。")
        assert asked_measure("他有几个？") is None
