"""The offline agent over a small knowledge base no protocol, weight or rule was fitted on.

Five pages (three English, two Chinese) of an invented company and a product manual, written to
check the answer-or-refuse decision on documents it has not seen. Each case is one pattern found that
way: a value stated with a hyphen ("27-inch"), a floor as 一楼, a price asked where only a floor number
is stated, a count asked in a measure word the pages do not count in, a brand no page names, a
default in brackets, a maximum asked where only a default is stated, a chatty opener, and a closing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from haygraph.adapters.agent import build_agent
from haygraph.control.api import Agent

pytestmark = pytest.mark.integration

PAGES = Path(__file__).parent / "unseen_kb"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Agent:
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    store = tmp_path_factory.mktemp("unseen") / "store"
    config = RetrievalConfig().with_overrides(embedder={"cache_dir": str(haygraph_cache_dir)})
    KnowledgeBase(config, store).index([PAGES])
    return build_agent(store)


@pytest.mark.parametrize(
    ("question", "stated"),
    [
        ("After how many years can I get a new laptop?", "four years"),
        ("How big are the monitors on our desks?", "27-inch"),  # a hyphenated size
        ("When are the core hours on Friday?", "10:00 to 13:00 on Fridays"),
        ("出差的餐补一天多少钱？要发票吗？", "80 元"),
        ("快递柜在几楼？", "一楼"),  # a floor in a numeral and 楼
        ("大会议室最多能坐多少人？", "20 人"),
        ("What's the default comfort temperature?", "21 °C"),  # "(default 21 °C)"
        ("um, how long does the battery keep my schedules during a power cut?", "48 hours"),
    ],
)
def test_answered_with_the_stated_value(agent: Agent, question: str, stated: str) -> None:
    result = agent.ask(question, thread_id=question)
    assert result["status"] == "completed", result["decision"]
    assert stated in result["answer"]
    assert result["evidence_ids"] and all(f"[{i}]" in result["answer"] for i in result["evidence_ids"])


@pytest.mark.parametrize(
    ("question", "rule"),
    [
        # 15 层 beside it is a floor, not a price
        ("彩色打印每页多少钱？", "no retrieved sentence holds the asked-for price"),
        ("笔记本电脑是什么品牌？", None),  # no page names a brand
        ("What is the hotel limit per night in Munich?", None),
        # only a default is stated, no bound
        (
            "What is the maximum temperature I can set?",
            "no retrieved sentence states a limit on the asked-for number",
        ),
    ],
)
def test_refused(agent: Agent, question: str, rule: str | None) -> None:
    result = agent.ask(question, thread_id=question)
    assert result["status"] == "insufficient_evidence", result["answer"]
    if rule is not None:
        assert result["decision"]["rule"] == rule


@pytest.mark.parametrize("closing", ["thanks, that's all", "好的，谢谢", "ＯＫ，ｔｈａｎｋｓ"])
def test_closings_are_chit_chat(agent: Agent, closing: str) -> None:
    result = agent.ask(closing, thread_id=closing)
    assert result["status"] == "completed" and result["route"] != "retrieve"
