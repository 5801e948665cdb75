"""The control plane's `Reader` over the trained reader, a Haystack component (`E5ExtractiveReader`).

Evidence items become Haystack `Document`s (id and text), the component reads them, and its
`ExtractedAnswer`s come back as `AnswerSpan`s with the offsets in the evidence text. The model loads
on first use; `warm_up_in_background` starts loading it in a thread (the CLI's one-shot ``ask`` then
overlaps it with retrieval).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from haystack import Document

from haygraph.control.evidence import Evidence
from haygraph.control.reading import NO_SPAN_MARGIN, AnswerSpan, Reading
from haygraph.retrieval.config import ReaderConfig
from haygraph.retrieval.reader.component import E5ExtractiveReader
from haygraph.retrieval.reader.model import BUNDLED

logger = logging.getLogger(__name__)

SPANS_PER_ITEM = 2
"""Spans kept per evidence item (the answer uses the best; the prompt of a chat model gets a few)."""


class EvidenceReader:
    """The trained extractive reader as the control plane's `haygraph.control.reading.Reader`."""

    def __init__(self, model: str = BUNDLED, *, threads: int = 0) -> None:
        self.component = E5ExtractiveReader(
            model=model, top_k=50, answers_per_document=SPANS_PER_ITEM, no_answer=False, threads=threads
        )
        self._loading: threading.Thread | None = None
        self._error: BaseException | None = None

    def warm_up_in_background(self) -> None:
        """Start loading the model in a daemon thread (idempotent); `read` waits for it."""
        if self._loading is not None:
            return

        def load() -> None:
            try:
                self.component.warm_up()
            except BaseException as exc:  # re-raised by `read` in the caller's thread
                self._error = exc

        self._loading = threading.Thread(target=load, name="reader-warm-up", daemon=True)
        self._loading.start()

    def warm_up(self) -> None:
        """Load the model now (or wait for the background load); raises what loading raised."""
        if self._loading is not None:
            self._loading.join()
            if self._error is not None:
                raise self._error
        self.component.warm_up()

    def read(self, question: str, evidence: Sequence[Evidence]) -> Reading:
        """The spans of `evidence` answering `question`, best margin first (`Reading`)."""
        if not evidence or not question.strip():
            return Reading(read=[e.id for e in evidence])
        self.warm_up()
        documents = [Document(id=e.id, content=e.text) for e in evidence]
        answers = self.component.run(query=question, documents=documents)["answers"]
        spans = [
            AnswerSpan(
                evidence_id=str(a.document.id),
                start=a.document_offset.start,
                end=a.document_offset.end,
                text=str(a.data),
                margin=float(a.meta["margin"]),
            )
            for a in answers
            if a.data is not None and a.document is not None and a.document_offset is not None
        ]
        spans.sort(key=lambda s: -s.margin)
        return Reading(
            spans=spans, margin=spans[0].margin if spans else NO_SPAN_MARGIN, read=[e.id for e in evidence]
        )


def evidence_reader(config: ReaderConfig) -> EvidenceReader | None:
    """The agent's reader for `config` (``query.reader``), loading in the background; None for ``none``."""
    if config.model.strip().lower() == "none":
        return None
    reader = EvidenceReader(config.model, threads=config.threads)
    reader.warm_up_in_background()
    return reader
