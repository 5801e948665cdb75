"""Per-run settings of the graph, passed with `graph.invoke(..., context=Context(...))`.

The thread id is not a setting: it travels in the LangGraph config
(`{"configurable": {"thread_id": ...}}`) together with the checkpointer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from control.errors import ConfigError
from control.evidence import Retriever
from control.tool_types import ToolExecutor


@dataclass(kw_only=True)
class Context:
    """Runtime settings of one graph run; validated on construction (`ConfigError` names the bad value).

    Relevance scale: `relevance_threshold` and `min_evidence_relevance` are compared with
    `Evidence.relevance` — an absolute score such as the dense cosine similarity of the chunk with
    the query. For evidence whose `relevance` is None the ranking `score` is used instead, so a
    retriever without absolute scores must put its scores on a comparable 0–1 scale itself.
    """

    retriever: Retriever | None = None
    """The knowledge base; None means every retrieval fails softly (status `degraded`)."""

    model: BaseChatModel | str | None = None
    """A LangChain chat model, a "provider:model" string (`langchain` extra), or None = offline rules."""

    relevance_threshold: float = 0.5
    """Best-evidence relevance below which retrieval counts as poor and is expanded."""

    min_evidence_relevance: float | None = None
    """Relevance an evidence item needs to be usable for the answer; None = `relevance_threshold`."""

    max_retries: int = 1
    """Maximum expansions per turn (the evaluate/expand loop bound)."""

    top_k: int = 3
    """Chunks per retrieval query."""

    expand_top_k: int = 5
    """Chunks requested by an expansion (with the original question)."""

    tool_executor: ToolExecutor | None = None
    """Runs tool calls under their contracts; None = every tool call gets an error result."""

    max_question_chars: int = 2000
    """Longer questions are refused with status `needs_clarification`."""

    filters: dict[str, Any] | None = field(default=None)
    """Passed unchanged to every `Retriever.retrieve` call (e.g. tenant / access filters)."""

    def __post_init__(self) -> None:
        if not 0.0 <= self.relevance_threshold <= 1.0:
            raise ConfigError(f"relevance_threshold must be in [0, 1], but got {self.relevance_threshold}")
        if self.min_evidence_relevance is not None and not 0.0 <= self.min_evidence_relevance <= 1.0:
            raise ConfigError(
                f"min_evidence_relevance must be in [0, 1] or None, but got {self.min_evidence_relevance}"
            )
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, but got {self.max_retries}")
        for name in ("top_k", "expand_top_k", "max_question_chars"):
            value = getattr(self, name)
            if value <= 0:
                raise ConfigError(f"{name} must be > 0, but got {value}")
        if isinstance(self.model, str):
            from control.model_mode import resolve_model

            self.model = resolve_model(self.model)

    @property
    def usable_relevance(self) -> float:
        """The relevance an evidence item needs to be used in an answer."""
        if self.min_evidence_relevance is not None:
            return self.min_evidence_relevance
        return self.relevance_threshold

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The resolved chat model, or None in offline mode."""
        return self.model if isinstance(self.model, BaseChatModel) else None
