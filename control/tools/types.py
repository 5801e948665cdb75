"""Types shared by the graph and the tool executor: requested calls, their results, the executor protocol."""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

ToolStatus = Literal[
    "ok",
    "invalid_arguments",
    "unknown_tool",
    "not_allowed",
    "timeout",
    "error",
    "budget_exceeded",
    "declined",
]
"""`declined`: a side-effect call the user did not confirm (`haygraph.control.graph.consent`); not run."""


class ToolCall(BaseModel):
    """A tool call requested by the router or the model."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(
        description="Call id, unique within the turn; with the thread id it forms the request id."
    )
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    """The outcome of one call; errors are results too, never exceptions out of the graph."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    status: ToolStatus
    content: Any = None
    error: str | None = None
    attempts: int = 0
    elapsed_ms: float = 0.0


class ToolExecutor(Protocol):
    """Executes the calls of one turn under the contracts, allow-list and call budget."""

    def execute(
        self, calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
    ) -> list[ToolResult]:
        """Run `calls` in order and return one result per call (or a budget_exceeded result).

        `filters` are the session's retrieval filters, handed to every tool (`ToolRuntimeInfo.filters`).
        """
        ...
