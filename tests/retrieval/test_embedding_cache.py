from typing import ClassVar

import numpy as np
import pytest
from haystack import Document

import haygraph.retrieval.embedding_cache as cache_module
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder, EmbeddingCache, default_cache_dir


class FakeSTEmbedder:
    """Stands in for SentenceTransformersDocumentEmbedder: records what it was asked to embed."""

    calls: ClassVar[list[list[str]]] = []

    def __init__(self, model, **kwargs):
        self.model = model

    def warm_up(self):
        pass

    def run(self, documents):
        FakeSTEmbedder.calls.append([d.content for d in documents])
        return {
            "documents": [
                Document(content=d.content, embedding=[float(len(d.content)), 1.0]) for d in documents
            ]
        }


class FakeOnnxEncoder(cache_module.OnnxSentenceEncoder):
    """Stands in for an exported ONNX model: (0, len) per text."""

    def __init__(self):
        pass

    def warm_up(self):
        pass

    def encode(self, texts, batch_size=32):
        return np.asarray([[0.0, float(len(t))] for t in texts], dtype=np.float32)


@pytest.fixture
def fake_model(monkeypatch):
    import haystack_integrations.components.embedders.sentence_transformers as st

    FakeSTEmbedder.calls = []
    monkeypatch.setattr(st, "SentenceTransformersDocumentEmbedder", FakeSTEmbedder)
    monkeypatch.setattr(cache_module, "resolve_model", lambda name: f"/models/{name}")
    return FakeSTEmbedder


def _docs(*texts):
    return [Document(content=t, meta={"n": i}) for i, t in enumerate(texts)]


class TestCachedDocumentEmbedder:
    def test_second_run_embeds_nothing(self, tmp_path, fake_model):
        docs = _docs("alpha", "beta gamma")
        first = CachedDocumentEmbedder(cache_dir=str(tmp_path)).run(documents=docs)["documents"]
        assert fake_model.calls == [["beta gamma", "alpha"]]  # longest first: batches of similar length
        second_embedder = CachedDocumentEmbedder(cache_dir=str(tmp_path))  # a new process would do the same
        second = second_embedder.run(documents=docs)["documents"]
        assert fake_model.calls == [["beta gamma", "alpha"]]  # no new model call
        assert second_embedder.stats == {"cached": 2, "embedded": 0}
        assert second_embedder._embedder is None  # all cached: no model, sentence-transformers untouched
        assert [d.embedding.tolist() for d in second] == [d.embedding.tolist() for d in first]
        assert [d.embedding.tolist() for d in first] == [[5.0, 1.0], [10.0, 1.0]]  # back in input order
        assert [d.meta for d in second] == [{"n": 0}, {"n": 1}]

    def test_only_new_texts_are_embedded(self, tmp_path, fake_model):
        embedder = CachedDocumentEmbedder(cache_dir=str(tmp_path))
        embedder.run(documents=_docs("alpha"))
        embedder.run(documents=_docs("alpha", "delta"))
        assert fake_model.calls == [["alpha"], ["delta"]]
        assert embedder.stats == {"cached": 1, "embedded": 1}

    def test_different_model_key_misses(self, tmp_path, fake_model):
        CachedDocumentEmbedder(model="model-a", cache_dir=str(tmp_path)).run(documents=_docs("alpha"))
        other = CachedDocumentEmbedder(model="model-b", cache_dir=str(tmp_path))
        other.run(documents=_docs("alpha"))
        assert fake_model.calls == [["alpha"], ["alpha"]]
        assert other.stats == {"cached": 0, "embedded": 1}

    def test_cache_disabled(self, tmp_path, fake_model):
        embedder = CachedDocumentEmbedder(cache_dir=str(tmp_path), use_cache=False)
        embedder.run(documents=_docs("alpha"))
        embedder.run(documents=_docs("alpha"))
        assert fake_model.calls == [["alpha"], ["alpha"]]
        assert not (tmp_path / "embeddings").exists()

    def test_input_not_mutated(self, tmp_path, fake_model):
        docs = _docs("alpha")
        CachedDocumentEmbedder(cache_dir=str(tmp_path)).run(documents=docs)
        assert docs[0].embedding is None

    def test_empty(self, fake_model):
        assert CachedDocumentEmbedder().run(documents=[]) == {"documents": []}
        assert fake_model.calls == []

    def test_embeddings_are_float32_rows(self, tmp_path, fake_model):
        [doc] = CachedDocumentEmbedder(cache_dir=str(tmp_path)).run(documents=_docs("alpha"))["documents"]
        assert isinstance(doc.embedding, np.ndarray) and doc.embedding.dtype == np.float32

    def test_int8_has_its_own_cache_entries_fp32_onnx_shares_torch(self, tmp_path, fake_model):
        assert (
            cache_module.cache_model_key("sentence-transformers/all-MiniLM-L6-v2", "onnx")
            == "all-MiniLM-L6-v2"
        )
        assert cache_module.cache_model_key("all-MiniLM-L6-v2", "torch") == "all-MiniLM-L6-v2"
        assert cache_module.cache_model_key("all-MiniLM-L6-v2", "onnx-int8") == "all-MiniLM-L6-v2|onnx-int8"
        CachedDocumentEmbedder(cache_dir=str(tmp_path)).run(documents=_docs("alpha"))
        int8 = CachedDocumentEmbedder(cache_dir=str(tmp_path), backend="onnx-int8")
        int8._embedder = FakeOnnxEncoder()  # stands in for the exported model
        int8._cache = cache_module.EmbeddingCache(tmp_path / "embeddings", "all-MiniLM-L6-v2|onnx-int8")
        [doc] = int8.run(documents=_docs("alpha"))["documents"]
        assert int8.stats == {"cached": 0, "embedded": 1}  # torch's vector is not reused
        assert doc.embedding.tolist() == [0.0, 5.0]

    def test_torch_embeds_on_the_onnx_copy_once_it_is_exported(self, fake_model, monkeypatch):
        monkeypatch.setattr(cache_module, "onnx_twin", lambda model, cache_dir: FakeOnnxEncoder())
        small = CachedDocumentEmbedder(use_cache=False).run(documents=_docs("ab", "abc"))["documents"]
        assert [list(d.embedding) for d in small] == [[0.0, 2.0], [0.0, 3.0]]  # the copy's vectors
        many = _docs(*(f"text {i}" for i in range(600)))
        assert len(CachedDocumentEmbedder(use_cache=False).run(documents=many)["documents"]) == 600
        assert fake_model.calls == []  # torch is never loaded, however large the job
        monkeypatch.setattr(cache_module, "onnx_twin", lambda model, cache_dir: None)
        CachedDocumentEmbedder(use_cache=False).run(documents=_docs("ab"))
        assert fake_model.calls == [["ab"]]  # no exported copy: torch

    def test_an_e5_job_is_ended_after_it_embeds_or_fails(self, monkeypatch):
        from haygraph.retrieval.e5_encoder import E5Encoder

        class Encoder(E5Encoder):
            def __init__(self, fail):
                super().__init__(batched_passages=True)
                self.fail, self.events = fail, []

            def plan(self, texts):
                self.events.append("plan")
                return True

            def encode(self, texts, batch_size=32, *, query=False):
                if self.fail:
                    raise RuntimeError("out of memory")
                return np.ones((len(texts), 2), dtype=np.float32)

            def end_job(self):
                self.events.append("end")

        for fail in (False, True):
            embedder = CachedDocumentEmbedder(use_cache=False, backend="e5-multilingual")
            embedder._embedder = Encoder(fail)
            monkeypatch.setattr(embedder, "_load_model", lambda: None)
            if fail:
                with pytest.raises(RuntimeError):
                    embedder.run(documents=_docs("a", "b"))
            else:
                assert len(embedder.run(documents=_docs("a", "b"))["documents"]) == 2
            assert embedder._embedder.events == ["plan", "end"]  # the rebuilt model is freed either way

    def test_bad_backend(self):
        with pytest.raises(ValueError, match="backend must be one of auto, torch, onnx, onnx-int8, e5"):
            CachedDocumentEmbedder(backend="tensorrt")

    def test_default_cache_dir_reads_env_when_called(self, tmp_path, monkeypatch):
        monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(tmp_path))
        assert default_cache_dir() == tmp_path
        monkeypatch.delenv("HAYGRAPH_CACHE_DIR")
        assert default_cache_dir().parts[-2:] == (".cache", "haygraph")

    def test_to_dict_and_from_dict(self):
        embedder = CachedDocumentEmbedder(model="m", batch_size=8, cache_dir="/c", use_cache=False)
        data = embedder.to_dict()
        assert data == {
            "type": "haygraph.retrieval.embedding_cache.CachedDocumentEmbedder",
            "init_parameters": {
                "model": "m",
                "batch_size": 8,
                "cache_dir": "/c",
                "use_cache": False,
                "progress_bar": False,
                "backend": "torch",
                "threads": 0,
            },
        }
        assert CachedDocumentEmbedder.from_dict(data).to_dict() == data

    def test_bad_batch_size(self):
        with pytest.raises(ValueError, match="batch_size"):
            CachedDocumentEmbedder(batch_size=0)


class TestEmbeddingCache:
    def test_put_and_get(self, tmp_path):
        cache = EmbeddingCache(tmp_path, model_key="m")
        key = cache.key("text")
        cache.put_many({key: np.array([0.5, -1.0], dtype=np.float32)})
        found = EmbeddingCache(tmp_path, model_key="m").get_many([key, cache.key("other")])
        assert list(found) == [key]
        np.testing.assert_array_equal(found[key], [0.5, -1.0])

    def test_key_depends_on_model_and_text(self, tmp_path):
        a, b = EmbeddingCache(tmp_path, "a"), EmbeddingCache(tmp_path, "b")
        assert a.key("x") != b.key("x") and a.key("x") != a.key("y") and a.key("x") == a.key("x")

    def test_many_keys(self, tmp_path):
        cache = EmbeddingCache(tmp_path, "m")
        items = {
            cache.key(str(i)): np.full(2, i, dtype=np.float32) for i in range(1200)
        }  # > one 500-key batch
        cache.put_many(items)
        assert len(cache.get_many(list(items))) == 1200
