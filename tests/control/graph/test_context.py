"""`Context`: per-call filters and the entity kinds a tool registry declares."""

from __future__ import annotations

from typing import Any

import pytest

from haygraph.control.api import Agent
from haygraph.control.errors import ConfigError
from haygraph.control.graph.context import Context, combine_filters
from tests.control.graph_helpers import CountingRetriever, KeywordRetriever, handbook_retriever
from tests.control.tool_helpers import ROOMS

TENANT = {"field": "meta.tenant", "operator": "==", "value": "acme"}
SOURCE = {"field": "meta.source_id", "operator": "==", "value": "hr.md"}


class TestFilters:
    def test_combine(self) -> None:
        assert combine_filters(None, None) is None
        assert combine_filters(TENANT, None) == TENANT
        assert combine_filters(None, SOURCE) == SOURCE
        assert combine_filters(TENANT, SOURCE) == {"operator": "AND", "conditions": [TENANT, SOURCE]}

    def test_with_filters_narrows_a_copy(self) -> None:
        ctx = Context(filters=TENANT)
        narrowed = ctx.with_filters(SOURCE)
        assert narrowed is not ctx and ctx.filters == TENANT
        assert narrowed.filters == {"operator": "AND", "conditions": [TENANT, SOURCE]}
        assert narrowed.counter is ctx.counter  # nothing reloaded
        assert ctx.with_filters(None) is ctx

    @pytest.mark.parametrize("bad", ["meta.tenant == acme", ["a"]])
    def test_non_dict_filters_are_config_errors(self, bad: Any) -> None:
        with pytest.raises(ConfigError, match="filters must be a dict"):
            Context(filters=bad)
        with pytest.raises(ConfigError, match="filters must be a dict"):
            Context().with_filters(bad)

    def test_agent_ask_filters_reach_every_retrieval_of_the_turn(self) -> None:
        retriever = handbook_retriever()
        agent = Agent(retriever=retriever, filters=TENANT, relevance_threshold=1.0)  # forces an expansion
        result = agent.ask("annual leave days", thread_id="f", filters=SOURCE)
        assert "expand" in result["path"] and len(retriever.calls) == 2
        both = {"operator": "AND", "conditions": [TENANT, SOURCE]}
        assert [call[2] for call in retriever.calls] == [both, both]
        agent.ask("annual leave days", thread_id="f")  # the next call without: only the agent's own
        assert [call[2] for call in retriever.calls[2:]] == [TENANT, TENANT]
        assert agent.context.filters == TENANT

    def test_keyword_retriever_ignores_filters_but_sees_them(self) -> None:
        retriever = CountingRetriever(KeywordRetriever([]))
        Agent(retriever=retriever).ask("leave", filters=SOURCE)
        assert retriever.calls[0][2] == SOURCE


class TestToolEntities:
    def test_registry_entity_kinds_are_extracted(self) -> None:
        ctx = Context(tool_registry=ROOMS, tool_allow_list=["room_status"])
        assert (
            ctx.history.entity_config.patterns == ROOMS.entity_patterns() == (("rooms", r"\b[A-Z]\d{3}\b"),)
        )
        assert Context().history.entity_config.patterns == ()
