from pathlib import Path

import numpy as np
import pytest

from haygraph.retrieval.model_paths import resolve_model
from haygraph.retrieval.onnx_tokenizer import FastTokenizer, _pad_token, fast_tokenizer_available

TEXTS = [
    "How many days of annual leave?",
    "年假有几天？ Café naïve résumé",
    "leave " * 600,  # truncated
    "",
    "  Tabs\tand\nnewlines ÄÖÜ ß 😀 [SEP] [CLS] [PAD]",
]


@pytest.mark.integration
def test_ids_are_transformers_ids():
    from transformers import AutoTokenizer

    path = Path(resolve_model("all-MiniLM-L6-v2"))
    assert fast_tokenizer_available(path)
    ours = FastTokenizer(path, 256)(TEXTS)
    theirs = AutoTokenizer.from_pretrained(str(path), local_files_only=True)(
        TEXTS, padding=True, truncation=True, max_length=256, return_tensors="np"
    )
    assert ours["input_ids"].shape == (len(TEXTS), 256)
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert np.array_equal(ours[key], theirs[key]), key


def test_pad_token_comes_from_the_config(tmp_path):
    assert _pad_token(tmp_path) == "[PAD]"
    (tmp_path / "special_tokens_map.json").write_text('{"pad_token": {"content": "<pad>"}}')
    assert _pad_token(tmp_path) == "<pad>"
    (tmp_path / "tokenizer_config.json").write_text('{"pad_token": "<p>"}')
    assert _pad_token(tmp_path) == "<p>"
    assert not fast_tokenizer_available(tmp_path)  # no tokenizer.json
