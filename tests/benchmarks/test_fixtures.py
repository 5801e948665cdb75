"""Tests for benchmarks.fixtures: one home for the labelled cases, the handbook store, the example agent."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import fixtures
from benchmarks.fixtures import CASES, HANDBOOK, example_agent, example_tools, load_cases
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST
from haygraph.adapters.haystack_retriever import HaystackRetriever

REPO = Path(__file__).resolve().parents[2]


class TestCases:
    def test_cases_are_the_packaged_labelled_set(self):
        assert CASES.resolve() == (REPO / "eval" / "cases" / "handbook_cases.jsonl").resolve()
        assert HANDBOOK.is_dir() and (HANDBOOK / "leave-policy.md").is_file()

    def test_load_all_and_by_kind(self):
        cases = load_cases()
        assert len(cases) == 82 and len({c["id"] for c in cases}) == 82
        labelled = load_cases(kinds=("answerable", "unanswerable"))
        assert len(labelled) == 62 and {c["kind"] for c in labelled} == {"answerable", "unanswerable"}
        assert [c["id"] for c in labelled] == [c["id"] for c in cases if c in labelled]  # file order kept


@pytest.mark.integration
class TestHandbookStore:
    def test_an_existing_store_is_opened_not_reindexed(self, handbook_store_copy: Path):
        current = (handbook_store_copy / "CURRENT").read_text()
        kb = fixtures.handbook_store(handbook_store_copy)  # not the conftest fixture of that name
        assert (handbook_store_copy / "CURRENT").read_text() == current  # nothing was saved again
        assert kb.search("How many days of annual leave do I get?").hits[0].source == "leave-policy.md"

    def test_example_tools_and_agent(self, handbook_store_copy: Path, tmp_path: Path):
        retriever = HaystackRetriever(fixtures.handbook_store(handbook_store_copy))
        registry, executor = example_tools(retriever, tmp_path)
        assert (tmp_path / "orders.sqlite").is_file() and "query_order" in registry.names()
        assert set(executor.allow_list) == set(DEFAULT_ALLOW_LIST)
        result = example_agent(handbook_store_copy).ask("帮我查一下订单 202405120001 的物流", thread_id="t")
        assert (result["status"], result["route"]) == ("completed", "tool")
        assert "SF Express" in result["answer"]
