"""The two vocabularies of a turn's outcome: where it was routed and how it ended."""

from __future__ import annotations

from typing import Literal

Route = Literal["retrieve", "tool", "answer", "clarify"]
"""Where `analyze` sends the question: knowledge base, a tool, a direct reply, or a question back."""

Status = Literal[
    "completed", "insufficient_evidence", "needs_clarification", "needs_confirmation", "degraded", "rejected"
]
"""Outcome of a turn; see `haygraph.control.api` for what each one means to a caller."""

OUTCOMES: dict[str, str] = {
    "completed": "answered",
    "insufficient_evidence": "refused",
    "rejected": "refused",
    "degraded": "degraded",
    "needs_clarification": "needs_clarification",
    "needs_confirmation": "needs_confirmation",
}
"""Each `Status` as the outcome operators count and trace: answered, refused, degraded or needs_*."""
