"""Answer text as it is produced: from a chat model's streamed chunks, or an extractive answer in pieces.

Grounded generation uses structured output (`GroundedAnswer`: `{answer, evidence_ids}`), so a model
streams JSON — as tool-call argument chunks (`bind_tools`-based structured output) or as message
content (JSON-mode providers). `AnswerTokens` accumulates the chunks of each model call made inside
the `generate` node, parses the partial JSON with LangChain's `parse_partial_json` and returns only
the new characters of its `answer` field. Calls of other nodes (routing, rewriting) and other
schemas (history summaries) are ignored.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessageChunk
from langchain_core.utils.json import parse_partial_json

ANSWER_SCHEMA = "GroundedAnswer"
ANSWER_NODE = "generate"
_PIECE = re.compile(r".+?(?:\]\s*|[.!?]\s+|[。！？；]\s*|\n+|$)", re.S)


def partial_answer(message: AIMessageChunk) -> str | None:
    """The `answer` text contained so far in an accumulated structured-output chunk (None if none yet)."""
    raw: str | None = None
    for call in message.tool_call_chunks:
        if call.get("name") in (ANSWER_SCHEMA, None) and call.get("args"):
            raw = call["args"]
            break
    if raw is None and isinstance(message.content, str) and message.content.lstrip().startswith("{"):
        raw = message.content
    if not raw:
        return None
    try:
        parsed = parse_partial_json(raw)
    except Exception:
        return None
    answer = parsed.get("answer") if isinstance(parsed, dict) else None
    return answer if isinstance(answer, str) else None


class AnswerTokens:
    """Turns LangGraph `stream_mode="messages"` events into answer-text deltas (see the module docstring)."""

    def __init__(self) -> None:
        self._chunks: dict[str, AIMessageChunk] = {}
        self._sent: dict[str, str] = {}
        self.text = ""
        """Everything returned so far."""

    def feed(self, message: Any, metadata: dict[str, Any]) -> str:
        """Return the new answer characters carried by one streamed message ("" when none)."""
        if metadata.get("langgraph_node") != ANSWER_NODE or not isinstance(message, AIMessageChunk):
            return ""
        key = message.id or "-"
        known = self._chunks.get(key)
        merged = message if known is None else known + message
        self._chunks[key] = merged
        answer = partial_answer(merged)
        sent = self._sent.get(key, "")
        if answer is None or len(answer) <= len(sent) or not answer.startswith(sent):
            return ""  # nothing new, or a partial parse that is not an extension yet
        self._sent[key] = answer
        delta = answer[len(sent) :]
        self.text += delta
        return delta


def answer_pieces(text: str, max_pieces: int = 8) -> list[str]:
    """Split a finished answer into a few pieces (after citations and sentence ends) for streaming.

    `"".join(pieces) == text`; at most `max_pieces` pieces (the tail is kept together).
    """
    if not text:
        return []
    pieces = [p for p in _PIECE.findall(text) if p]
    if len(pieces) > max_pieces:
        pieces = [*pieces[: max_pieces - 1], "".join(pieces[max_pieces - 1 :])]
    return pieces


def closing_text(streamed: str, answer: str | None) -> str:
    """What must still be sent after `streamed` so the stream ends with the final `answer`.

    The remainder when `answer` extends what was streamed; the whole answer (after a blank line)
    when a fallback replaced a streamed model answer; "" when there is no answer (rejected).
    """
    if not answer:
        return ""
    if answer.startswith(streamed):
        return answer[len(streamed) :]
    return f"\n\n{answer}" if streamed else answer
