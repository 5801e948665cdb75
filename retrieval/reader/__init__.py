"""The trained extractive reader: answer spans and "no answer", in English, Chinese and across them.

- `tokens` — question + passage windows in the bundled e5's tokens, with character offsets;
- `spans` — start/end logits to spans and the no-answer score (SQuAD 2.0 post-processing);
- `model` — `ReaderModel`, the shipped weights (``weights/``) run with ONNX Runtime;
- `component` — `E5ExtractiveReader`, the Haystack component with ``ExtractiveReader``'s interface.

The model card is ``MODEL_CARD.md`` beside this file; ``python -m benchmarks.train_reader`` trains it.
Names are imported lazily so that importing this package loads no model and no Haystack.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "E5ExtractiveReader": "haygraph.retrieval.reader.component",
    "ReaderModel": "haygraph.retrieval.reader.model",
    "PassageReading": "haygraph.retrieval.reader.model",
    "Span": "haygraph.retrieval.reader.model",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'haygraph.retrieval.reader' has no attribute {name!r}")
