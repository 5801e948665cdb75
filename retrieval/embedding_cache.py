"""`CachedDocumentEmbedder`: sentence-transformers document embeddings with an on-disk cache.

Embedding is the slow step (~30–50 chunks/s on two CPU cores), so vectors are cached in SQLite keyed by
(model, content hash): re-indexing, tests and evaluations never embed an unchanged chunk twice. The
actual embedding is done by Haystack's `SentenceTransformersDocumentEmbedder`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from tqdm import tqdm

from haygraph.retrieval.config import BUNDLED_MODEL
from haygraph.retrieval.model_paths import is_bundled, resolve_model

logger = logging.getLogger(__name__)

CACHE_SLICE = 256
"""Chunks embedded (and cached) per slice."""


def default_cache_dir() -> Path:
    """`$HAYGRAPH_CACHE_DIR`, else `~/.cache/haygraph` (read when called, never at import)."""
    env = os.environ.get("HAYGRAPH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "haygraph"


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
    ) -> None:
        if batch_size <= 0:
            raise ValueError(f"batch_size must be > 0, but got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self.cache_dir = cache_dir
        self.use_cache = use_cache
        self.progress_bar = progress_bar
        self._embedder: Any = None
        self._cache: EmbeddingCache | None = None
        self.stats = {"cached": 0, "embedded": 0}

    def warm_up(self) -> None:
        """Resolve the model offline and open the cache (idempotent); the model itself loads on first miss."""
        if self._embedder is not None:
            return
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        path = resolve_model(self.model)
        self._embedder = SentenceTransformersDocumentEmbedder(
            model=path,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            progress_bar=False,
            local_files_only=True,
        )
        if self.use_cache:
            directory = Path(self.cache_dir) if self.cache_dir else default_cache_dir()
            # every spelling of the bundled model shares one cache key (its vectors are the same)
            key = BUNDLED_MODEL if is_bundled(self.model) else self.model
            self._cache = EmbeddingCache(directory / "embeddings", model_key=key)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Return copies of `documents` with normalized embeddings (cached ones are not recomputed)."""
        if not documents:
            return {"documents": []}
        self.warm_up()
        texts = [d.content or "" for d in documents]
        vectors: dict[int, np.ndarray] = {}
        keys: list[str] = []
        if self._cache is not None:
            keys = [self._cache.key(t) for t in texts]
            found = self._cache.get_many(sorted(set(keys)))
            vectors = {i: found[k] for i, k in enumerate(keys) if k in found}
        missing = [i for i in range(len(documents)) if i not in vectors]
        if missing:
            self._embedder.warm_up()  # idempotent; skipped entirely when every vector is cached
            self._embed_missing(missing, texts, keys, vectors)
        self.stats = {"cached": len(documents) - len(missing), "embedded": len(missing)}
        logger.info("embedded %d chunks, %d from cache", len(missing), len(documents) - len(missing))
        return {"documents": [replace(d, embedding=vectors[i].tolist()) for i, d in enumerate(documents)]}

    def _embed_missing(
        self, missing: list[int], texts: list[str], keys: list[str], vectors: dict[int, np.ndarray]
    ) -> None:
        """Embed in slices of CACHE_SLICE, caching each slice at once: an interrupted run keeps its work."""
        bar = tqdm(total=len(missing), desc="embedding", unit="chunk", disable=not self.progress_bar)
        with bar:
            for start in range(0, len(missing), CACHE_SLICE):
                part = missing[start : start + CACHE_SLICE]
                fresh = self._embedder.run(documents=[Document(content=texts[i]) for i in part])["documents"]
                new: dict[str, np.ndarray] = {}
                for i, doc in zip(part, fresh, strict=True):
                    vectors[i] = np.asarray(doc.embedding, dtype=np.float32)
                    if keys:
                        new[keys[i]] = vectors[i]
                if self._cache is not None and new:
                    self._cache.put_many(new)
                bar.update(len(part))

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(
            self,
            model=self.model,
            batch_size=self.batch_size,
            cache_dir=self.cache_dir,
            use_cache=self.use_cache,
            progress_bar=self.progress_bar,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CachedDocumentEmbedder:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
