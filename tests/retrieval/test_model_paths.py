import pytest

import haygraph.retrieval.model_paths as model_paths
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.model_paths import is_bundled, resolve_model


class TestResolveModel:
    @pytest.mark.parametrize(
        "name", ["bundled:all-MiniLM-L6-v2", "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"]
    )
    def test_bundled_names_resolve_to_the_packaged_weights(self, name, monkeypatch):
        monkeypatch.setattr(model_paths, "bundled_model_path", lambda: "/site-packages/gt/model")
        assert is_bundled(name)
        assert resolve_model(name) == "/site-packages/gt/model"

    def test_unknown_bundled_name(self):
        with pytest.raises(ModelUnavailableError, match=r"unknown bundled.*bundled:all-MiniLM-L6-v2"):
            resolve_model("bundled:bge-small")

    def test_local_directory(self, tmp_path):
        (tmp_path / "config.json").write_text("{}")
        assert resolve_model(str(tmp_path)) == str(tmp_path)
        empty = tmp_path / "empty"
        empty.mkdir()
        with pytest.raises(ModelUnavailableError, match="holds no model"):
            resolve_model(str(empty))

    def test_unavailable_names_the_fix(self):
        with pytest.raises(ModelUnavailableError, match=r"Fix:.*bundled:all-MiniLM-L6-v2"):
            resolve_model("/nonexistent/model-dir")
        with pytest.raises(ModelUnavailableError, match="no embedding model given"):
            resolve_model("  ")
