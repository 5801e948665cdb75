"""Offline extractive answers: verbatim evidence sentences, each with its id."""

from __future__ import annotations

from haygraph.control.evidence import Evidence
from haygraph.control.planning.extractive import (
    extractive_answer,
    insufficient_message,
    sentence_score,
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
        # 年 假 几 天 (有 is a function character) + bigrams 年假 假有 有几 几天
        assert terms("年假有几天") == {
            "年": 1.0, "假": 1.0, "几": 1.0, "天": 1.0, "年假": 2.0, "假有": 2.0, "有几": 2.0, "几天": 2.0,
        }  # fmt: skip

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
        assert answer_units(text) == [
            "- Arrive at **09:00** at the reception on **floor 12**, or at the reception of your local "
            "office.",
            "- Bring a photo ID.",
        ]

    def test_numbered_item_is_not_split_after_its_number(self) -> None:
        from haygraph.control.planning.extractive import answer_units

        assert answer_units("1. Log in to PeopleHub. Then choose Leave.") == [
            "1. Log in to PeopleHub.",
            "Then choose Leave.",
        ]

    def test_chinese_lines_join_without_space_and_labels_are_skipped(self) -> None:
        from haygraph.control.planning.extractive import answer_units

        text = "**婚假**\n员工依法登记结婚的，可享受婚假\n13 天。须在一年内休完。\n|---|---|\n"
        assert answer_units(text) == ["员工依法登记结婚的，可享受婚假 13 天。", "须在一年内休完。"]
