"""Conversation memory of a thread: entities remembered per question, old turns folded after each turn.

The pure work is done by `haygraph.control.window.entities` and `haygraph.control.window.history`;
this module applies it to one turn. The generate node calls `fold_turn` at the end of every turn
that added a message: the answer is appended, every turn but the last `HistoryConfig.keep_turns` is
folded into the running `summary` and removed from `messages` with `RemoveMessage`s, so a
checkpointed thread stays the same size however long the conversation runs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from haygraph.control.errors import ContextError, ModelOutputError
from haygraph.control.prompts import ROLE_LABELS, SUMMARY_MESSAGE, SUMMARY_SYSTEM
from haygraph.control.window.entities import extract_entities, merge_entities
from haygraph.control.window.history import HistoryConfig, Summarizer, compress_history, split_turns
from haygraph.control.window.tokens import TokenCounter

logger = logging.getLogger(__name__)


def compact_entities(entities: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Return only the kinds that have values (what is stored in state and shown to callers)."""
    return {kind: list(values) for kind, values in entities.items() if values}


def remember_entities(
    known: Mapping[str, Sequence[str]] | None, text: str, config: HistoryConfig
) -> dict[str, list[str]]:
    """Merge the rule-extracted entities of `text` into `known` (bounded per kind, newest last)."""
    found = extract_entities(text, config.entity_config)
    merged = merge_entities(known or {}, found, max_per_kind=config.max_entities_per_kind)
    return compact_entities(merged)


def earlier_turns(messages: Sequence[BaseMessage], keep_turns: int) -> list[BaseMessage]:
    """Return the messages of the last `keep_turns` turns before the current question.

    The current question is the last human message (added by `analyze`); everything from it on
    belongs to the turn being answered and is not history.
    """
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=None)
    previous = list(messages[:last_human]) if last_human is not None else list(messages)
    return [message for turn in split_turns(previous)[-keep_turns:] for message in turn]


def model_summarizer(model: BaseChatModel) -> Summarizer:
    """Return a `Summarizer` that asks `model` to merge the folded turns into the summary.

    An empty reply raises `ModelOutputError`, so `compress_history` falls back to the extractive
    summary instead of wiping it.
    """

    def summarize(previous: str, folded: Sequence[BaseMessage]) -> str:
        transcript = "\n".join(
            f"{ROLE_LABELS[m.type]}: {m.text}" for m in folded if m.type in ROLE_LABELS and m.text
        )
        message = SUMMARY_MESSAGE.format(previous=previous or "(none)", transcript=transcript)
        reply = model.invoke([SystemMessage(content=SUMMARY_SYSTEM), HumanMessage(content=message)])
        text = reply.text.strip()
        if not text:
            raise ModelOutputError("the model returned an empty summary")
        return text

    return summarize


def fold_turn(
    messages: Sequence[BaseMessage],
    answer: str | None,
    *,
    counter: TokenCounter,
    config: HistoryConfig,
    summary: str = "",
    entities: Mapping[str, Sequence[str]] | None = None,
    summarize: Summarizer | None = None,
) -> dict[str, Any]:
    """Append the answer to the conversation and fold old turns; return the state update.

    The update holds `messages` (the answer, then one `RemoveMessage` per folded message),
    `summary` and `entities` (merged with every kept message's entities). A failure of the
    compression itself (tokenizer missing, message without id) is logged and only the answer is
    appended: the turn still completes.
    """
    new = [AIMessage(content=answer, id=f"ai-{uuid4().hex}")] if answer else []
    try:
        update = compress_history(
            [*messages, *new],
            counter=counter,
            summary=summary,
            entities=entities,
            config=config,
            summarize=summarize,
        )
    except ContextError as exc:
        logger.error("conversation history could not be compressed this turn: %s", exc)
        return {"messages": new} if new else {}
    return {
        "messages": [*new, *update.remove],
        "summary": update.summary,
        "entities": compact_entities(update.entities),
    }
