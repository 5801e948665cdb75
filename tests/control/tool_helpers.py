"""Tool test doubles: a scripted fake chat model that replays AIMessages with tool calls, and a toy
room-status tool with an offline trigger (a domain the control plane knows nothing about).

Not a test module (no `test_` prefix); imported by the graph and planning tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, Field

from haygraph.control.texts import Bilingual
from haygraph.control.tools import Cues, EntityArgument, OfflineTrigger, ToolContract, ToolRegistry


class ScriptedChatModel(BaseChatModel):
    """Replays scripted AIMessages (or raises scripted exceptions), one per call; records prompts, tools."""

    script: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    tools_seen: list[list[str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        names = [getattr(t, "name", None) or getattr(t, "__name__", str(t)) for t in tools]
        return self.bind(tool_names=names)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self.prompts.append(list(messages))
        self.tools_seen.append(list(kwargs.get("tool_names", [])))
        if not self.script:
            raise AssertionError("scripted model called more often than scripted")
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return ChatResult(generations=[ChatGeneration(message=item)])


def call(name: str, call_id: str | None = None, **args: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id or f"tc_{name}"}])


def calls(*items: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": n, "args": a, "id": f"tc{i}"} for i, (n, a) in enumerate(items)]
    )


class RoomArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    room: str = Field(pattern=r"^[A-Z]\d{3}$")
    floor_plan: bool = False


class RoomResult(BaseModel):
    room: str
    free: bool


ROOM = EntityArgument(
    argument="room",
    kind="rooms",
    pattern=r"\b[A-Z]\d{3}\b",
    malformed=r"\b[A-Z]\d{1,2}\b",
    ask=Bilingual(en="Which room (e.g. B204)?", zh="请问是哪个会议室（例如 B204）？"),
    invalid=Bilingual(en="'{value}' is not a room number. ", zh="“{value}”不是会议室编号。"),
)


def room_tool(**trigger: object) -> ToolContract:
    return ToolContract(
        name="room_status",
        purpose="Whether a meeting room is free now.",
        when_to_use="The user asks whether a named room is free.",
        when_not_to_use="Booking rules: search the knowledge base.",
        on_failure="Say the room system is unavailable.",
        args_model=RoomArgs,
        result_model=RoomResult,
        func=lambda args: RoomResult(room=args.room, free=True),
        intents=("rooms",),
        offline_trigger=OfflineTrigger(**trigger),  # type: ignore[arg-type]
    )


ROOMS = ToolRegistry(
    [
        room_tool(
            keywords=Cues(en=(r"rooms?", "meeting"), zh=("会议室",)),
            specific=Cues(en=("is", "free", "busy"), zh=("空", "有人")),
            general=Cues(en=("rules?", "how long"), zh=("规定",)),
            entity=ROOM,
            args={"floor_plan": False},
        )
    ]
)
