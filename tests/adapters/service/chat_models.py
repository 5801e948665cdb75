"""Chat models for the service tests: real LangChain `BaseChatModel`s that stream structured output.

Not a test module. `CitingChatModel` routes every question to retrieval, keeps the question as the
query and answers by citing the first evidence id shown in its prompt, streaming the
`GroundedAnswer` tool-call arguments in small pieces (as a provider does). `SlowChatModel` sleeps.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

EVIDENCE_ID = re.compile(r"\[([^\[\]\s]+::[^\[\]\s]+)\]")
ANSWER = "The policy says so, according to the evidence."


class CitingChatModel(BaseChatModel):
    """Answers every retrieval question from the first evidence in the prompt (or cites `bad_id`)."""

    bad_id: str | None = None
    piece_chars: int = 6

    @property
    def _llm_type(self) -> str:
        return "citing-test-model"

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        names = [getattr(t, "name", None) or getattr(t, "__name__", str(t)) for t in tools]
        return self.bind(tool_names=names)

    def _reply(self, messages: list[BaseMessage], names: list[str]) -> AIMessage:
        name = names[0] if names else ""
        question = str(messages[-1].content).split("Question:")[-1].split("Message:")[-1].strip()
        if name == "RouteDecision":
            args: dict[str, Any] = {"route": "retrieve", "reason": "knowledge question"}
        elif name == "RewrittenQueries":
            args = {"queries": [question]}
        elif name == "GroundedAnswer":
            prompt = "\n".join(str(m.content) for m in messages)
            found = EVIDENCE_ID.findall(prompt)
            cited = [self.bad_id] if self.bad_id else found[:1]
            args = {"answer": ANSWER if cited else "", "evidence_ids": cited}
        else:
            return AIMessage(content="A short summary.")
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{name}"}])

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=self._reply(messages, kwargs.get("tool_names", [])))]
        )

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages, kwargs.get("tool_names", []))
        if not reply.tool_calls:
            yield ChatGenerationChunk(message=AIMessageChunk(content=str(reply.content)))
            return
        call = reply.tool_calls[0]
        args = json.dumps(call["args"], ensure_ascii=False)
        for start in range(0, len(args), self.piece_chars):
            first = start == 0
            chunk = AIMessageChunk(
                content="",
                tool_call_chunks=[
                    {
                        "name": call["name"] if first else None,
                        "args": args[start : start + self.piece_chars],
                        "id": call["id"] if first else None,
                        "index": 0,
                    }
                ],
            )
            generation = ChatGenerationChunk(message=chunk)
            if run_manager is not None:
                run_manager.on_llm_new_token("", chunk=generation)
            yield generation


class SlowChatModel(CitingChatModel):
    """A `CitingChatModel` that takes `delay_s` seconds per call."""

    delay_s: float = 2.0

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        time.sleep(self.delay_s)
        return super()._generate(messages, stop, run_manager, **kwargs)

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        time.sleep(self.delay_s)
        yield from super()._stream(messages, stop, run_manager, **kwargs)
