"""OpenAI-compatible chat completions: request model, and the completion / chunk objects we answer with.

- model `haygraph` (`GET /v1/models` lists it); the last `user` message is the question;
- the thread is the `user` field or the `X-Thread-Id` header; without one, the earlier `user` /
  `assistant` messages of the request are given to the agent as history and nothing is stored;
- the answer text carries its citations (`[evidence-id]`); the verified result object (status,
  evidence ids, evidence, path) rides in the extra top-level field `haygraph` (in the last chunk
  when streaming) — `completion.model_extra["haygraph"]` with the `openai` client;
- a rejected model answer (it cited evidence not retrieved in this run) is withheld:
  `finish_reason` is `content_filter` and the text says why.
Other OpenAI parameters (temperature, max_tokens, ...) are accepted and ignored; `system` messages
are ignored too: the agent's instructions are its own.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from pydantic import BaseModel, ConfigDict, Field

from haygraph.adapters.service.errors import BadRequestError, NotFoundError

MODEL_ID = "haygraph"
REJECTED_TEXT = (
    "The answer was withheld: it cited evidence that was not retrieved for this question. Please rephrase "
    "or ask again."
)


class ChatMessage(BaseModel):
    """One message of the request (OpenAI shape; content as text or a list of text parts)."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    """Body of `POST /v1/chat/completions` (unknown OpenAI parameters are accepted and ignored)."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(description=f"Must be {MODEL_ID!r}.")
    messages: list[ChatMessage] = Field(
        min_length=1, description="The conversation; the last user message is asked."
    )
    stream: bool = Field(
        default=False, description="Stream chunks as server-sent events, ending in `data: [DONE]`."
    )
    user: str | None = Field(
        default=None, description="Conversation thread id (or send the X-Thread-Id header)."
    )
    filters: dict[str, Any] | None = Field(
        default=None,
        description="haygraph extension: Haystack metadata filter (narrows the key's tenant only).",
    )


def text_of(content: str | list[dict[str, Any]] | None) -> str:
    """The text of a message's content (text parts joined; other parts ignored)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def question_and_history(request: ChatCompletionRequest) -> tuple[str, list[BaseMessage]]:
    """The last user message (the question) and the user/assistant messages before it."""
    if request.model != MODEL_ID:
        raise NotFoundError(f"model {request.model!r} does not exist; this service serves {MODEL_ID!r}")
    last_user = max((i for i, m in enumerate(request.messages) if m.role == "user"), default=None)
    if last_user is None:
        raise BadRequestError("messages must contain at least one message with role 'user'")
    history: list[BaseMessage] = []
    for message in request.messages[:last_user]:
        text = text_of(message.content)
        if message.role == "user" and text:
            history.append(HumanMessage(content=text))
        elif message.role == "assistant" and text:
            history.append(AIMessage(content=text))
    return text_of(request.messages[last_user].content), history


def citation_suffix(answer: str, evidence_ids: list[str]) -> str:
    """The ` [id]` citations of `evidence_ids` that `answer` does not already contain."""
    missing = [i for i in evidence_ids if f"[{i}]" not in answer]
    return "".join(f" [{i}]" for i in missing)


def cited_text(result: dict[str, Any]) -> str:
    """The answer text with its citations (or the withheld-answer notice for a rejected answer)."""
    if result.get("status") == "rejected" or result.get("answer") is None:
        return REJECTED_TEXT
    answer = str(result["answer"])
    return answer + citation_suffix(answer, list(result.get("evidence_ids") or []))


def finish_reason(result: dict[str, Any]) -> str:
    """`content_filter` for a withheld (rejected) answer, else `stop`."""
    return "content_filter" if result.get("status") == "rejected" else "stop"


def new_completion_id() -> str:
    """A fresh `chatcmpl-...` id."""
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def completion(result: dict[str, Any], *, completion_id: str | None = None) -> dict[str, Any]:
    """The `chat.completion` object for a finished turn."""
    return {
        "id": completion_id or new_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL_ID,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": cited_text(result)},
                "finish_reason": finish_reason(result),
                "logprobs": None,
            }
        ],
        "haygraph": result,
    }


def chunk(
    completion_id: str,
    created: int,
    delta: dict[str, Any],
    *,
    finish: str | None = None,
    result: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One `chat.completion.chunk`; the last one carries `finish_reason` and the `haygraph` result."""
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if result is not None:
        body["haygraph"] = result
    return body
