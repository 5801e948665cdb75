"""What an extractive reader says about the evidence: answer spans and how sure it is there is one.

The control plane defines the `Reader` protocol and its result, as it does `Retriever` and `Evidence`
(`haygraph.control.evidence`); the adapters implement it with the trained reader, a Haystack
component (`haygraph.adapters.evidence_reader.EvidenceReader` over
`haygraph.retrieval.reader.E5ExtractiveReader`). Each evaluate step reads the top evidence (and the best
items in the other language); the adapter reads an item once per question. The answer-or-refuse
decision weighs the best span's ``margin`` and whether that span is in the other language than the
question (`haygraph.control.planning.decision.signals.reader_signals`; the weights shipped in
``decision/answerability_reader.json``, fitted on tune parts, give them weight: see that file). Offline,
when the best span is in the other language, the answer quotes the unit that holds it, its value first
when the margin clears the decision's ``lead_margin`` (`haygraph.control.planning.reader_answer`); in the
question's language the sentence picker's answer stands, with the span's table row in place of a whole
table when the question names that row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from haygraph.control.evidence import Evidence

NO_SPAN_MARGIN = -20.0
"""The `Reading.margin` when no evidence had a readable span (far below any trained threshold)."""


class AnswerSpan(BaseModel):
    """A span of one evidence item's text that answers the question, by character offsets."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evidence_id: str = Field(description="The evidence item the span is in.")
    start: int = Field(ge=0, description="Offset of the span's first character in the evidence text.")
    end: int = Field(ge=0, description="Offset just past the span's last character in the evidence text.")
    text: str = Field(description="The span: evidence.text[start:end].")
    margin: float = Field(description="Span score minus the item's no-answer score (> 0: an answer).")


class Reading(BaseModel):
    """The reader's result over the evidence it read: spans best first and the best margin."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    spans: list[AnswerSpan] = Field(default_factory=list, description="Answer spans, best margin first.")
    margin: float = Field(
        default=NO_SPAN_MARGIN,
        description="The best span's margin over its item's no-answer score; `NO_SPAN_MARGIN` when none.",
    )
    read: list[str] = Field(default_factory=list, description="Ids of the evidence items read, in order.")

    @property
    def best(self) -> AnswerSpan | None:
        """The best span, or None."""
        return self.spans[0] if self.spans else None


@runtime_checkable
class Reader(Protocol):
    """Anything that reads a question against evidence and points at answer spans."""

    def read(self, question: str, evidence: Sequence[Evidence]) -> Reading:
        """Return the spans of `evidence` that answer `question`, best first, and the best margin."""
        ...
