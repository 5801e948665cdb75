"""`build_graph`: the default context of a run invoked without one, and the graph's shape."""

from __future__ import annotations

from haygraph.control.graph import build_graph
from haygraph.control.graph.context import Context
from tests.control.graph_helpers import handbook_retriever
from tests.control.tool_helpers import ROOMS


class TestDefaultContext:
    def test_invoke_without_context_uses_context_defaults(self) -> None:
        state = build_graph().invoke({"question": "How many days of annual leave do I get?"})
        # Context(): offline, no retriever -> the retrieval fails softly, one expansion is skipped
        assert state["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert (state["status"], state["retrieval_error"]) == ("degraded", "no retriever configured")
        assert state["top_k"] == Context().top_k

    def test_greeting_without_context(self) -> None:
        state = build_graph().invoke({"question": "hi"})
        assert (state["status"], state["answer"]) == (
            "completed",
            "Hello! Ask me anything about the knowledge base.",
        )

    def test_graph_default_context_is_used_and_an_explicit_one_wins(self) -> None:
        retriever = handbook_retriever()
        graph = build_graph(context=Context(retriever=retriever, top_k=2, answer_top_k=2))
        state = graph.invoke({"question": "How many days of annual leave do employees get?"})
        assert state["status"] == "completed" and state["evidence_ids"] == ["hr.md::leave"]
        assert state["top_k"] == 2
        assert retriever.calls == [("How many days of annual leave do employees get", 2, None)]
        other = handbook_retriever()
        state = graph.invoke({"question": "annual leave days"}, context=Context(retriever=other, top_k=4))
        assert state["top_k"] == 4 and other.calls and len(retriever.calls) == 1

    def test_a_run_context_inherits_what_the_graph_is_bound_to(self) -> None:
        # what LangGraph's server does: it always passes a Context built from the run's settings
        retriever = handbook_retriever()
        graph = build_graph(
            context=Context(retriever=retriever, tool_registry=ROOMS, tool_allow_list=["room_status"])
        )
        state = graph.invoke(
            {"question": "annual leave days"}, context=Context(top_k=1, answer_top_k=1, max_retries=0)
        )
        assert state["top_k"] == 1 and retriever.calls == [("annual leave days", 1, None)]
        assert state["status"] == "completed"
        tool = graph.invoke({"question": "Is room B204 free?"}, context=Context())
        assert tool["tool_results"][0].status == "ok"  # the bound tools too
        assert build_graph().invoke({"question": "annual leave"}, context=Context())["status"] == "degraded"

    def test_router_sees_the_default_context(self) -> None:
        # max_retries=0 in the default context: a poor retrieval is not expanded
        retriever = handbook_retriever()
        graph = build_graph(context=Context(retriever=retriever, max_retries=0, relevance_threshold=1.0))
        state = graph.invoke({"question": "annual leave days"})
        assert "expand" not in state["path"] and len(retriever.calls) == 1


class TestShape:
    def test_nodes_and_edges(self) -> None:
        graph = build_graph().get_graph()
        assert set(graph.nodes) == {
            "__start__", "analyze", "retrieve", "evaluate", "expand", "tool_exec", "generate", "__end__",
        }  # fmt: skip
        edges = {(e.source, e.target) for e in graph.edges}
        assert {("evaluate", "expand"), ("evaluate", "generate"), ("expand", "evaluate")} <= edges
        assert {("analyze", "retrieve"), ("analyze", "tool_exec"), ("analyze", "generate")} <= edges
