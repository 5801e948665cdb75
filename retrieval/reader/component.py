"""`E5ExtractiveReader`: the trained reader as a Haystack component, with `ExtractiveReader`'s interface.

Haystack 2 shipped ``ExtractiveReader`` (a transformers QA model run with torch); Haystack 3 keeps no
reader in its core. This component takes the same inputs and gives the same output, so it drops into a
user's own pipeline after a retriever::

    pipeline.add_component("reader", E5ExtractiveReader())
    pipeline.connect("retriever.documents", "reader.documents")
    pipeline.run({"retriever": {"query": q}, "reader": {"query": q}})["reader"]["answers"]

It runs the bundled multilingual reader (`haygraph.retrieval.reader.model.ReaderModel`: English,
Chinese, and a question in one over a passage in the other) on ONNX Runtime; no torch, no download.

Scores: an answer's score is ``sigmoid(span score - the document's no-answer score)`` (SQuAD 2.0's
margin as a probability: above 0.5 the reader prefers the span to "no answer" in that document); the
answer with ``data=None`` (when `no_answer`) scores the probability that no document holds an answer,
the product over documents of (1 - their best answer's score), as Haystack's reader computes it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.dataclasses import ExtractedAnswer

from haygraph.retrieval.reader.model import BUNDLED, PassageReading, ReaderModel
from haygraph.retrieval.reader.spans import sigmoid

logger = logging.getLogger(__name__)

CONTEXT_CHARS = 160
"""Characters of the document kept on each side of an answer as its `context`."""


@component
class E5ExtractiveReader:
    """Extracts answer spans from documents for a query, or says there is none (SQuAD 2.0 style)."""

    def __init__(
        self,
        model: str = BUNDLED,
        top_k: int = 20,
        score_threshold: float | None = None,
        answers_per_document: int = 3,
        no_answer: bool = True,
        threads: int = 0,
    ) -> None:
        """Create the reader.

        Args:
            model: ``"bundled"`` (the weights shipped in the package) or a folder written by
                ``python -m benchmarks.train_reader``.
            top_k: most answers returned (the no-answer answer not counted).
            score_threshold: drop answers scoring below it (None: keep all).
            answers_per_document: most spans taken from one document.
            no_answer: append the answer with ``data=None`` scoring "no document holds an answer".
            threads: ONNX Runtime intra-op threads (0: its choice).

        """
        if top_k <= 0:
            raise ValueError(f"top_k must be > 0, but got {top_k}")
        if score_threshold is not None and not 0.0 <= score_threshold <= 1.0:
            raise ValueError(f"score_threshold must be in [0, 1], but got {score_threshold}")
        if answers_per_document <= 0:
            raise ValueError(f"answers_per_document must be > 0, but got {answers_per_document}")
        if threads < 0:
            raise ValueError(f"threads must be >= 0, but got {threads}")
        self.model = model
        self.top_k = top_k
        self.score_threshold = score_threshold
        self.answers_per_document = answers_per_document
        self.no_answer = no_answer
        self.threads = threads
        self._reader: ReaderModel | None = None

    def warm_up(self) -> None:
        """Load the model (once; a missing or damaged weights file raises `ModelUnavailableError`)."""
        if self._reader is None:
            reader = ReaderModel(None if self.model == BUNDLED else self.model, threads=self.threads)
            reader.warm_up()
            self._reader = reader

    @component.output_types(answers=list[ExtractedAnswer])
    def run(
        self,
        query: str,
        documents: list[Document],
        top_k: int | None = None,
        score_threshold: float | None = None,
        no_answer: bool | None = None,
    ) -> dict[str, list[ExtractedAnswer]]:
        """Read `documents` for `query`: answers best first, then (``no_answer``) the no-answer answer.

        Documents without text content are skipped; the documents are not changed. No documents: no
        answers.
        """
        top_k = top_k if top_k is not None else self.top_k
        score_threshold = score_threshold if score_threshold is not None else self.score_threshold
        no_answer = no_answer if no_answer is not None else self.no_answer
        readable = [d for d in documents if isinstance(d.content, str) and d.content.strip()]
        if not readable or not query.strip():
            return {"answers": []}
        self.warm_up()
        assert self._reader is not None
        readings = self._reader.read(
            query, [d.content or "" for d in readable], top_n=self.answers_per_document
        )
        answers = [a for r in readings for a in self._answers(query, readable[r.passage], r)]
        answers.sort(key=lambda a: -a.score)
        if score_threshold is not None:
            answers = [a for a in answers if a.score >= score_threshold]
        answers = answers[:top_k]
        if no_answer:
            none = 1.0
            for r in readings:
                none *= 1.0 - (sigmoid(r.margin) if r.spans else 0.0)
            answers.append(ExtractedAnswer(query=query, score=none, data=None, meta={}))
        return {"answers": answers}

    @staticmethod
    def _answers(query: str, document: Document, reading: PassageReading) -> list[ExtractedAnswer]:
        text = document.content or ""
        out = []
        for span in reading.spans:
            lo = max(0, span.start - CONTEXT_CHARS)
            hi = min(len(text), span.end + CONTEXT_CHARS)
            out.append(
                ExtractedAnswer(
                    query=query,
                    score=sigmoid(span.score - reading.null_score),
                    data=span.text,
                    document=dataclasses.replace(document),
                    context=text[lo:hi],
                    document_offset=ExtractedAnswer.Span(span.start, span.end),
                    context_offset=ExtractedAnswer.Span(span.start - lo, span.end - lo),
                    meta={
                        "span_score": span.score,
                        "null_score": reading.null_score,
                        "margin": span.score - reading.null_score,
                    },
                )
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            model=self.model,
            top_k=self.top_k,
            score_threshold=self.score_threshold,
            answers_per_document=self.answers_per_document,
            no_answer=self.no_answer,
            threads=self.threads,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> E5ExtractiveReader:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
