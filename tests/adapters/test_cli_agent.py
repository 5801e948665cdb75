from pathlib import Path

import pytest

import haygraph.retrieval as retrieval_package
from haygraph.adapters.cli.agent import default_demo_store


def test_each_checkout_gets_its_own_demo_store(tmp_path, monkeypatch):
    """Two copies of the sample handbook (two checkouts) must not share a demo store: the same source ids
    from a second folder are refused, which made `make demo` fail in a second clone."""
    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(tmp_path / "cache"))
    stores = []
    for copy in ("a", "b"):
        monkeypatch.setattr(
            retrieval_package, "sample_handbook_path", lambda c=copy: tmp_path / c / "handbook"
        )
        stores.append(default_demo_store())
    assert stores[0] != stores[1]
    assert all(s.parent == Path(tmp_path / "cache" / "demo-store") for s in stores)
    monkeypatch.setattr(retrieval_package, "sample_handbook_path", lambda: tmp_path / "a" / "handbook")
    assert default_demo_store() == stores[0]  # stable for one checkout: the demo store is reused


class TestExplainDecision:
    def test_refusal_names_the_missing_word_and_the_best_passage(self):
        from haygraph.adapters.cli.agent import explain_decision

        result = {
            "decision": {
                "answerable": False,
                "probability": 0.21,
                "threshold": 0.58,
                "signals": {"meaning_unit": 0.9, "missing_words": 0.33},
                "rule": None,
            },
            "evidence": [
                {"id": "c1", "source": "加班.md", "text": "周末加班的午餐补贴为每天50元。", "score": 0.9},
            ],
        }
        text = explain_decision("周末晚餐补贴是多少", result)
        assert text.splitlines()[0] == "decision: refused (p=0.21 < threshold 0.58)"
        assert "no retrieved passage mentions: '晚餐'" in text
        assert "[c1] 加班.md: 周末加班的午餐补贴为每天50元。" in text
        assert "meaning_unit 0.90, missing_words 0.33" in text

    def test_rule_and_no_decision(self):
        from haygraph.adapters.cli.agent import explain_decision

        assert explain_decision("hi", {"decision": None}).startswith("decision: none was made")
        rule = {"answerable": False, "probability": 0.0, "threshold": 0.5, "rule": "no evidence"}
        assert explain_decision("x", {"decision": rule}) == "decision: refused by rule: no evidence"


@pytest.mark.integration
def test_every_demo_turn_gets_its_labelled_outcome(handbook_store, tmp_path):
    """`haygraph demo`'s scripted conversation: each question ends as its label says (status, route, path)."""
    from haygraph.adapters.agent import build_agent
    from haygraph.adapters.cli.agent import DEMO_TURNS, demo_outcome_matches

    agent = build_agent(handbook_store, example_tools=True, orders_db=tmp_path / "orders.sqlite")
    outcomes = {}
    for turn in DEMO_TURNS:
        result = agent.ask(turn.question, thread_id="demo")
        outcomes[turn.label] = (result["status"], result["route"], result["path"])
        assert demo_outcome_matches(turn, result), (turn, outcomes[turn.label], result.get("answer"))
    assert "1 hour" in agent.ask(DEMO_TURNS[3].question, thread_id="again")["answer"]
    assert {turn.route for turn in DEMO_TURNS} == {"answer", "retrieve", "clarify", "tool"}
