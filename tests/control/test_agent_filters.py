"""`Agent.ask(..., filters=...)`: a turn's filters reach every retrieval and never widen the agent's own."""

from __future__ import annotations

from haygraph.control.api import Agent
from tests.control.graph_helpers import handbook_retriever

TENANT = {"field": "meta.tenant", "operator": "==", "value": "acme"}
SOURCE = {"field": "meta.source_id", "operator": "==", "value": "hr.md"}
QUESTION = "How many days of annual leave do I get?"


class TestAskFilters:
    def test_filters_reach_the_retriever_for_that_turn_only(self):
        retriever = handbook_retriever()
        agent = Agent(retriever=retriever)
        result = agent.ask(QUESTION, thread_id="t", filters=SOURCE)
        assert result["route"] == "retrieve" and retriever.calls
        assert all(filters_ == SOURCE for _q, _k, filters_ in retriever.calls)
        retriever.calls.clear()
        agent.ask(QUESTION, thread_id="t2")
        assert retriever.calls and all(filters_ is None for _q, _k, filters_ in retriever.calls)

    def test_filters_are_anded_with_the_agents_own(self):
        retriever = handbook_retriever()
        agent = Agent(retriever=retriever, filters=TENANT)
        agent.ask(QUESTION, thread_id="t", filters=SOURCE)
        assert retriever.calls
        assert all(f == {"operator": "AND", "conditions": [TENANT, SOURCE]} for _q, _k, f in retriever.calls)
        assert agent.context.filters == TENANT  # the agent's own setting is unchanged
