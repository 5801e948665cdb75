"""`OnnxCrossEncoder`: a local cross-encoder (sequence classifier) run with ONNX Runtime, fp32 or int8.

Why our own and not sentence-transformers' ``CrossEncoder(backend="onnx")``: that backend needs
`optimum-onnx`, which pins ``transformers<4.58`` while we run transformers 5 (the same reason as
`haygraph.retrieval.onnx_encoder`). The classifier is exported once with `torch.onnx.export` from the
local weights, optionally quantised with ONNX Runtime's `quantize_dynamic` (MatMul only, per channel),
into ``<cache>/onnx/<hash of the model directory and its weights' mtime>``, so a retrained model in
the same folder is exported again. Scores are the sigmoid of the single logit, as the torch ranker's.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.onnx_encoder import (
    EXPORT_REVISION,
    export_model,
    length_order,
    model_feeds,
    open_session,
    require_onnx,
)

logger = logging.getLogger(__name__)

RERANKER_BACKENDS = ("torch", "onnx", "onnx-int8")
"""Valid values of ``reranker.backend``."""


def export_dir_for(model_path: Path, cache_dir: Path) -> Path:
    """The export folder of ``model_path``: keyed by its resolved path and its weights' modification time."""
    weights = [p for p in (model_path / "model.safetensors", model_path / "pytorch_model.bin") if p.is_file()]
    stamp = str(weights[0].stat().st_mtime_ns) if weights else ""
    key = hashlib.sha256(f"{model_path.resolve()}|{stamp}|{EXPORT_REVISION}".encode()).hexdigest()[:16]
    return cache_dir / "onnx" / f"reranker-{key}"


def export_classifier(model_path: Path, out_dir: Path, quantize: bool) -> Path:
    """Export the sequence classifier at ``model_path`` to ``out_dir/model.onnx`` (and the int8 copy) once.

    The same export as the embedding model's (`haygraph.retrieval.onnx_encoder.export_model`), returning
    the logits.
    """

    def load() -> Any:
        from transformers import AutoModelForSequenceClassification

        logger.info("exporting the reranker %s to ONNX in %s (once)", model_path, out_dir)
        return AutoModelForSequenceClassification.from_pretrained(
            str(model_path), local_files_only=True, attn_implementation="eager"
        )

    return export_model(out_dir, quantize, load, "logits")


def _max_length(model_path: Path, tokenizer: Any) -> int:
    """The pair length the model was trained with, capped at 512.

    ``max_seq_length`` (older sentence-transformers), else the tokenizer's ``model_max_length`` (where
    sentence-transformers 6 saves it).
    """
    config = model_path / "sentence_bert_config.json"
    if config.is_file():
        saved = json.loads(config.read_text(encoding="utf-8")).get("max_seq_length")
        if saved:
            return min(int(saved), 512)
    return min(int(getattr(tokenizer, "model_max_length", 512) or 512), 512)


class OnnxCrossEncoder:
    """Scores (query, document) pairs with an exported ONNX copy of a local cross-encoder."""

    def __init__(self, model_path: str, cache_dir: Path, quantize: bool = False, threads: int = 0) -> None:
        self.model_path = Path(model_path)
        self.cache_dir = cache_dir
        self.quantize = quantize
        self.threads = threads
        self._session: Any = None
        self._tokenizer: Any = None
        self._inputs: set[str] = set()
        self._max_len = 512

    def warm_up(self) -> None:
        """Export (first time only) and load the ONNX model and the tokenizer (idempotent)."""
        if self._session is not None:
            return
        require_onnx("reranker.backend")
        from transformers import AutoTokenizer

        if not self.model_path.is_dir():
            raise ModelUnavailableError(
                f"reranker.backend onnx needs a local model directory, got {self.model_path}"
            )
        path = export_classifier(
            self.model_path, export_dir_for(self.model_path, self.cache_dir), self.quantize
        )
        self._session, self._inputs = open_session(path, self.threads, spinning=False)
        self._tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        self._max_len = _max_length(self.model_path, self._tokenizer)

    def score(self, query: str, documents: list[str], batch_size: int = 32) -> np.ndarray:
        """Sigmoid probabilities of (query, document) for every document, in input order."""
        self.warm_up()
        out = np.zeros(len(documents), dtype=np.float32)
        order = length_order(documents)
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            enc = self._tokenizer(
                [query] * len(part),
                [documents[i] for i in part],
                padding=True,
                truncation="longest_first",
                max_length=self._max_len,
                return_tensors="np",
            )
            feeds = model_feeds(enc, self._inputs)
            logits = self._session.run(None, feeds)[0].reshape(len(part), -1)[:, 0]
            out[part] = 1.0 / (1.0 + np.exp(-logits))
        return out
