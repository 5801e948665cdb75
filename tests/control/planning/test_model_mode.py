"""Model mode: the up-front decision, the JSON-prompt path with one repair, and the graph's fallback notes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from haygraph.control.errors import ConfigError, ModelOutputError
from haygraph.control.graph import build_graph
from haygraph.control.graph.context import Context
from haygraph.control.planning.model_calls import GroundedAnswer, RewrittenQueries
from haygraph.control.planning.model_mode import (
    ModelMode,
    detect_model_mode,
    extract_json,
    json_call,
    resolve_model_mode,
)
from tests.control.graph_helpers import handbook_retriever
from tests.control.tool_helpers import ScriptedChatModel


class TextOnlyChatModel(BaseChatModel):
    """A chat model with neither `bind_tools` nor `with_structured_output`: replays scripted texts."""

    script: list[str] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "text-only"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(list(messages))
        if not self.script:
            raise AssertionError("text model called more often than scripted")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.script.pop(0)))])


class DeclaredJsonModel(ScriptedChatModel):
    haygraph_model_mode: str = "json"


MESSAGES = [SystemMessage(content="Rewrite."), HumanMessage(content="leave?")]


class TestDetectModelMode:
    def test_text_only_model_gets_json_mode(self) -> None:
        assert detect_model_mode(TextOnlyChatModel()) is ModelMode.JSON

    def test_model_with_bind_tools_is_native(self) -> None:
        assert detect_model_mode(ScriptedChatModel()) is ModelMode.NATIVE

    def test_declared_mode_wins_over_the_probe(self) -> None:
        assert detect_model_mode(DeclaredJsonModel()) is ModelMode.JSON

    def test_explicit_setting_and_bad_name(self) -> None:
        assert resolve_model_mode(TextOnlyChatModel(), "native") is ModelMode.NATIVE
        with pytest.raises(ConfigError, match="model_mode must be one of auto, native, json; got 'xml'"):
            resolve_model_mode(TextOnlyChatModel(), "xml")

    def test_context_decides_once_at_construction(self) -> None:
        assert Context(model=TextOnlyChatModel()).structured_mode is ModelMode.JSON
        assert Context(model=ScriptedChatModel()).structured_mode is ModelMode.NATIVE
        assert Context(model=TextOnlyChatModel(), model_mode="native").structured_mode is ModelMode.NATIVE
        with pytest.raises(ConfigError, match="model_mode"):
            Context(model_mode="yaml")


class TestExtractJson:
    @pytest.mark.parametrize(
        "text",
        [
            '{"queries": ["a"]}',
            'Sure! ```json\n{"queries": ["a"]}\n``` Hope it helps.',
            'Here it is: {"queries": ["a"]} done',
        ],
    )
    def test_finds_the_object(self, text: str) -> None:
        assert extract_json(text) == {"queries": ["a"]}

    def test_no_object_names_the_reply(self) -> None:
        with pytest.raises(ModelOutputError, match="no JSON object: 'I cannot'"):
            extract_json("I cannot")


class TestJsonCall:
    def test_valid_reply_one_call_with_schema_in_system_prompt(self) -> None:
        model = TextOnlyChatModel(script=['{"queries": ["annual leave"]}'])
        assert json_call(model, RewrittenQueries, MESSAGES).queries == ["annual leave"]
        system = model.prompts[0][0]
        assert isinstance(system, SystemMessage)
        assert system.text.startswith("Rewrite.") and '"queries"' in system.text
        assert len(model.prompts) == 1

    def test_one_repair_attempt_shows_the_error(self) -> None:
        model = TextOnlyChatModel(script=['{"queries": []}', '{"queries": ["leave"]}'])
        assert json_call(model, RewrittenQueries, MESSAGES).queries == ["leave"]
        assert len(model.prompts) == 2
        repair = model.prompts[1]
        assert repair[-2].content == '{"queries": []}'
        assert "queries" in repair[-1].text and "failed validation" in repair[-1].text

    def test_second_failure_raises_after_exactly_two_calls(self) -> None:
        model = TextOnlyChatModel(script=["no idea", '{"answer": "x"}'])
        with pytest.raises(ModelOutputError, match=r"evidence_ids.*after one repair attempt"):
            json_call(model, GroundedAnswer, MESSAGES)
        assert len(model.prompts) == 2


GRAPH = build_graph()
QUESTION = "How many days of annual leave do I get?"


def run_turn(model: BaseChatModel) -> dict[str, Any]:
    return GRAPH.invoke({"question": QUESTION}, context=Context(model=model, retriever=handbook_retriever()))


class TestGraphJsonMode:
    def test_json_model_answers_with_valid_citations(self) -> None:
        model = TextOnlyChatModel(
            script=[
                json.dumps({"route": "retrieve", "reason": "policy question"}),
                json.dumps({"queries": ["annual leave days"]}),
                json.dumps({"answer": "20 days per year.", "evidence_ids": ["hr.md::leave"]}),
            ]
        )
        state = run_turn(model)
        assert (state["status"], state["answer"], state["evidence_ids"]) == (
            "completed",
            "20 days per year.",
            ["hr.md::leave"],
        )
        assert state["notes"] == []
        assert len(model.prompts) == 3  # no failing native calls first

    def test_malformed_output_falls_back_with_the_reason_in_notes(self) -> None:
        model = TextOnlyChatModel(script=["Hello!"] * 6)  # never JSON: route, rewrite, generate each fail
        state = run_turn(model)
        assert len(model.prompts) == 6  # one call plus one repair per step, no more
        assert state["status"] == "degraded"  # the extractive answer, as offline
        assert state["evidence_ids"] and "20 days" in state["answer"]
        notes = state["notes"]
        assert [n.split(" (")[0] for n in notes] == [
            "model routing failed",
            "model rewriting failed",
            "model unavailable",  # generation: the extractive answer was used
        ]
        assert all("after one repair attempt" in n for n in notes)
