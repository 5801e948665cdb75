"""`CachedDocumentEmbedder`: sentence-transformers document embeddings with an on-disk cache.

Embedding is the slow step (~30–50 chunks/s on two CPU cores), so vectors are cached in SQLite keyed by
(model, content hash): re-indexing, tests and evaluations never embed an unchanged chunk twice. The
actual embedding is done by Haystack's `SentenceTransformersDocumentEmbedder` (``backend="torch"``),
by `OnnxSentenceEncoder` (``"onnx"``, ``"onnx-int8"``) or by the bundled multilingual-e5-small
(`E5Encoder`, ``"e5-multilingual"``, with e5's ``passage: `` prefix). Texts are embedded longest first,
so each batch holds texts of similar length and pads little. The int8 model's vectors differ from the
fp32 ones, so they are cached under their own key (as are e5's); ONNX fp32 reproduces the torch vectors
and shares theirs. So once a torch model's fp32 ONNX copy is exported (`export_onnx_twin`, which
``haygraph index`` calls), ``backend="torch"`` runs on that copy (`onnx_twin`) for queries and for
indexing, and imports no torch.

Embeddings leave this component as float32 NumPy rows (views of one array per slice), never as Python
float lists: at 100k chunks a list copy of the vectors alone costs over 1 GB.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from tqdm import tqdm

from haygraph.cache import default_cache_dir
from haygraph.retrieval.config import BUNDLED_MODEL, E5_BACKEND, E5_MODEL
from haygraph.retrieval.e5_encoder import E5_CACHE_KEY, E5Encoder, choose_backend
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.model_paths import is_bundled, resolve_model
from haygraph.retrieval.onnx_encoder import (
    EXPORT_REVISION,
    ONNX_BACKENDS,
    OnnxSentenceEncoder,
    export_onnx,
    length_order,
)

EMBEDDER_BACKENDS = ("auto", "torch", *ONNX_BACKENDS, E5_BACKEND)
"""Valid values of `backend` ("auto": chosen from the first documents embedded, `choose_backend`)."""

logger = logging.getLogger(__name__)

CACHE_SLICE = 256
"""Chunks embedded (and cached) per slice."""


def check_backend(backend: str) -> str:
    """Return `backend` if it is one of `EMBEDDER_BACKENDS`, else raise ValueError listing them."""
    if backend not in EMBEDDER_BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(EMBEDDER_BACKENDS)}, but got {backend!r}")
    return backend


def cache_model_key(model: str, backend: str) -> str:
    """Key under which `model`'s vectors are cached: one per model, and a separate one for int8.

    Every spelling of the bundled model shares one key; ONNX fp32 shares the torch key (same vectors);
    the 4-bit multilingual-e5-small has its own.
    """
    if backend == E5_BACKEND:
        return E5_CACHE_KEY
    key = BUNDLED_MODEL if is_bundled(model) else model
    return f"{key}|onnx-int8" if backend == "onnx-int8" else key


def onnx_encoder(model: str, backend: str, cache_dir: str | None) -> OnnxSentenceEncoder:
    """An (unloaded) ONNX encoder for `model`, exporting into `<cache_dir>/onnx/<model key>`."""
    directory = Path(cache_dir) if cache_dir else default_cache_dir()
    key = f"{cache_model_key(model, 'onnx')}|export {EXPORT_REVISION}"
    name = hashlib.sha256(key.encode()).hexdigest()[:16]
    return OnnxSentenceEncoder(
        resolve_model(model), directory / "onnx" / name, quantize=backend == "onnx-int8"
    )


def onnx_twin(model: str, cache_dir: str | None) -> OnnxSentenceEncoder | None:
    """The fp32 ONNX copy of torch model `model`, when exported and runnable without torch (else None).

    ONNX fp32 gives the torch vectors within float error (`benchmarks/bench_embedding.py`; the tests
    compare the rankings), so a store's relevance calibration and answer decision hold unchanged.
    """
    try:
        encoder = onnx_encoder(model, "onnx", cache_dir)
    except ModelUnavailableError:  # a model that is not on this machine: the torch path says so
        return None
    return encoder if encoder.model_path.is_dir() and encoder.runs_without_torch() else None


def export_onnx_twin(model: str, backend: str, cache_dir: str | None) -> Path | None:
    """Export the fp32 ONNX copy the query path of a ``torch`` store runs on, unless it exists; its path.

    Returns None, without exporting, for other backends, a model that is not a local directory, or
    where onnxruntime is not installed. The export loads the model with torch (seconds, once per
    cache directory); an export that fails is logged and leaves queries on torch.
    """
    if backend != "torch" or importlib.util.find_spec("onnxruntime") is None:
        return None
    try:
        encoder = onnx_encoder(model, "onnx", cache_dir)
        if not encoder.model_path.is_dir():
            return None
        if not encoder.export_path().is_file():
            export_onnx(encoder.model_path, encoder.export_dir, quantize=False)
    except (ModelUnavailableError, ImportError, OSError, RuntimeError) as exc:
        logger.warning("could not export %s to ONNX for fast queries (queries use torch): %s", model, exc)
        return None
    return encoder.export_path()


class EmbeddingCache:
    """A SQLite table of float32 vectors keyed by sha256(model + NUL + text)."""

    def __init__(self, directory: Path, model_key: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / "embeddings.sqlite"
        self.model_key = model_key
        self._lock = threading.Lock()
        with self._connect() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def key(self, text: str) -> str:
        """Cache key of `text` for this model."""
        return hashlib.sha256(f"{self.model_key}\x00{text}".encode()).hexdigest()

    def get_many(self, keys: list[str]) -> dict[str, np.ndarray]:
        """Cached vectors for the keys that are present."""
        found: dict[str, np.ndarray] = {}
        with self._lock, self._connect() as conn:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in conn.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        """Store vectors (existing keys are replaced)."""
        with self._lock, self._connect() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )


def with_vector(doc: Document, vector: np.ndarray) -> Document:
    """A copy of `doc` whose `embedding` is the float32 row `vector` itself, not a list of Python floats.

    `Document.__post_init__` turns an ndarray embedding into a list (1.x compatibility), so the row is
    set on the fresh copy after construction (with `object.__setattr__`: Haystack warns about mutating
    a document other components may share, which a copy made here is not). Downstream code only
    iterates over it or hands it to `np.asarray`.
    """
    out = replace(doc, embedding=None)
    object.__setattr__(out, "embedding", vector)
    return out


@component
class CachedDocumentEmbedder:
    """Embeds documents with a sentence-transformers model, reusing cached vectors by content hash."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        batch_size: int = 32,
        cache_dir: str | None = None,
        use_cache: bool = True,
        progress_bar: bool = False,
        backend: str = "torch",
        threads: int = 0,
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        if threads < 0:
            raise ValueError(f"threads must be >= 0, but got {threads}")
        self.backend = check_backend(backend)
        self.threads = threads
        self.model = model
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.progress_bar = progress_bar
        self._embedder: Any = None
        self._cache: EmbeddingCache | None = None
        self.stats = {"cached": 0, "embedded": 0}
        self.on_progress: Callable[[int, int], None] | None = None
        """Called with (chunks done, chunks in this run): once after the cache lookup, then per slice."""

    def warm_up(self) -> None:
        """Open the cache (idempotent). The model, and sentence-transformers itself, load on the first miss.

        Importing sentence-transformers (torch, transformers) alone takes seconds, so a run whose chunks
        are all cached — or a re-index that skipped every unchanged source — never pays for it. With
        backend "auto" the cache opens once the first documents have chosen the backend.
        """
        if self.use_cache and self._cache is None and self.backend != "auto":
            directory = Path(self.cache_dir) if self.cache_dir else default_cache_dir()
            self._cache = EmbeddingCache(
                directory / "embeddings", model_key=cache_model_key(self.model, self.backend)
            )

    def resolve_backend(self, texts: list[str]) -> None:
        """Replace backend "auto" by the one `choose_backend` picks for `texts` (and its model).

        Auto chooses between the bundled models: with any other model it means torch.
        """
        self.backend = choose_backend(texts) if is_bundled(self.model) else "torch"
        if self.backend == E5_BACKEND:
            self.model = E5_MODEL
        logger.info("embedding model chosen for this corpus: %s (%s)", self.model, self.backend)

    def _load_model(self) -> None:
        """Create (once) the backend's embedder and load its model, resolved offline.

        A torch model whose fp32 ONNX copy is exported (`onnx_twin`) runs on ONNX Runtime: the same
        vectors (they share the cache) without loading torch, and as fast or faster per chunk since the
        export uses eager attention (`benchmarks/bench_indexing.py`, one run, 2 idle cores: SciFact
        abstracts 38.9 against torch's 38.5 chunks/s, handbook chunks 95.6 against 73.1; loading 0.13 s
        against 3.5 s).
        """
        if self._embedder is None and self.backend in ("torch", "auto"):
            self._embedder = onnx_twin(self.model, self.cache_dir)
        if self._embedder is None:
            if self.backend in ("torch", "auto"):
                from haystack_integrations.components.embedders.sentence_transformers import (
                    SentenceTransformersDocumentEmbedder,
                )

                self._embedder = SentenceTransformersDocumentEmbedder(
                    model=resolve_model(self.model),
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    progress_bar=False,
                    local_files_only=True,
                )
            elif self.backend == E5_BACKEND:
                self._embedder = E5Encoder(threads=self.threads, batched_passages=True)
            else:
                self._embedder = onnx_encoder(self.model, self.backend, self.cache_dir)
        self._embedder.warm_up()

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Copies of `documents` with normalized float32 embeddings (cached ones are not recomputed)."""
        if not documents:
            return {"documents": []}
        texts = [d.content or "" for d in documents]
        if self.backend == "auto":
            self.resolve_backend(texts)
        self.warm_up()
        vectors: dict[int, np.ndarray] = {}
        keys: list[str] = []
        if self._cache is not None:
            keys = [self._cache.key(t) for t in texts]
            found = self._cache.get_many(sorted(set(keys)))
            vectors = {i: found[k] for i, k in enumerate(keys) if k in found}
        missing = [i for i in range(len(documents)) if i not in vectors]
        self._report(len(documents) - len(missing), len(documents))
        if missing:
            self._load_model()  # skipped entirely when every vector is cached
            self._embed_missing(missing, texts, keys, vectors)
        self.stats = {"cached": len(documents) - len(missing), "embedded": len(missing)}
        logger.info("embedded %d chunks, %d from cache", len(missing), len(documents) - len(missing))
        return {"documents": [with_vector(d, vectors[i]) for i, d in enumerate(documents)]}

    def _embed_missing(
        self, missing: list[int], texts: list[str], keys: list[str], vectors: dict[int, np.ndarray]
    ) -> None:
        """Embed in slices of CACHE_SLICE, caching each slice at once: an interrupted run keeps its work.

        `missing` is taken longest text first, so every slice (and every batch in it) has texts of
        similar length.
        """
        missing = [missing[j] for j in length_order([texts[i] for i in missing])]
        if isinstance(self._embedder, E5Encoder):  # the whole job decides the engine, not each slice
            self._embedder.plan([texts[i] for i in missing])
        try:
            self._embed_slices(missing, texts, keys, vectors)
        finally:
            if isinstance(self._embedder, E5Encoder):
                self._embedder.end_job()

    def _embed_slices(
        self, missing: list[int], texts: list[str], keys: list[str], vectors: dict[int, np.ndarray]
    ) -> None:
        """`_embed_missing`'s loop: each slice embedded, cached and reported."""
        bar = tqdm(total=len(missing), desc="embedding", unit="chunk", disable=not self.progress_bar)
        with bar:
            for start in range(0, len(missing), CACHE_SLICE):
                part = missing[start : start + CACHE_SLICE]
                block = self._embed_texts([texts[i] for i in part])
                new: dict[str, np.ndarray] = {}
                for row, i in enumerate(part):
                    vectors[i] = block[row]
                    if keys:
                        new[keys[i]] = vectors[i]
                if self._cache is not None and new:
                    self._cache.put_many(new)
                bar.update(len(part))
                self._report(len(texts) - len(missing) + start + len(part), len(texts))

    def _report(self, done: int, total: int) -> None:
        if self.on_progress is not None:
            self.on_progress(done, total)

    def _embed_texts(self, texts: list[str]) -> np.ndarray:
        """An (n, dim) float32 array of normalized embeddings of `texts`, by the configured backend."""
        if isinstance(self._embedder, OnnxSentenceEncoder | E5Encoder):
            return self._embedder.encode(texts, batch_size=self.batch_size)
        fresh = self._embedder.run(documents=[Document(content=t) for t in texts])["documents"]
        return np.asarray([d.embedding for d in fresh], dtype=np.float32)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            backend=self.backend,
            model=self.model,
            batch_size=self.batch_size,
            cache_dir=self.cache_dir,
            use_cache=self.use_cache,
            progress_bar=self.progress_bar,
            threads=self.threads,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CachedDocumentEmbedder:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
