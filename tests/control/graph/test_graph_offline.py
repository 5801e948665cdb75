"""Offline mode (no model): routing, retrieval loop, extractive answers, tools, per-turn reset."""

from __future__ import annotations

from typing import Any

import pytest

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.graph import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.planning.decision.model import AnswerabilityModel, shipped_model
from haygraph.control.texts import INSUFFICIENT_EVIDENCE
from haygraph.control.tools.types import ToolCall, ToolResult
from tests.control.graph_helpers import (
    HANDBOOK,
    CountingRetriever,
    FailingRetriever,
    KeywordRetriever,
    cited_sentences,
    ev,
    handbook_retriever,
)
from tests.control.tool_helpers import ROOMS, ScriptedChatModel, call

GRAPH = build_graph()


BY_RELEVANCE = AnswerabilityModel(
    weights={"en_relevance": 10.0, "en_bias": -5.0, "zh_relevance": 10.0, "zh_bias": -5.0}
)
"""A decision on the best relevance alone (answerable from 0.5): graph tests that are about the
loop, not about the shipped weights, which are refitted on real data now and then."""


def run(question: str, **settings: Any) -> dict[str, Any]:
    return GRAPH.invoke({"question": question}, context=Context(**settings))


class TestGreeting:
    @pytest.mark.parametrize(
        "question", ["hi", "Hello!", "thanks so much", "你好", "谢谢！", "早上好", "你是谁"]
    )
    def test_no_retrieval(self, question: str) -> None:
        retriever = handbook_retriever()
        state = run(question, retriever=retriever)
        assert state["path"] == ["analyze", "generate"]
        assert retriever.calls == []
        assert state["route"] == "answer"
        assert state["status"] == "completed"
        assert state["evidence"] == [] and state["evidence_ids"] == []
        assert state["answer"]

    def test_reply_language(self) -> None:
        assert run("hi")["answer"] == "Hello! Ask me anything about the knowledge base."
        assert run("你好")["answer"] == "您好！请问有什么可以帮您？"


class TestRetrievePath:
    def test_policy_question_cites_only_retrieved_chunks(self) -> None:
        retriever = handbook_retriever()
        state = run(
            "Could you please tell me how many days of annual leave employees get?", retriever=retriever
        )
        assert state["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert state["route"] == "retrieve"
        assert state["status"] == "completed"
        assert state["query"] == "how many days of annual leave employees get"
        assert retriever.calls == [("how many days of annual leave employees get", 5, None)]
        retrieved = {e.id: e.text for e in state["evidence"]}
        assert state["evidence_ids"] == ["hr.md::leave"]
        assert set(state["evidence_ids"]) <= set(retrieved)
        pairs = cited_sentences(state["answer"])
        assert pairs[0] == ("Full-time employees receive 20 days of annual leave per year.", "hr.md::leave")
        for sentence, ev_id in pairs:
            assert sentence in retrieved[ev_id]
        assert state["retry_count"] == 0
        assert state["quality"] == pytest.approx(0.82)

    def test_chinese_question(self) -> None:
        state = run("请问年假有几天啊？", retriever=handbook_retriever())
        assert state["query"] == "年假有几天"
        assert state["status"] == "completed"
        assert state["evidence_ids"] == ["zh.md::nianjia"]
        assert state["answer"].startswith("员工每年享有15天带薪年假。 [zh.md::nianjia]")

    def test_unanswerable_is_insufficient(self) -> None:
        retriever = handbook_retriever()
        state = run("What is the dress code for the summer party?", retriever=retriever)
        assert state["status"] == "insufficient_evidence"
        assert state["answer"] == INSUFFICIENT_EVIDENCE.en
        assert state["evidence_ids"] == []
        assert state["path"] == ["analyze", "retrieve", "evaluate", "expand", "evaluate", "generate"]
        assert len(retriever.calls) == 2

    def test_unanswerable_chinese(self) -> None:
        state = run("公司的着装要求是什么", retriever=handbook_retriever())
        assert (state["status"], state["answer"], state["evidence_ids"]) == (
            "insufficient_evidence",
            INSUFFICIENT_EVIDENCE.zh,
            [],
        )

    def test_low_relevance_evidence_is_not_used(self) -> None:
        retriever = CountingRetriever(
            KeywordRetriever([ev("faq.md::x", "The cafeteria menu changes weekly.", 0.2)])
        )
        # Relevance alone decides without the answerability model.
        state = run("what is on the cafeteria menu", retriever=retriever, answerability=None)
        assert [e.id for e in state["evidence"]] == ["faq.md::x"]  # retrieved, but below the threshold
        assert state["status"] == "insufficient_evidence"
        assert state["evidence_ids"] == []

    def test_filters_are_passed(self) -> None:
        retriever = handbook_retriever()
        run("summer dress code", retriever=retriever, filters={"tenant": "acme"})
        assert len(retriever.calls) == 2  # search + expansion, both filtered
        assert [c[2] for c in retriever.calls] == [{"tenant": "acme"}, {"tenant": "acme"}]


class OrderedRetriever:
    """Returns its documents in their given order (a fused ranking that disagrees with relevance)."""

    def __init__(self, docs: list[Evidence]) -> None:
        self.docs = docs

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        return self.docs[:top_k]


# Keyword ranking puts three weak chunks first; the relevant chunk only enters a top-5.
EXPAND_DOCS = [
    ev("a.md::1", "Parking badge colours: parking badge holders park on level one.", 0.31),
    ev("a.md::2", "Parking badge renewals happen each parking season.", 0.29),
    ev("a.md::3", "Lost parking badge? Report the parking badge at reception.", 0.27),
    ev("a.md::4", "Visitors sign in at reception.", 0.2),
    ev("a.md::5", "Electric cars may charge in the parking garage for free.", 0.77),
]


class TestExpandLoop:
    def test_poor_retrieval_expands_once_with_original_question(self) -> None:
        retriever = CountingRetriever(KeywordRetriever(list(EXPAND_DOCS)))
        question = "Please tell me about parking badge charging"
        state = run(question, retriever=retriever, max_retries=1, answerability=BY_RELEVANCE)
        assert state["path"] == ["analyze", "retrieve", "evaluate", "expand", "evaluate", "generate"]
        assert retriever.calls == [
            ("about parking badge charging", 5, None),  # the first 3 are the evidence, the rest candidates
            (question, 5, None),
        ]
        assert state["retry_count"] == 1
        assert [e.id for e in state["evidence"]] == [
            "a.md::5",
            "a.md::1",
            "a.md::2",
            "a.md::3",
        ]  # merged, deduped
        assert state["evidence_ids"] == ["a.md::5"]
        assert state["answer"] == "Electric cars may charge in the parking garage for free. [a.md::5]"
        assert state["status"] == "completed"

    def test_candidates_do_not_change_the_decision(self) -> None:
        # a.md::5 is retrieved 5th: a candidate, which the decision does not read; without an
        # expansion the weak first three are all the decision sees, so the turn is refused
        retriever = CountingRetriever(KeywordRetriever(list(EXPAND_DOCS)))
        state = run(
            "Please tell me about parking badge charging",
            retriever=retriever,
            max_retries=0,
            answerability=BY_RELEVANCE,
        )
        assert [c.id for c in state["candidates"]] == ["a.md::5"]
        assert {e.id for e in state["evidence"]} == {"a.md::1", "a.md::2", "a.md::3"}
        assert state["status"] == "insufficient_evidence" and state["evidence_ids"] == []

    def test_an_answerable_turn_may_quote_a_candidate_and_reports_it(self) -> None:
        # the decision says yes on the first three; the 4th chunk, more relevant, holds the number
        docs = [
            ev("r.md::1", "Remote work abroad is allowed for at most 20 working days per year.", 0.63),
            ev("r.md::2", "Home office allowance: USD 300 once for remote and hybrid staff.", 0.61),
            ev("r.md::3", "Work safely at home and take breaks from the screen.", 0.53),
            ev("r.md::4", "Hybrid employees may work from home up to 2 days per week.", 0.62),
        ]
        state = run(
            "How many days per week can I work from home?",
            retriever=OrderedRetriever(docs),
            max_retries=0,
            answerability=BY_RELEVANCE,
        )
        assert state["status"] == "completed"
        assert state["answer"].startswith(
            "Hybrid employees may work from home up to 2 days per week. [r.md::4]"
        )
        assert "r.md::4" in state["evidence_ids"] and "r.md::4" in {e.id for e in state["evidence"]}
        # with answer_top_k = top_k there are no candidates: the answer reads the first three only
        state = run(
            "How many days per week can I work from home?",
            retriever=OrderedRetriever(docs),
            max_retries=0,
            answerability=BY_RELEVANCE,
            answer_top_k=3,
        )
        assert state["candidates"] == [] and "r.md::4" not in state["answer"]

    @pytest.mark.parametrize("max_retries", [0, 1, 2, 3])
    def test_loop_bounded_by_max_retries(self, max_retries: int) -> None:
        retriever = CountingRetriever(KeywordRetriever([ev("x.md::1", "Parking is limited.", 0.1)]))
        state = run("parking", retriever=retriever, max_retries=max_retries, answerability=None)
        assert state["retry_count"] == max_retries
        assert state["path"].count("expand") == max_retries
        assert state["path"] == [
            "analyze",
            "retrieve",
            "evaluate",
            *["expand", "evaluate"] * max_retries,
            "generate",
        ]
        assert len(retriever.calls) == 1 + max_retries
        assert state["status"] == "insufficient_evidence"

    def test_good_retrieval_does_not_expand(self) -> None:
        retriever = handbook_retriever()
        state = run("remote work approval", retriever=retriever, max_retries=3)
        assert "expand" not in state["path"]
        assert len(retriever.calls) == 1

    def test_relevance_none_uses_score(self) -> None:
        docs = [Evidence(id="s::1", text="Parking opens at 7am.", score=0.9)]

        class Fixed:
            def retrieve(self, query: str, *, top_k: int = 5, filters: Any = None) -> list[Evidence]:
                return docs

        state = run("when does parking open", retriever=Fixed(), answerability=BY_RELEVANCE)
        assert state["quality"] == 0.9
        assert state["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert state["evidence_ids"] == ["s::1"]


class TestRetrievalFailures:
    def test_failing_retriever_degrades(self) -> None:
        retriever = FailingRetriever()
        state = run("annual leave days", retriever=retriever)
        assert state["status"] == "degraded"
        assert state["answer"] == "The knowledge base is not available right now. Please try again later."
        assert state["retrieval_error"] == "ConnectionError: index unavailable"
        assert retriever.calls == 2  # first search + one expansion, then stop
        assert state["evidence_ids"] == []

    def test_no_retriever_degrades_without_expanding(self) -> None:
        state = run("annual leave days")
        assert state["status"] == "degraded"
        assert state["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert state["retrieval_error"] == "no retriever configured"


class RecordingExecutor:
    def __init__(self, results: list[ToolResult] | Exception) -> None:
        self.results = results
        self.calls: list[tuple[list[ToolCall], str]] = []

    def execute(
        self, calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
    ) -> list[ToolResult]:
        self.calls.append((calls, thread_id))
        if isinstance(self.results, Exception):
            raise self.results
        return self.results


def rooms(**settings: Any) -> Context:
    return Context(tool_registry=ROOMS, **{"tool_allow_list": ["room_status"], **settings})


class TestToolRoute:
    def test_trigger_runs_the_registered_tool(self) -> None:
        retriever = handbook_retriever()
        state = GRAPH.invoke({"question": "Is room B204 free?"}, context=rooms(retriever=retriever))
        assert state["path"] == ["analyze", "tool_exec", "generate"]
        assert retriever.calls == []
        assert (state["route"], state["intent"]) == ("tool", "rooms")
        assert state["tool_calls"] == [
            ToolCall(id="call_1", name="room_status", args={"room": "B204", "floor_plan": False})
        ]
        [result] = state["tool_results"]
        assert (result.status, result.content) == ("ok", {"room": "B204", "free": True})
        assert (state["status"], state["answer"]) == ("completed", "room_status: room: B204; free: True")

    def test_without_tools_a_tool_question_is_a_knowledge_question(self) -> None:
        retriever = handbook_retriever()
        state = run("Is room B204 free?", retriever=retriever)
        assert state["route"] == "retrieve" and state["tool_calls"] == []
        assert state["path"][:2] == ["analyze", "retrieve"]

    def test_model_tool_without_executor_is_an_error_result(self) -> None:
        model = ScriptedChatModel(
            script=[call("RouteDecision", route="tool", tool_name="lookup", tool_args={})]
        )
        state = run("look it up", model=model)
        assert state["path"] == ["analyze", "tool_exec", "generate"]
        assert state["tool_results"] == [
            ToolResult(call_id="call_1", name="lookup", status="error", error="no tool executor configured")
        ]
        assert state["status"] == "degraded"
        assert (
            state["answer"] == "lookup failed (error: no tool executor configured). Please try again later."
        )

    def test_ok_result_summarized(self) -> None:
        executor = RecordingExecutor(
            [
                ToolResult(
                    call_id="call_1",
                    name="room_status",
                    status="ok",
                    content={"room": "C101", "free": False, "items": [1, 2], "eta": None},
                )
            ]
        )
        state = GRAPH.invoke({"question": "会议室 C101 有人吗"}, context=rooms(tool_executor=executor))
        assert executor.calls[0][0][0].args == {"room": "C101", "floor_plan": False}
        assert executor.calls[0][1] == "default"  # no checkpointer -> no thread id
        assert state["status"] == "completed"
        # the contract declares no key fields: every non-empty field is shown, the empty "eta" is not
        assert state["answer"] == "room_status: room: C101; free: False; items: [1, 2]"

    def test_invalid_arguments_asks_user(self) -> None:
        executor = RecordingExecutor(
            [ToolResult(call_id="call_1", name="room_status", status="invalid_arguments", error="room: bad")]
        )
        state = GRAPH.invoke({"question": "room B204"}, context=rooms(tool_executor=executor))
        assert state["status"] == "needs_clarification"
        # the validation message stays in tool_results; the user is asked with the contract's words
        assert state["tool_results"][0].error == "room: bad"
        assert state["answer"] == "'B204' is not a room number. Which room (e.g. B204)?"

    def test_executor_exception_is_an_error_result(self) -> None:
        executor = RecordingExecutor(TimeoutError("took too long"))
        state = GRAPH.invoke({"question": "room B204"}, context=rooms(tool_executor=executor))
        assert state["tool_results"][0].status == "error"
        assert state["tool_results"][0].error == "tool executor failed: TimeoutError: took too long"
        assert state["status"] == "degraded"

    def test_missing_entity_clarifies(self) -> None:
        retriever = handbook_retriever()
        state = GRAPH.invoke({"question": "会议室现在空吗"}, context=rooms(retriever=retriever))
        assert state["path"] == ["analyze", "generate"]
        assert state["status"] == "needs_clarification"
        assert state["answer"] == "请问是哪个会议室（例如 B204）？"
        assert retriever.calls == []


class TestPerTurnReset:
    def test_thread_fields_start_fresh_each_turn(self) -> None:
        graph = build_graph(checkpointer=memory_checkpointer())
        retriever = handbook_retriever()
        ctx = rooms(retriever=retriever, answerability=None)  # path checks: relevance alone
        cfg = {"configurable": {"thread_id": "t1"}}
        first = graph.invoke({"question": "parking badge electric dress code"}, context=ctx, config=cfg)
        assert first["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert first["evidence"]
        second = graph.invoke({"question": "Is room B204 free?"}, context=ctx, config=cfg)
        assert second["path"] == ["analyze", "tool_exec", "generate"]
        assert second["evidence"] == [] and second["evidence_ids"] == []
        assert second["retry_count"] == 0
        assert set(second["timings_ms"]) == {"analyze", "tool_exec", "generate"}
        assert [r.call_id for r in second["tool_results"]] == ["call_1"]
        third = graph.invoke({"question": "is the meeting room busy?"}, context=ctx, config=cfg)
        # entities survive turns: the room given earlier is reused
        assert third["entities"] == {"rooms": ["B204"]}
        assert third["route"] == "tool"
        assert len(third["tool_results"]) == 1  # not accumulated across turns
        assert third["path"] == ["analyze", "tool_exec", "generate"]
        fourth = graph.invoke({"question": "hi"}, context=ctx, config=cfg)
        assert fourth["tool_results"] == [] and fourth["tool_calls"] == []
        assert fourth["path"] == ["analyze", "generate"]
        # only the last 3 turns stay verbatim; the first one is folded into the running summary
        assert [m.content for m in fourth["messages"]][::2] == [
            "Is room B204 free?",
            "is the meeting room busy?",
            "hi",
        ]
        assert [m.type for m in fourth["messages"]] == ["human", "ai"] * 3
        assert fourth["summary"].startswith("User: parking badge electric dress code")


class TestContextValidation:
    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"relevance_threshold": 1.5}, "relevance_threshold must be in [0, 1], but got 1.5"),
            ({"max_retries": -1}, "max_retries must be >= 0, but got -1"),
            ({"top_k": 0}, "top_k must be > 0, but got 0"),
            ({"model": "gpt4"}, "model must look like 'provider:model'"),
        ],
    )
    def test_bad_settings(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            Context(**kwargs)

    def test_min_evidence_relevance_defaults_to_threshold(self) -> None:
        assert Context(relevance_threshold=0.4).usable_relevance == 0.4
        assert Context(relevance_threshold=0.4, min_evidence_relevance=0.6).usable_relevance == 0.6


class TestRunTurn:
    def test_stable_result_object(self) -> None:
        from haygraph.control.api import RESULT_KEYS, Agent

        agent = Agent(retriever=handbook_retriever())
        result = agent.ask("How many days of annual leave do employees get?", thread_id="r1")
        assert tuple(result) == RESULT_KEYS
        assert result["status"] == "completed"
        assert result["route"] == "retrieve"
        assert result["evidence_ids"] == ["hr.md::leave"]
        assert result["evidence"][0] == {
            "id": "hr.md::leave",
            "text": next(e.text for e in HANDBOOK if e.id == "hr.md::leave"),
            "score": 4.0,  # overlap: employees, days, annual, leave
            "source": "hr.md",
            "page": None,  # the scripted evidence has no position
            "page_breaks": [],
            "char_start": None,
            "char_end": None,
        }
        assert result["path"] == ["analyze", "retrieve", "evaluate", "generate"]
        assert result["query"] == "How many days of annual leave do employees get"
        assert set(result["timings_ms"]) == {"analyze", "retrieve", "evaluate", "generate", "total"}
        assert result["timings_ms"]["total"] >= sum(
            v for k, v in result["timings_ms"].items() if k != "total"
        )

    def test_unexpected_failure_is_degraded_not_raised(self) -> None:
        from haygraph.control.api import run_turn

        class Broken:
            def invoke(self, *args: Any, **kwargs: Any) -> Any:
                raise RuntimeError("boom")

        result = run_turn(Broken(), "hi", context=Context())  # type: ignore[arg-type]
        assert (result["status"], result["answer"], result["path"]) == (
            "degraded",
            "Something went wrong. Please try again later.",
            [],
        )

    def test_module_level_ask(self) -> None:
        from haygraph.control.api import ask

        result = ask("你好")
        assert (result["status"], result["route"], result["path"]) == (
            "completed",
            "answer",
            ["analyze", "generate"],
        )


class TestAnswerabilityDecision:
    """The evaluate step's answerability model decides, whatever the relevance says."""

    def test_not_answerable_expands_then_refuses_despite_high_relevance(self) -> None:
        retriever = CountingRetriever(KeywordRetriever([ev("x.md::1", "Parking is free for staff.", 0.9)]))
        never = AnswerabilityModel(weights={"en_bias": -10.0, "zh_bias": -10.0})
        state = run("parking", retriever=retriever, answerability=never)
        assert state["answerable"] == pytest.approx(1 / (1 + 2.718281828**10), rel=1e-3)
        assert state["path"] == ["analyze", "retrieve", "evaluate", "expand", "evaluate", "generate"]
        assert state["status"] == "insufficient_evidence" and state["evidence_ids"] == []

    def test_answerable_uses_the_best_evidence_even_below_the_relevance_floor(self) -> None:
        retriever = CountingRetriever(KeywordRetriever([ev("x.md::1", "Parking is free for staff.", 0.3)]))
        always = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        state = run("parking", retriever=retriever, answerability=always, max_retries=0)
        assert state["status"] == "completed"
        assert state["evidence_ids"] == ["x.md::1"]

    def test_a_rule_after_the_model_refuses_the_turn(self) -> None:
        # the model says yes (p ~ 1), but no retrieved sentence holds the number "how many" asks for
        retriever = CountingRetriever(KeywordRetriever([ev("x.md::1", "Parking is free for staff.", 0.9)]))
        always = AnswerabilityModel(weights={"en_bias": 10.0, "zh_bias": 10.0})
        state = run("how many parking spaces are free for staff", retriever=retriever, answerability=always)
        assert state["answerable"] == 0.0 and state["status"] == "insufficient_evidence"
        assert state["decision"]["rule"] == "no retrieved sentence holds the asked-for number"
        assert state["decision"]["probability"] > 0.99

    def test_the_shipped_decision_is_the_default(self) -> None:
        assert Context().answerability is shipped_model()
        assert Context(answerability=None).answerability is None  # the older relevance-only heuristic

    def test_default_decision_answers_the_fact_and_refuses_the_near_miss(self) -> None:
        # The same retrieved chunk (relevance 0.9) for both questions: the entitlement is answered;
        # the question that shares only "annual" with it (a parking fee it never states) is refused.
        leave = ev(
            "leave.md::1",
            "| Continuous service | Annual leave per year |\n|---|---|\n"
            "| Less than 3 years | 12 working days |\n| 10 years or more | 20 working days |",
            0.9,
        )
        answered = run("How many days of annual leave do I get?", retriever=KeywordRetriever([leave]))
        assert answered["status"] == "completed" and answered["evidence_ids"] == ["leave.md::1"]
        assert "12 working days" in answered["answer"]
        refused = run(
            "How much is the annual parking fee in the garage?", retriever=KeywordRetriever([leave])
        )
        assert [e.id for e in refused["evidence"]] == ["leave.md::1"]  # retrieved, then refused
        assert refused["status"] == "insufficient_evidence" and refused["evidence_ids"] == []

    def test_bad_answerability_setting_is_a_config_error(self) -> None:
        with pytest.raises(ConfigError, match="answerability must be an AnswerabilityModel"):
            Context(answerability="yes")  # type: ignore[arg-type]
