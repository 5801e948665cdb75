"""The shipped reader's trained weights, read back out of ``reader_int8.onnx`` for further training.

    state = shipped_state()   # {"bert.encoder.layer.4.attention.self.query.weight": array, ...}

`benchmarks.train_reader` exports its trained layers and head with ``torch.onnx.export`` and quantises the
MatMuls to dynamic int8 per output channel (`haygraph.retrieval.e5_torch.export_graph`). So the graph keeps:

- every bias and LayerNorm parameter in float32, under its torch name with the export wrapper's ``part.``
  prefix (``part.bert.encoder.layer.4.output.LayerNorm.weight``, ``head.bias``);
- each Linear weight as an int8 matrix W_q (in x out) with a float32 scale and an int8 zero point per
  output column, named after the traced MatMul; the node that reads it is named after the module
  (``/part/layer.4/attention/self/query/MatMul_quant``, ``/head/MatMul_quant``).

Dequantized, W = (W_q - zero_point) * scale, and the torch weight (out x in) is its transpose. That is
the shipped model to int8 rounding of the weights (the activations' dynamic quantisation is a runtime
matter), which is what a run resumes from when its checkpoint is gone (a new machine).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

_NODE = re.compile(r"^/(part/layer\.(\d+)|head)/(.*?)/?MatMul_quant$")


def _torch_name(node_name: str) -> str | None:
    """The torch weight name of a quantised MatMul node's module, or None for another node."""
    m = _NODE.match(node_name)
    if m is None:
        return None
    if m.group(1) == "head":
        return "head.weight"
    module = m.group(3).replace("/", ".")
    return f"bert.encoder.layer.{m.group(2)}.{module}.weight"


def shipped_state(path: Path | None = None) -> dict[str, np.ndarray]:
    """The float32 tensors of the reader graph at `path` (default: the shipped one), by torch name.

    Names are those of `benchmarks.train_reader.build_model`'s module (``bert.encoder.layer.N...``,
    ``head.weight``, ``head.bias``). Raises `ValueError` naming what did not map.
    """
    import onnx
    from onnx import numpy_helper

    from haygraph.retrieval.e5_onnx import WEIGHTS_DIR
    from haygraph.retrieval.reader.model import READER

    path = path if path is not None else WEIGHTS_DIR / READER
    graph = onnx.load(str(path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, np.ndarray] = {}
    for name, value in inits.items():
        if value.dtype == np.float32 and (name.startswith("part.bert.") or name.startswith("head.")):
            state[name.removeprefix("part.")] = value.astype(np.float32)
    for node in graph.node:
        if node.op_type != "MatMulInteger":
            continue
        target = _torch_name(node.name)
        weight = node.input[1]
        if target is None or not weight.endswith("_quantized"):
            raise ValueError(f"{path}: quantised MatMul {node.name!r} does not name a reader module")
        base = weight.removesuffix("_quantized")
        q = inits[weight].astype(np.float32)
        zero = inits[node.input[3]].astype(np.float32) if len(node.input) > 3 else 0.0
        scale = inits[base + "_scale"].astype(np.float32)
        state[target] = np.ascontiguousarray(((q - zero) * scale).T)
    if "head.weight" not in state or "head.bias" not in state:
        raise ValueError(f"{path}: no answer head (head.weight, head.bias) found")
    return state


def load_shipped(model: object, path: Path | None = None) -> list[str]:
    """Copy the shipped reader's weights into `model` (a `train_reader.build_model` module); names copied.

    Every tensor of the graph must fit a parameter of the same name and shape (`ValueError` otherwise);
    layers the graph does not hold (below its first layer) keep e5's own weights.
    """
    import torch

    params = dict(model.named_parameters())  # type: ignore[attr-defined]
    state = shipped_state(path)
    with torch.no_grad():
        for name, value in state.items():
            if name not in params:
                raise ValueError(f"the shipped reader holds {name}, which the model has not")
            if tuple(params[name].shape) != value.shape:
                raise ValueError(f"{name}: shipped shape {value.shape}, model {tuple(params[name].shape)}")
            params[name].copy_(torch.from_numpy(value))
    return sorted(state)
