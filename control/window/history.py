"""Bounded conversation history: last turns verbatim, older turns folded into a running summary.

`compress_history` is pure: it takes the messages currently in graph state and returns what the
node should write back — the new summary, the merged entities and `RemoveMessage`s for the
folded messages (applied by LangGraph's `add_messages` reducer). Persisted state then holds at
most `keep_turns` turns, a summary of at most `summary_max_tokens` tokens and at most
`max_entities_per_kind` entities per kind, however long the conversation runs.

A turn starts at a human message and runs until the next one (AI replies, tool calls and tool
messages belong to the turn of the question they answer).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage

from haygraph.control.errors import HistoryError
from haygraph.control.language import split_sentences
from haygraph.control.prompts import ROLE_LABELS
from haygraph.control.window.entities import EntityConfig, extract_entities, merge_entities
from haygraph.control.window.tokens import TokenCounter, truncate_to_tokens

logger = logging.getLogger(__name__)

#: A model-backed summarizer: (previous summary, messages being folded) -> new summary text.
Summarizer = Callable[[str, Sequence[BaseMessage]], str]


@dataclass(frozen=True)
class HistoryConfig:
    """Settings of `compress_history`."""

    keep_turns: int = 3
    summary_max_tokens: int = 256
    max_entities_per_kind: int = 10
    #: Extractive summary: at most this many key sentences taken from each folded message.
    sentences_per_message: int = 2
    entity_config: EntityConfig = field(default_factory=EntityConfig)

    def __post_init__(self) -> None:
        for name in ("keep_turns", "summary_max_tokens", "max_entities_per_kind", "sentences_per_message"):
            if getattr(self, name) < 1:
                raise HistoryError(f"{name} must be >= 1, but got {getattr(self, name)}")


@dataclass(frozen=True)
class HistoryUpdate:
    """What `compress_history` decided; `remove` goes into the `messages` channel of state."""

    summary: str
    entities: dict[str, list[str]]
    remove: list[RemoveMessage]
    kept: list[BaseMessage]
    folded: list[BaseMessage]


def split_turns(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Group messages into turns, each starting at a human message (leading others form a turn)."""
    turns: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def messages_to_pairs(
    messages: Sequence[BaseMessage], *, drop_trailing_human: bool = False
) -> list[tuple[str, str]]:
    """Convert kept messages to (role, text) pairs for `assemble_prompt`.

    Only human and AI messages with text are kept (tool-call-only AI messages, tool messages and
    system messages are not history). With `drop_trailing_human`, a final human message (the
    question being answered, passed to the prompt separately) is left out.
    """
    pairs = [
        (message.type, str(message.text))
        for message in messages
        if message.type in ROLE_LABELS and message.text.strip()
    ]
    if drop_trailing_human and pairs and pairs[-1][0] == "human":
        pairs.pop()
    return pairs


def _key_sentences(text: str, limit: int, entity_config: EntityConfig) -> list[str]:
    sentences = split_sentences(text)
    if not sentences:
        return []
    chosen = [sentences[0]]
    for sentence in sentences[1:]:
        if len(chosen) >= limit:
            break
        if any(extract_entities(sentence, entity_config).values()):
            chosen.append(sentence)
    return chosen[:limit]


def extractive_summary_lines(messages: Sequence[BaseMessage], config: HistoryConfig) -> list[str]:
    """Return one summary line per folded human/AI message: its label and key sentences.

    Key sentences are the first sentence (usually the question or the answer's gist) and then
    sentences that mention an entity, up to `config.sentences_per_message`.
    """
    lines = []
    for message in messages:
        label = ROLE_LABELS.get(message.type)
        if label is None:
            continue
        sentences = _key_sentences(message.text, config.sentences_per_message, config.entity_config)
        if sentences:
            lines.append(f"{label}: {' '.join(sentences)}")
    return lines


def bound_summary(lines: Sequence[str], counter: TokenCounter, max_tokens: int) -> str:
    """Join the most recent `lines` that fit in `max_tokens` (older lines are dropped first)."""
    kept: list[str] = []
    for line in reversed(lines):
        if counter.count("\n".join([line, *kept])) > max_tokens:
            if not kept:
                kept.append(truncate_to_tokens(line, counter, max_tokens))
            break
        kept.insert(0, line)
    return "\n".join(line for line in kept if line)


def compress_history(
    messages: Sequence[BaseMessage],
    *,
    counter: TokenCounter,
    summary: str = "",
    entities: Mapping[str, Sequence[str]] | None = None,
    config: HistoryConfig | None = None,
    summarize: Summarizer | None = None,
) -> HistoryUpdate:
    """Fold all but the last `keep_turns` turns into the summary and update the entities.

    Args:
        messages: The messages in graph state, oldest first (each with an id, as `add_messages`
            assigns).
        counter: Token counter bounding the summary.
        summary: The running summary so far.
        entities: The entities so far; merged with those of every message given.
        config: Limits; defaults to `HistoryConfig()`.
        summarize: Optional model-backed summarizer. Without one (or if it fails, which is
            logged) the summary is extractive: key sentences of the folded messages appended to
            the previous summary, oldest dropped first.

    Returns:
        The update; `remove` holds one `RemoveMessage` per folded message.

    Raises:
        HistoryError: A folded message has no id, so it could not be removed from state.

    """
    config = config if config is not None else HistoryConfig()
    turns = split_turns(messages)
    folded = [message for turn in turns[: -config.keep_turns] for message in turn]
    kept = [message for turn in turns[-config.keep_turns :] for message in turn]

    found = [extract_entities(message.text, config.entity_config) for message in messages]
    merged = merge_entities(entities or {}, *found, max_per_kind=config.max_entities_per_kind)

    new_summary = summary
    if folded:
        missing = [message for message in folded if not message.id]
        if missing:
            raise HistoryError(
                f"{len(missing)} message(s) to fold have no id and cannot be removed from state; "
                "messages in graph state get ids from the add_messages reducer"
            )
        new_summary = _fold(summary, folded, counter, config, summarize)
    remove = [RemoveMessage(id=str(message.id)) for message in folded]
    return HistoryUpdate(summary=new_summary, entities=merged, remove=remove, kept=kept, folded=folded)


def _fold(
    summary: str,
    folded: Sequence[BaseMessage],
    counter: TokenCounter,
    config: HistoryConfig,
    summarize: Summarizer | None,
) -> str:
    if summarize is not None:
        try:
            text = summarize(summary, list(folded))
        except Exception:
            logger.warning("summarizer failed; falling back to the extractive summary", exc_info=True)
        else:
            return truncate_to_tokens(text.strip(), counter, config.summary_max_tokens)
    previous = [line for line in summary.split("\n") if line.strip()]
    return bound_summary(
        [*previous, *extractive_summary_lines(folded, config)], counter, config.summary_max_tokens
    )
