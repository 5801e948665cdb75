"""`FastTokenizer`: a model's ``tokenizer.json`` run by the `tokenizers` library, without transformers.

transformers' fast tokenizers are this same Rust tokenizer loaded from the same file, but importing
transformers imports torch as well (about 2 s of a cold ``haygraph search``; see
`haygraph.retrieval.haystack_import`). The ONNX encoder (`haygraph.retrieval.onnx_encoder`) tokenizes
with this class when the model ships a ``tokenizer.json``, and with ``AutoTokenizer`` otherwise.
Truncation (at `max_length` tokens, special tokens included) and padding (to the longest text of the
batch, on the right) are what ``tokenizer(texts, padding=True, truncation=True, max_length=...)``
does; `tests/retrieval/test_onnx_tokenizer.py` checks the ids against transformers'.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

TOKENIZER_FILE = "tokenizer.json"


def fast_tokenizer_available(model_path: Path) -> bool:
    """Whether `model_path` ships a ``tokenizer.json`` and the `tokenizers` library is installed."""
    return (model_path / TOKENIZER_FILE).is_file() and importlib.util.find_spec("tokenizers") is not None


class FastTokenizer:
    """Tokenizes batches to the int64 arrays a BERT-style ONNX graph takes."""

    def __init__(self, model_path: Path, max_length: int) -> None:
        """Load ``model_path/tokenizer.json``; the pad token is the one ``tokenizer_config.json`` names."""
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(model_path / TOKENIZER_FILE))
        pad_token = _pad_token(model_path)
        pad_id = tokenizer.token_to_id(pad_token)
        if pad_id is None:
            raise ValueError(
                f"{model_path / TOKENIZER_FILE}: the pad token {pad_token!r} is not in its vocabulary"
            )
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self._tokenizer = tokenizer

    def __call__(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """``input_ids``, ``attention_mask`` and ``token_type_ids`` of `texts`, each (len(texts), longest)."""
        encodings = self._tokenizer.encode_batch(list(texts))
        return {
            "input_ids": np.asarray([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.asarray([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.asarray([e.type_ids for e in encodings], dtype=np.int64),
        }


def _pad_token(model_path: Path) -> str:
    """The pad token ``tokenizer_config.json`` (or ``special_tokens_map.json``) names; ``[PAD]`` if none."""
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        path = model_path / name
        if path.is_file():
            value: Any = json.loads(path.read_text(encoding="utf-8")).get("pad_token")
            if isinstance(value, dict):  # {"content": "[PAD]", ...}
                value = value.get("content")
            if isinstance(value, str) and value:
                return value
    return "[PAD]"
