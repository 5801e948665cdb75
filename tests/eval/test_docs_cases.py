"""Integrity checks for the real-documentation and cross-language question sets.

The docs cases (eval/cases/docs_cases.jsonl) are asked over the Vue documentation dataset (shared
datasets folder, ``vue-docs/pages/{en,zh}``); the cross-language cases
(eval/cases/handbook_cross_cases.jsonl) are the handbook's tune cases in the other language. As for
the handbook, every label must point at text that really exists (and a near miss's key phrase at
text that exists nowhere), so a failing case is a product failure and never a broken label. The
checks that need the documentation pages are skipped when the dataset is not in the shared folder.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from haygraph.eval.agent_cases import (
    CASES_FILE,
    CROSS_CASES_FILE,
    DOCS_CASES_FILE,
    DOCS_DATASET,
    docs_protocol,
    handbook_cross_protocol,
)
from haygraph.eval.errors import EvalError
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval import sample_handbook_path

CJK = re.compile(r"[\u4e00-\u9fff]")
LABELS = {"id", "question", "lang", "kind", "expected_sources", "answer_contains", "split"}
DOCS_KEYS = LABELS | {"absent_phrase"}
CROSS_KEYS = LABELS | {"direction"}
DOCS_DIR = datasets_root() / DOCS_DATASET
needs_docs = pytest.mark.skipif(
    not (DOCS_DIR / "pages").is_dir(), reason=f"documentation dataset not in {DOCS_DIR}"
)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


DOCS_CASES = _rows(DOCS_CASES_FILE)
CROSS_CASES = _rows(CROSS_CASES_FILE)
HANDBOOK_CASES = {row["id"]: row for row in _rows(CASES_FILE)}


def _pages() -> dict[str, str]:
    root = DOCS_DIR / "pages"
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))}


class TestDocsCases:
    def test_every_line_has_the_documented_schema(self) -> None:
        for case in DOCS_CASES:
            assert set(case) == DOCS_KEYS, case.get("id")
            assert case["lang"] in ("en", "zh") and case["split"] in ("tune", "test"), case["id"]
            assert case["kind"] in ("answerable", "unanswerable"), case["id"]
            assert all(isinstance(s, str) and s for s in case["expected_sources"] + case["answer_contains"])

    def test_ids_are_unique(self) -> None:
        ids = [case["id"] for case in DOCS_CASES]
        assert len(ids) == len(set(ids))

    def test_at_least_48_questions_about_60_percent_answerable(self) -> None:
        answerable = sum(case["kind"] == "answerable" for case in DOCS_CASES)
        assert len(DOCS_CASES) >= 48
        assert 0.55 <= answerable / len(DOCS_CASES) <= 0.65, answerable

    def test_splits_are_balanced_by_language_and_kind(self) -> None:
        counts = Counter((c["lang"], c["kind"], c["split"]) for c in DOCS_CASES)
        for lang in ("en", "zh"):
            for kind in ("answerable", "unanswerable"):
                tune, test = counts[lang, kind, "tune"], counts[lang, kind, "test"]
                assert tune >= 5 and abs(tune - test) <= 1, (lang, kind, tune, test)

    def test_question_script_and_gold_pages_match_the_language(self) -> None:
        for case in DOCS_CASES:
            assert bool(CJK.search(case["question"])) == (case["lang"] == "zh"), case["id"]
            assert all(s.startswith(case["lang"] + "/") for s in case["expected_sources"]), case["id"]

    def test_answerable_cases_carry_gold_and_answers_and_near_misses_none(self) -> None:
        for case in DOCS_CASES:
            answerable = case["kind"] == "answerable"
            assert bool(case["expected_sources"]) == answerable, case["id"]
            assert bool(case["answer_contains"]) == answerable, case["id"]
            assert isinstance(case["absent_phrase"], str), case["id"]
            assert not (answerable and case["absent_phrase"]), case["id"]

    @needs_docs
    def test_gold_pages_exist_and_hold_every_answer_string(self) -> None:
        pages = _pages()
        for case in DOCS_CASES:
            for source in case["expected_sources"]:
                assert source in pages, (case["id"], source)
                for needle in case["answer_contains"]:
                    assert needle in pages[source], (case["id"], source, needle)

    @needs_docs
    def test_near_miss_key_phrases_occur_in_no_page(self) -> None:
        text = "\n".join(_pages().values()).lower()
        phrases = [c["absent_phrase"] for c in DOCS_CASES if c["absent_phrase"]]
        assert len(phrases) >= 8
        for phrase in phrases:
            assert phrase.lower() not in text, phrase

    @needs_docs
    def test_dataset_has_readme_licence_and_both_languages(self) -> None:
        pages = _pages()
        assert (DOCS_DIR / "README.md").is_file() and (DOCS_DIR / "LICENSE").is_file()
        en = {p.removeprefix("en/") for p in pages if p.startswith("en/")}
        zh = {p.removeprefix("zh/") for p in pages if p.startswith("zh/")}
        assert len(en) >= 20 and en == zh


class TestDocsProtocol:
    def test_parts_select_their_cases_over_the_pages_folder(self, tmp_path: Path) -> None:
        (tmp_path / "pages").mkdir()
        tune = docs_protocol(tmp_path, "tune")
        every = docs_protocol(tmp_path, "all")
        assert tune.name == "docs" and tune.paths == [tmp_path / "pages"]
        assert len(every.cases) == len(DOCS_CASES)
        assert {c.id for c in tune.cases} == {r["id"] for r in DOCS_CASES if r["split"] == "tune"}
        assert all(c.all_answers and c.lang in ("en", "zh") for c in every.cases)
        assert {c.id for c in every.cases if c.absent} == {
            r["id"] for r in DOCS_CASES if r["kind"] == "unanswerable"
        }

    def test_missing_pages_folder_is_an_eval_error(self, tmp_path: Path) -> None:
        with pytest.raises(EvalError, match="pages"):
            docs_protocol(tmp_path, "test")


class TestCrossCases:
    def test_every_line_has_the_documented_schema(self) -> None:
        for case in CROSS_CASES:
            assert set(case) == CROSS_KEYS, case.get("id")

    def test_one_translation_of_every_handbook_tune_case(self) -> None:
        tune = {
            i
            for i, r in HANDBOOK_CASES.items()
            if r["split"] == "tune" and r["kind"] in ("answerable", "unanswerable")
        }
        assert sorted(c["id"] for c in CROSS_CASES) == sorted(f"x-{i}" for i in tune)

    def test_translation_keeps_gold_and_flips_the_language(self) -> None:
        for case in CROSS_CASES:
            orig = HANDBOOK_CASES[case["id"].removeprefix("x-")]
            assert case["lang"] != orig["lang"] and case["lang"] in ("en", "zh"), case["id"]
            assert bool(CJK.search(case["question"])) == (case["lang"] == "zh"), case["id"]
            assert case["direction"] == f"{case['lang']}->{orig['lang']}", case["id"]
            assert case["question"] != orig["question"]
            for key in ("kind", "expected_sources", "answer_contains", "split"):
                assert case[key] == orig[key], (case["id"], key)

    def test_both_directions_have_answerable_and_unanswerable_cases(self) -> None:
        counts = Counter((c["direction"], c["kind"]) for c in CROSS_CASES)
        for direction in ("en->zh", "zh->en"):
            assert counts[direction, "answerable"] >= 8 and counts[direction, "unanswerable"] >= 4

    def test_protocol_groups_figures_by_direction(self) -> None:
        protocol = handbook_cross_protocol(sample_handbook_path())
        assert protocol.name == "handbook-cross" and protocol.paths == [sample_handbook_path()]
        assert Counter(c.lang for c in protocol.cases) == Counter(c["direction"] for c in CROSS_CASES)


class TestDocsCross:
    """The documentation questions asked over the other language's pages (a tune set of the decision)."""

    @staticmethod
    def dataset(tmp_path: Path) -> tuple[Path, Path]:
        for lang, text in (("en", "The default delay is 200ms."), ("zh", "默认延迟为 200ms。")):
            page = tmp_path / "pages" / lang / "guide" / "async.md"
            page.parent.mkdir(parents=True)
            page.write_text(text, encoding="utf-8")
        rows = [
            ("a1", "en", "answerable", ["en/guide/async.md"], ["200ms"]),
            ("a2", "en", "answerable", ["en/guide/async.md"], ["default delay"]),  # not in the zh page
            ("n1", "en", "unanswerable", ["en/guide/async.md"], []),
            ("a3", "zh", "answerable", ["zh/guide/async.md"], ["200ms"]),
        ]
        cases = tmp_path / "cases.jsonl"
        cases.write_text(
            "\n".join(
                json.dumps(
                    {
                        "id": i,
                        "question": "q",
                        "lang": lang,
                        "kind": kind,
                        "expected_sources": src,
                        "answer_contains": ans,
                        "split": "tune",
                    }
                )
                for i, lang, kind, src, ans in rows
            ),
            encoding="utf-8",
        )
        return tmp_path, cases

    def test_each_direction_reads_the_other_languages_pages_alone(self, tmp_path: Path) -> None:
        from haygraph.eval.agent_cases import docs_cross_protocol

        dataset, cases = self.dataset(tmp_path)
        en = docs_cross_protocol(dataset, "en", "tune", cases)
        assert en.name == "docs-cross-en" and en.paths == [dataset / "pages" / "zh"]
        # a2's answer string is not in the Chinese page: dropped; the near miss stays
        assert [(c.id, c.lang, c.absent, c.gold_sources) for c in en.cases] == [
            ("x-a1", "en->zh", False, ("guide/async.md",)),
            ("x-n1", "en->zh", True, ("guide/async.md",)),
        ]
        zh = docs_cross_protocol(dataset, "zh", "tune", cases)
        assert zh.paths == [dataset / "pages" / "en"] and [c.id for c in zh.cases] == ["x-a3"]

    def test_unknown_language_and_missing_pages_are_errors(self, tmp_path: Path) -> None:
        from haygraph.eval.agent_cases import docs_cross_protocol

        with pytest.raises(EvalError, match="unknown question language"):
            docs_cross_protocol(tmp_path, "fr")
        with pytest.raises(EvalError, match="not found"):
            docs_cross_protocol(tmp_path, "en")
