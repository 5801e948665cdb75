"""Tenancy on every retrieval surface (`haygraph.adapters.tenancy`), without a model.

The fixed documents of `tenant_helpers` are filtered by Haystack's own matcher, so the scope these
tests check is the one the real store applies.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.fastmcp.exceptions import ToolError

from haygraph.adapters.errors import ScopeError
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import build_example_registry
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.adapters.mcp.server import create_mcp_server
from haygraph.adapters.tenancy import (
    ScopedRetriever,
    check_filters,
    check_tenant,
    merge_filters,
    tenant_filter,
)
from haygraph.control.api import Agent
from haygraph.control.tools import ContractToolExecutor
from haygraph.control.tools.types import ToolCall
from haygraph.retrieval.config import QueryConfig
from tests.adapters.tenant_helpers import TENANT_OF, FilteringRetriever
from tests.control.tool_helpers import ScriptedChatModel, call
from tests.retrieval.store_helpers import small_store

OTHER_TENANT = {"field": "meta.tenant", "operator": "==", "value": "B"}
ACME_TRAVEL = {"field": "meta.source_id", "operator": "==", "value": "acme-travel.md"}
WIDEN = {"operator": "OR", "conditions": [OTHER_TENANT, ACME_TRAVEL]}


def tenants(items: list[Any]) -> set[str]:
    return {TENANT_OF[item.id if hasattr(item, "id") else item["id"]] for item in items}


class TestChecks:
    @pytest.mark.parametrize("bad", ["", "   ", "A\x00", "A\u200b", "x" * 129, 7, None, ["A"]])
    def test_unusable_tenants_are_refused_with_the_name(self, bad: Any) -> None:
        with pytest.raises(ScopeError, match="--tenant"):
            check_tenant(bad, name="--tenant")

    def test_tenant_names_are_kept(self) -> None:
        assert check_tenant("acme-eu") == "acme-eu"
        assert check_tenant("租户甲") == "租户甲"

    @pytest.mark.parametrize(
        "bad", [{}, [], "meta.tenant==A", {"field": "meta.tenant"}, {"operator": "XOR", "conditions": []}]
    )
    def test_malformed_filters_are_refused(self, bad: Any) -> None:
        with pytest.raises(ScopeError, match="filters"):
            check_filters(bad)
        assert isinstance(ScopeError("x"), ValueError)  # the CLI reports it as one line

    def test_merge_is_an_and(self) -> None:
        assert merge_filters("A", None) == tenant_filter("A")
        assert merge_filters(None, WIDEN) is WIDEN
        assert merge_filters("A", WIDEN) == {"operator": "AND", "conditions": [tenant_filter("A"), WIDEN]}


class TestScopedRetriever:
    def test_search_never_leaves_the_tenant(self) -> None:
        scoped = ScopedRetriever(FilteringRetriever(), "A")
        assert tenants(scoped.retrieve("travel policy expense claims", top_k=10)) == {"A"}
        assert scoped.retrieve("travel policy", filters=OTHER_TENANT) == []  # narrowing to B: nothing
        assert tenants(scoped.retrieve("travel policy", top_k=10, filters=WIDEN)) == {"A"}

    def test_unbound_scope_passes_filters_through(self) -> None:
        base = FilteringRetriever()
        scoped = ScopedRetriever(lambda: base, None)
        assert tenants(scoped.retrieve("travel policy", top_k=10)) == {"A", "B"}
        assert tenants(scoped.retrieve("travel policy", top_k=10, filters=OTHER_TENANT)) == {"B"}

    def test_warm_up_reaches_the_scoped_retriever(self) -> None:
        class Warmable(FilteringRetriever):
            warmed = 0

            def warm_up(self) -> None:
                self.warmed += 1

        base = Warmable()
        ScopedRetriever(base, "A").warm_up()
        ScopedRetriever(FilteringRetriever(), "A").warm_up()  # a retriever without warm_up is left alone
        assert base.warmed == 1

    def test_lookup_refuses_foreign_chunks_like_missing_ones(self) -> None:
        scoped = ScopedRetriever(FilteringRetriever(), "A")
        assert scoped.lookup("a1") is not None and scoped.lookup("a1").id == "a1"  # type: ignore[union-attr]
        assert scoped.lookup("b1") is None and scoped.lookup("b3") is None
        assert scoped.lookup("a1", filters=OTHER_TENANT) is None
        assert scoped.lookup("nope") is None

    def test_the_current_base_is_used_on_every_call(self) -> None:
        current = [FilteringRetriever([])]
        scoped = ScopedRetriever(lambda: current[0], "A")
        assert scoped.retrieve("travel") == []
        current[0] = FilteringRetriever()
        assert tenants(scoped.retrieve("travel")) == {"A"}


class TestHaystackLookup:
    def test_lookup_applies_filters_to_the_stored_document(self) -> None:
        retriever = HaystackRetriever(SimpleNamespace(store=small_store()), QueryConfig())  # type: ignore[arg-type]
        acme = {"field": "meta.tenant", "operator": "==", "value": "acme"}
        found = retriever.lookup("d1", filters=acme)
        assert found is not None and found.meta == {"tenant": "acme"}
        assert retriever.lookup("d3", filters=acme) is None  # globex's chunk
        assert retriever.lookup("d3") is not None


class TestKnowledgeToolScope:
    """The issue's bypass: `search_knowledge_base` returned tenant-B chunks in a tenant-A session."""

    def test_the_executor_hands_session_filters_to_the_tool(self, tmp_path: Any) -> None:
        registry = build_example_registry(OrdersDatabase(tmp_path / "o.db"), FilteringRetriever())
        executor = ContractToolExecutor(registry, ["search_knowledge_base"])
        call_ = ToolCall(id="c1", name="search_knowledge_base", args={"query": "travel policy", "top_k": 10})
        [scoped] = executor.execute([call_], thread_id="t", filters=tenant_filter("A"))
        assert scoped.status == "ok" and tenants(scoped.content["hits"]) == {"A"}
        [unscoped] = executor.execute([call_], thread_id="t")
        assert tenants(unscoped.content["hits"]) == {"A", "B"}

    @pytest.mark.parametrize("binding", ["session_filters", "tenant_retriever"])
    def test_a_model_routed_to_the_tool_sees_only_its_tenant(self, tmp_path: Any, binding: str) -> None:
        base = FilteringRetriever()
        retriever = ScopedRetriever(base, "A") if binding == "tenant_retriever" else base
        registry = build_example_registry(OrdersDatabase(tmp_path / "o.db"), retriever)
        model = ScriptedChatModel(
            script=[
                call("RouteDecision", route="tool", intent="knowledge", reason="knowledge-base lookup"),
                call("search_knowledge_base", query="Globex travel policy business class", top_k=10),
            ]
        )
        settings: dict[str, Any] = {"filters": tenant_filter("A")} if binding == "session_filters" else {}
        agent = Agent(
            retriever=retriever,
            model=model,
            tool_executor=ContractToolExecutor(registry, ["search_knowledge_base"]),
            **settings,
        )
        state = agent.graph.invoke(
            {"question": "What does the Globex travel policy say?"},
            context=agent.context,
            config={"configurable": {"thread_id": "t"}},
        )
        [result] = state["tool_results"]
        assert result.status == "ok" and result.content["hits"]
        assert tenants(result.content["hits"]) == {"A"}
        assert "Globex" not in (state.get("answer") or "")


class TestMCPScope:
    @pytest.fixture()
    def server(self) -> Any:
        scoped = ScopedRetriever(FilteringRetriever(), "A")
        return create_mcp_server(scoped, scoped.lookup)

    def test_search_takes_filters_that_only_narrow(self, server: Any) -> None:
        _, found = asyncio.run(
            server.call_tool("search_knowledge_base", {"query": "travel policy", "top_k": 10})
        )
        assert tenants(found["result"]) == {"A"}
        for widen in (OTHER_TENANT, WIDEN):
            _, out = asyncio.run(
                server.call_tool(
                    "search_knowledge_base", {"query": "travel policy", "top_k": 10, "filters": widen}
                )
            )
            assert not out["result"] or tenants(out["result"]) == {"A"}

    def test_bad_filters_are_a_tool_error(self, server: Any) -> None:
        with pytest.raises(ToolError, match="filters"):
            asyncio.run(
                server.call_tool("search_knowledge_base", {"query": "travel", "filters": {"field": "x"}})
            )

    def test_get_chunk_refuses_other_tenants(self, server: Any) -> None:
        _, chunk = asyncio.run(server.call_tool("get_chunk", {"chunk_id": "a1"}))
        assert chunk["id"] == "a1" and chunk["meta"] == {"tenant": "A"}
        for foreign in ("b1", "b3"):
            with pytest.raises(ToolError, match="no chunk with id"):
                asyncio.run(server.call_tool("get_chunk", {"chunk_id": foreign}))

    def test_a_huge_id_is_not_echoed_back(self, server: Any) -> None:
        huge = "x" * 1_000_000
        with pytest.raises(ToolError) as info:
            asyncio.run(server.call_tool("get_chunk", {"chunk_id": huge}))
        message = str(info.value)
        assert "no chunk with id" in message and "(1000000 characters)" in message
        assert len(message) < 300
