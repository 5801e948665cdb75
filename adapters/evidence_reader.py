"""The control plane's `Reader` over the trained reader, a Haystack component (`E5ExtractiveReader`).

Evidence items become Haystack `Document`s (id and text), the component reads them, and its
`ExtractedAnswer`s come back as `AnswerSpan`s with the offsets in the evidence text. The model loads
on first use; `warm_up_in_background` starts loading it in a thread (the CLI's one-shot ``ask`` then
overlaps it with retrieval).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from haystack import Document, tracing

from haygraph.control.evidence import Evidence
from haygraph.control.reading import NO_SPAN_MARGIN, AnswerSpan, Reading
from haygraph.retrieval.config import ReaderConfig
from haygraph.retrieval.reader.component import E5ExtractiveReader
from haygraph.retrieval.reader.model import BUNDLED

logger = logging.getLogger(__name__)

SPANS_PER_ITEM = 2
"""Spans kept per evidence item (the answer uses the best; the prompt of a chat model gets a few)."""
MEMO_ITEMS = 256
"""Items whose spans `EvidenceReader` keeps per (question, text), most recent first: a turn that expands
reads its question against mostly the same items twice (evaluate, expand, evaluate)."""


class EvidenceReader:
    """The trained extractive reader as the control plane's `haygraph.control.reading.Reader`."""

    def __init__(self, model: str = BUNDLED, *, threads: int = 0) -> None:
        self.component = E5ExtractiveReader(
            model=model, top_k=50, answers_per_document=SPANS_PER_ITEM, no_answer=False, threads=threads
        )
        self._loading: threading.Thread | None = None
        self._error: BaseException | None = None
        self._memo: OrderedDict[tuple[str, str], list[tuple[int, int, str, float]]] = OrderedDict()
        self._memo_lock = threading.Lock()

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

    def clear_memo(self) -> None:
        """Forget the items read so far (the next read of any item runs the model)."""
        with self._memo_lock:
            self._memo.clear()

    def read(self, question: str, evidence: Sequence[Evidence]) -> Reading:
        """The spans of `evidence` answering `question`, best margin first (`Reading`).

        An item read before against the same question (the same text) is not read again: its spans come
        from a memo of the last `MEMO_ITEMS` items (each item is read on its own, so they are the same).
        The read is a `haygraph.reader` span of Haystack's tracer (items, items the model ran on, spans,
        margin; the question only with content tracing).
        """
        if not evidence or not question.strip():
            return Reading(read=[e.id for e in evidence])
        with tracing.tracer.trace("haygraph.reader", tags={"haygraph.reader.items": len(evidence)}) as span:
            span.set_content_tag("haygraph.reader.question", question)
            reading, model_items = self._reading(question, evidence)
            span.set_tags(
                {
                    "haygraph.reader.model_items": model_items,  # the others' spans came from the memo
                    "haygraph.reader.spans": len(reading.spans),
                    "haygraph.reader.margin": reading.margin,
                }
            )
            return reading

    def _reading(self, question: str, evidence: Sequence[Evidence]) -> tuple[Reading, int]:
        """The reading of `evidence`, and how many of its items the model read (not in the memo)."""
        found: dict[str, list[tuple[int, int, str, float]]] = {}
        with self._memo_lock:
            for e in evidence:
                if (known := self._memo.get((question, e.text))) is not None:
                    self._memo.move_to_end((question, e.text))
                    found[e.id] = known
        unread = [e for e in evidence if e.id not in found]
        if unread:
            fresh = self._read(question, unread)
            found.update(fresh)
            with self._memo_lock:
                for e in unread:
                    self._memo[(question, e.text)] = fresh[e.id]
                while len(self._memo) > MEMO_ITEMS:
                    self._memo.popitem(last=False)
        spans = [
            AnswerSpan(evidence_id=e.id, start=start, end=end, text=text, margin=margin)
            for e in evidence
            for start, end, text, margin in found[e.id]
        ]
        spans.sort(key=lambda s: -s.margin)
        margin = spans[0].margin if spans else NO_SPAN_MARGIN
        return Reading(spans=spans, margin=margin, read=[e.id for e in evidence]), len(unread)

    def _read(
        self, question: str, evidence: Sequence[Evidence]
    ) -> dict[str, list[tuple[int, int, str, float]]]:
        """Run the component over `evidence`: each item's spans as (start, end, text, margin)."""
        self.warm_up()
        documents = [Document(id=e.id, content=e.text) for e in evidence]
        answers = self.component.run(query=question, documents=documents)["answers"]
        out: dict[str, list[tuple[int, int, str, float]]] = {e.id: [] for e in evidence}
        for a in answers:
            if a.data is None or a.document is None or a.document_offset is None:
                continue
            out[str(a.document.id)].append(
                (a.document_offset.start, a.document_offset.end, str(a.data), float(a.meta["margin"]))
            )
        return out


def evidence_reader(config: ReaderConfig) -> EvidenceReader | None:
    """The agent's reader for `config` (``query.reader``), loading in the background; None for ``none``."""
    if config.model.strip().lower() == "none":
        return None
    reader = EvidenceReader(config.model, threads=config.threads)
    reader.warm_up_in_background()
    return reader
