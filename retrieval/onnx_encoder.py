"""`OnnxSentenceEncoder`: a sentence-transformers model run with ONNX Runtime (fp32 or dynamic int8).

Why our own and not sentence-transformers' ``backend="onnx"``: that backend needs `optimum-onnx`, whose
only release pins ``transformers<4.58`` while we run transformers 5. So the model's transformer is
exported here with `torch.onnx.export` from the local weights (offline, once, into a cache directory),
optionally quantised with ONNX Runtime's `quantize_dynamic` (what optimum's ``avx512_vnni``/``arm64``
presets call, MatMul-only and per channel), and run with an `onnxruntime.InferenceSession`. Pooling
(mean over the attention mask) and L2 normalisation follow the model's own `1_Pooling`/`2_Normalize`
modules, done in NumPy. Texts are tokenized by the `tokenizers` library from the model's
``tokenizer.json`` (`FastTokenizer`), so once the export exists neither torch nor transformers is
imported: the query path of a torch-indexed store runs on this encoder (`QueryEmbedder`).

`benchmarks/bench_embedding.py` measures the backends side by side (figures in docs/embeddings.md):
fp32 gives the same vectors as torch; int8 differs slightly, so it has its own cache key.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.onnx_tokenizer import FastTokenizer, fast_tokenizer_available

logger = logging.getLogger(__name__)

ONNX_BACKENDS = ("onnx", "onnx-int8")
"""Embedder backends served by this module."""

_EXPORT_LOCK = threading.Lock()

EXPORT_REVISION = "2"
"""Revision of the exported graph, part of every export folder's name: bumping it re-exports once.

Revision 2 exports with eager attention (plain MatMul/Softmax, which ONNX Runtime runs 1.4x faster in
fp32 and 1.8x faster in int8 than the scaled-dot-product pattern of revision 1). The weights, and so the
vectors, are the same: int8 quantises the same 36 weight matrices to the same bytes."""

RUN_SIZE = 4
"""Most texts one ONNX Runtime call embeds. Measured on SciFact abstracts (int8, 2 cores, one run of
`benchmarks/bench_indexing.py --scifact 1000 --run-sizes 0,4,8,32` per size): 1 text 68.9 texts/s,
4 79.5, 8 74.8, 32 59.9 (why smaller calls run faster here was not established).

Dynamic int8 quantises each MatMul's input with one scale per call, taken over every text in it and
their padding, so an int8 vector depends a little on the texts it is embedded with (cosine to the
unbatched vector 0.996 on average for 32 SciFact abstracts in one call, 0.990 for a short query batched
with one abstract). Queries are therefore always embedded one per call (`QueryEmbedder.remember` too):
an evaluation measures the vectors a live query gets. Chunks are embedded longest first, so a call
holds texts of similar length."""


def length_order(texts: list[str]) -> list[int]:
    """Indices of `texts`, longest first: batches of similar length pad (and waste) the least."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


def require_onnx(setting: str) -> None:
    """Raise `ModelUnavailableError` naming `setting` unless onnxruntime and transformers import."""
    try:
        import onnxruntime  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ModelUnavailableError(
            f"{setting} 'onnx'/'onnx-int8' needs onnxruntime and onnx: pip install 'haygraph[onnx]'"
        ) from exc


def open_session(path: Path, threads: int | None, *, spinning: bool = True) -> tuple[Any, set[str]]:
    """An onnxruntime CPU session of the model at `path`, and the names of its inputs.

    `threads` sets the intra-op threads (None: onnxruntime's choice); `spinning` False stops threads
    busy-waiting between ops (on a shared, oversubscribed CPU spinning costs more than it saves).
    A file ONNX Runtime cannot load (damaged on disk) raises `ModelUnavailableError` naming the
    folder to delete: the next run exports the model into it again.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    if not spinning:
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own (pybind) exception types
        raise ModelUnavailableError(
            f"the ONNX model {path} cannot be loaded ({str(exc).splitlines()[0][:200]}); it is a cached "
            f"export: delete the folder {path.parent} and the next run exports the model again"
        ) from exc
    return session, {i.name for i in session.get_inputs()}


def model_feeds(encoding: Any, inputs: set[str]) -> dict[str, np.ndarray]:
    """The tokenizer's arrays that the model takes, as int64.

    Zero ``token_type_ids`` are added when the model takes them and the tokenizer gave none.
    """
    feeds = {k: np.asarray(v, dtype=np.int64) for k, v in encoding.items() if k in inputs}
    if "token_type_ids" in inputs and "token_type_ids" not in feeds:
        feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
    return feeds


def _pooling_mode(model_path: Path) -> str:
    """The model's pooling ('mean' or 'cls'), read from its `1_Pooling/config.json` (mean if absent)."""
    config = model_path / "1_Pooling" / "config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        if data.get("pooling_mode_cls_token"):
            return "cls"
        if not data.get("pooling_mode_mean_tokens", True):
            raise ModelUnavailableError(f"{config}: only mean or CLS pooling can run on ONNX")
    return "mean"


def _max_seq_length(model_path: Path) -> int:
    config = model_path / "sentence_bert_config.json"
    if config.is_file():
        return int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", 512))
    return 512


def export_onnx(model_path: Path, out_dir: Path, quantize: bool) -> Path:
    """Export the transformer at `model_path` to `out_dir/model.onnx` (and `model_int8.onnx`) once.

    Returns the path of the requested file (see `export_model`). Needs torch only on the first call.
    """

    def load() -> Any:
        from transformers import AutoModel

        logger.info("exporting %s to ONNX in %s (once)", model_path, out_dir)
        return AutoModel.from_pretrained(str(model_path), local_files_only=True, attn_implementation="eager")

    return export_model(out_dir, quantize, load, "last_hidden_state")


def export_model(out_dir: Path, quantize: bool, load: Callable[[], Any], output: str) -> Path:
    """Export the transformers model `load()` returns to `out_dir/model.onnx` (and `model_int8.onnx`) once.

    The graph takes ``input_ids``, ``attention_mask`` and ``token_type_ids`` and returns the model
    output's field `output` (``last_hidden_state``, ``logits``); `load` is only called when no fp32 export
    exists yet. Returns the path of the requested file. Writes to a temporary name and renames, so an
    interrupted export never leaves a truncated model behind.
    """
    fp32 = out_dir / "model.onnx"
    target = out_dir / "model_int8.onnx" if quantize else fp32
    with _EXPORT_LOCK:
        if target.is_file():
            return target
        out_dir.mkdir(parents=True, exist_ok=True)
        if not fp32.is_file():
            import torch

            model = _Output(load().eval(), output)
            ids = torch.ones((2, 8), dtype=torch.long)
            tmp = out_dir / f"model.onnx.{os.getpid()}.tmp"
            axes = {0: "batch", 1: "sequence"}
            # the tracer's TracerWarnings concern control flow the export does not take; not for users
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    model,
                    (ids, torch.ones_like(ids), torch.zeros_like(ids)),
                    str(tmp),
                    input_names=["input_ids", "attention_mask", "token_type_ids"],
                    output_names=[output],
                    dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes},
                    opset_version=17,
                    dynamo=False,
                )
            tmp.replace(fp32)
        if quantize:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            logger.info("quantising %s to dynamic int8 (once)", fp32)
            tmp = out_dir / f"model_int8.onnx.{os.getpid()}.tmp"
            # MatMul only, per channel: quantising the embedding Gather or per-tensor weights cost
            # 0.03-0.07 cosine to the fp32 vectors on our probes; this keeps 0.97-0.99.
            quantize_dynamic(
                str(fp32),
                str(tmp),
                weight_type=QuantType.QInt8,
                op_types_to_quantize=["MatMul"],
                per_channel=True,
            )
            tmp.replace(target)
    return target


def _Output(model: Any, field: str) -> Any:
    """Wrap a transformers model so it takes the three inputs by keyword and returns one output field."""
    import torch

    class Output(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            )
            return getattr(out, field)

    return Output()


def _auto_tokenizer(model_path: Path, max_length: int) -> Callable[[list[str]], Any]:
    """The model's transformers tokenizer, called as `FastTokenizer` is (a model without tokenizer.json)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(model_path), local_files_only=True)

    def tokenize(texts: list[str]) -> Any:
        return tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="np")

    return tokenize


class OnnxSentenceEncoder:
    """Encodes texts to L2-normalised float32 vectors with an exported ONNX copy of a local model."""

    def __init__(
        self,
        model_path: str,
        export_dir: Path,
        quantize: bool = False,
        threads: int = 0,
        run_size: int = RUN_SIZE,
    ) -> None:
        self.model_path = Path(model_path)
        self.export_dir = export_dir
        self.quantize = quantize
        self.threads = threads
        self.run_size = run_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._pooling = "mean"
        self._max_len = 512
        self._inputs: set[str] = set()

    def warm_up(self) -> None:
        """Export (first time only) and load the ONNX model and the tokenizer (idempotent).

        Once the model is exported this needs onnxruntime and `tokenizers` only (`FastTokenizer`, when
        the model ships a ``tokenizer.json``): neither torch nor transformers is imported.
        """
        if self._session is not None:
            return
        if not self.model_path.is_dir():
            raise ModelUnavailableError(
                f"the ONNX backend needs a local model directory, got {self.model_path}"
            )
        self._max_len = _max_seq_length(self.model_path)
        path = self.export_path()
        if not path.is_file() or importlib.util.find_spec("onnxruntime") is None:
            require_onnx("embedder.backend")  # the export needs transformers (and torch) as well
            path = export_onnx(self.model_path, self.export_dir, self.quantize)
        if fast_tokenizer_available(self.model_path):
            self._tokenizer = FastTokenizer(self.model_path, self._max_len)
        else:
            self._tokenizer = _auto_tokenizer(self.model_path, self._max_len)
        self._session, self._inputs = open_session(path, self.threads)
        self._pooling = _pooling_mode(self.model_path)

    def export_path(self) -> Path:
        """Where this encoder's ONNX model is (or will be) exported."""
        return self.export_dir / ("model_int8.onnx" if self.quantize else "model.onnx")

    def runs_without_torch(self) -> bool:
        """Whether the model is exported and onnxruntime and `tokenizers` can run it (no torch needed)."""
        return (
            self.export_path().is_file()
            and fast_tokenizer_available(self.model_path)
            and importlib.util.find_spec("onnxruntime") is not None
        )

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Return an (n, dim) float32 array of normalised embeddings, batched by length.

        One ONNX Runtime call embeds at most `batch_size` and at most `run_size` texts.
        """
        self.warm_up()
        order = length_order(texts)
        step = max(1, min(batch_size, self.run_size))
        out: np.ndarray | None = None
        for start in range(0, len(order), step):
            part = order[start : start + step]
            vecs = self._encode_batch([texts[i] for i in part])
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
            out[part] = vecs
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        feeds = model_feeds(self._tokenizer(texts), self._inputs)
        hidden = self._session.run(None, feeds)[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        else:
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
