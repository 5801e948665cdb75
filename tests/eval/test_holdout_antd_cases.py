"""Integrity checks for the Ant Design hold-out (eval/cases/holdout_antd_cases.jsonl).

The pages are in the repository (eval/datasets/antd-docs/pages/{en,zh}), so every check runs: each
label must point at text that really is in its gold page, and each near miss's key strings at text
that is in no page, so that a failing case is a product failure and never a broken label. Nothing
here loads a model or asks the agent.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from haygraph.eval.agent_cases import (
    HOLDOUT_ANTD_CASES_FILE,
    HOLDOUT_ANTD_DATASET,
    holdout_antd_protocol,
)
from haygraph.eval.errors import EvalError

CJK = re.compile(r"[\u4e00-\u9fff]")
KEYS = {
    "id", "question", "lang", "direction", "kind", "expected_sources", "answer_contains", "table_cell",
    "split", "absent_check",
}  # fmt: skip
PAGES_DIR = HOLDOUT_ANTD_DATASET / "pages"
CASES = [
    json.loads(line)
    for line in HOLDOUT_ANTD_CASES_FILE.read_text(encoding="utf-8").splitlines()
    if line.strip()
]
ANSWERABLE = [c for c in CASES if c["kind"] == "answerable"]
NEAR_MISSES = [c for c in CASES if c["kind"] == "unanswerable"]


def _pages() -> dict[str, str]:
    return {
        p.relative_to(PAGES_DIR).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(PAGES_DIR.rglob("*.md"))
    }


def _gold_lang(case: dict[str, Any]) -> str:
    """The language of the pages holding the answer: the question's, or the far end of its direction."""
    return str(case["direction"]).split("->")[-1]


class TestCases:
    def test_every_line_has_the_documented_schema(self) -> None:
        for case in CASES:
            assert set(case) == KEYS, case.get("id")
            assert case["lang"] in ("en", "zh") and case["split"] == "test", case["id"]
            assert case["direction"] in ("en", "zh", "en->zh", "zh->en"), case["id"]
            assert case["direction"].split("->")[0] == case["lang"], case["id"]
            assert case["kind"] in ("answerable", "unanswerable"), case["id"]
            assert isinstance(case["table_cell"], bool), case["id"]
            strings = case["expected_sources"] + case["answer_contains"] + case["absent_check"]
            assert all(isinstance(s, str) and s for s in strings), case["id"]

    def test_ids_and_questions_are_unique(self) -> None:
        assert len({c["id"] for c in CASES}) == len(CASES)
        assert len({c["question"] for c in CASES}) == len(CASES)

    def test_question_script_matches_its_language(self) -> None:
        for case in CASES:
            assert bool(CJK.search(case["question"])) == (case["lang"] == "zh"), case["id"]

    def test_answerable_cases_carry_gold_in_the_gold_language_and_near_misses_none(self) -> None:
        for case in ANSWERABLE:
            assert case["expected_sources"] and 1 <= len(case["answer_contains"]) <= 2, case["id"]
            assert all(s.startswith(_gold_lang(case) + "/") for s in case["expected_sources"]), case["id"]
            assert not case["absent_check"], case["id"]
        for case in NEAR_MISSES:
            assert not case["expected_sources"] and not case["answer_contains"], case["id"]
            assert case["absent_check"] and not case["table_cell"], case["id"]
            assert "->" not in case["direction"], case["id"]

    def test_counts_meet_the_issue_47_minimums(self) -> None:
        directions = Counter(c["direction"] for c in ANSWERABLE)
        assert len(ANSWERABLE) >= 40 and len(NEAR_MISSES) >= 12
        assert directions["en"] >= 15 and directions["zh"] >= 15, directions
        assert directions["en->zh"] >= 5 and directions["zh->en"] >= 5, directions
        assert sum(c["table_cell"] for c in ANSWERABLE) >= 5
        assert Counter(c["lang"] for c in NEAR_MISSES) == Counter({"en": 7, "zh": 8})


class TestAgainstThePages:
    def test_dataset_has_readme_licence_and_the_same_pages_in_both_languages(self) -> None:
        pages = _pages()
        assert (HOLDOUT_ANTD_DATASET / "README.md").is_file()
        assert "MIT" in (HOLDOUT_ANTD_DATASET / "LICENSE").read_text(encoding="utf-8")
        en = {p.removeprefix("en/") for p in pages if p.startswith("en/")}
        zh = {p.removeprefix("zh/") for p in pages if p.startswith("zh/")}
        assert 20 <= len(en) <= 40 and en == zh and len(pages) == len(en) + len(zh)
        assert sum(len(t.encode("utf-8")) for t in pages.values()) < 1_500_000

    def test_gold_pages_exist_and_hold_every_answer_string(self) -> None:
        pages = _pages()
        for case in ANSWERABLE:
            for source in case["expected_sources"]:
                assert source in pages, (case["id"], source)
                for needle in case["answer_contains"]:
                    assert needle in pages[source], (case["id"], source, needle)

    def test_table_cell_answers_lie_in_a_table_row_of_the_gold_page(self) -> None:
        pages = _pages()
        for case in ANSWERABLE:
            rows = [
                line
                for source in case["expected_sources"]
                for line in pages[source].splitlines()
                if line.lstrip().startswith("|")
            ]
            in_row = all(any(n in row for row in rows) for n in case["answer_contains"])
            assert in_row or not case["table_cell"], case["id"]

    def test_near_miss_key_strings_occur_in_no_page(self) -> None:
        text = "\n".join(_pages().values()).lower()
        for case in NEAR_MISSES:
            for needle in case["absent_check"]:
                assert needle.lower() not in text, (case["id"], needle)


class TestProtocol:
    def test_same_language_cases_over_both_languages_pages(self) -> None:
        protocol = holdout_antd_protocol()
        assert protocol.name == "holdout-antd" and protocol.paths == [PAGES_DIR]
        same = [c for c in CASES if "->" not in c["direction"]]
        assert [c.id for c in protocol.cases] == [c["id"] for c in same]
        assert {c.lang for c in protocol.cases} == {"en", "zh"}
        assert {c.id for c in protocol.cases if c.absent} == {c["id"] for c in NEAR_MISSES}
        assert all(c.all_answers for c in protocol.cases)

    @pytest.mark.parametrize("setting", ["en->zh", "zh->en"])
    def test_cross_language_cases_over_the_gold_language_alone(self, setting: str) -> None:
        protocol = holdout_antd_protocol("test", setting)
        gold = setting.split("->")[1]
        assert protocol.name == f"holdout-antd-{setting}" and protocol.paths == [PAGES_DIR / gold]
        assert [c.id for c in protocol.cases] == [c["id"] for c in CASES if c["direction"] == setting]
        for case in protocol.cases:
            assert case.lang == setting and not case.absent
            assert all((PAGES_DIR / gold / s).is_file() for s in case.gold_sources), case.id

    def test_no_tune_part_and_typed_errors(self, tmp_path: Path) -> None:
        assert holdout_antd_protocol("tune").cases == []
        with pytest.raises(EvalError, match="setting"):
            holdout_antd_protocol("test", "en")
        with pytest.raises(EvalError, match="pages"):
            holdout_antd_protocol("test", "same", tmp_path)
