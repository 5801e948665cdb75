from typing import ClassVar

import pytest

import haygraph.retrieval.query_embedder as query_embedder_module
from haygraph.retrieval.query_embedder import QueryEmbedder, QueryMemo


class FakeTextEmbedder:
    """Stands in for SentenceTransformersTextEmbedder: records the model path and the texts it embeds."""

    instances: ClassVar[list["FakeTextEmbedder"]] = []

    def __init__(self, model, **kwargs):
        self.model = model
        self.kwargs = kwargs
        self.texts: list[str] = []
        FakeTextEmbedder.instances.append(self)

    def warm_up(self):
        pass

    prefix = ""
    suffix = ""

    def run(self, text):
        self.texts.append(text)
        return {"embedding": [float(len(text)), 0.5]}

    @property
    def embedding_backend(self):
        fake = self

        class Backend:
            def embed(self, data, **kwargs):
                fake.batches.append(list(data))
                return [[float(len(t)), 0.5] for t in data]

        return Backend()

    @property
    def batches(self):
        return self.__dict__.setdefault("_batches", [])


@pytest.fixture
def fake_model(monkeypatch):
    import haystack_integrations.components.embedders.sentence_transformers as st

    FakeTextEmbedder.instances = []
    monkeypatch.setattr(st, "SentenceTransformersTextEmbedder", FakeTextEmbedder)
    monkeypatch.setattr(query_embedder_module, "resolve_model", lambda name: f"/abs/models/{name}")
    # the torch path itself, even where an earlier test exported the model's ONNX copy
    monkeypatch.setattr(query_embedder_module, "onnx_twin", lambda model, cache_dir: None)
    return FakeTextEmbedder


class TestQueryEmbedder:
    def test_model_resolved_at_warm_up_name_kept(self, fake_model):
        embedder = QueryEmbedder(model="bundled:all-MiniLM-L6-v2")
        assert fake_model.instances == []  # nothing loaded at construction
        assert embedder.run(text="annual leave") == {"embedding": [12.0, 0.5]}
        [backend] = fake_model.instances
        assert backend.model == "/abs/models/bundled:all-MiniLM-L6-v2"
        assert backend.kwargs["normalize_embeddings"] is True and backend.kwargs["local_files_only"] is True
        assert embedder.to_dict() == {
            "type": "haygraph.retrieval.query_embedder.QueryEmbedder",
            "init_parameters": {
                "model": "bundled:all-MiniLM-L6-v2",
                "memo_size": 10_000,
                "backend": "torch",
                "cache_dir": None,
                "threads": 0,
            },
        }

    def test_memo_embeds_each_query_once(self, fake_model):
        embedder = QueryEmbedder()
        first = embedder.run(text="leave")["embedding"]
        assert embedder.run(text="leave")["embedding"] == first
        embedder.run(text="expenses")
        assert fake_model.instances[0].texts == ["leave", "expenses"]

    def test_remember_embeds_a_batch_once_and_run_hits_the_memo(self, fake_model):
        embedder = QueryEmbedder()
        embedder.run(text="leave")
        assert embedder.remember(["leave", "expenses", "expenses", "travel"]) == 2
        [backend] = fake_model.instances
        assert backend.batches == [["expenses", "travel"]]  # deduplicated, the remembered one skipped
        assert embedder.run(text="travel")["embedding"] == [6.0, 0.5]
        assert backend.texts == ["leave"]  # no per-query call after the batch
        assert embedder.remember(["travel"]) == 0

    def test_shared_memo_across_embedders(self, fake_model):
        memo = QueryMemo()
        a, b = QueryEmbedder(), QueryEmbedder()
        a.share_memo(memo)
        b.share_memo(memo)
        a.run(text="leave")
        b.run(text="leave")
        assert sum(len(e.texts) for e in fake_model.instances) == 1

    def test_memo_disabled(self, fake_model):
        embedder = QueryEmbedder(memo_size=0)
        embedder.run(text="leave")
        embedder.run(text="leave")
        assert fake_model.instances[0].texts == ["leave", "leave"]

    def test_round_trip(self):
        data = QueryEmbedder(
            model="all-MiniLM-L6-v2", memo_size=5, backend="onnx-int8", cache_dir="/c"
        ).to_dict()
        assert QueryEmbedder.from_dict(data).to_dict() == data

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="memo_size"):
            QueryEmbedder(memo_size=-1)
        with pytest.raises(ValueError, match="model"):
            QueryEmbedder(model=" ")
        with pytest.raises(ValueError, match="backend must be one of"):
            QueryEmbedder(backend="gpu")
        with pytest.raises(TypeError, match="string"):
            QueryEmbedder().run(text=["not", "a", "string"])  # type: ignore[arg-type]

    def test_int8_queries_are_memoised_apart(self, fake_model):
        assert QueryEmbedder(backend="onnx-int8").memo_key == "all-MiniLM-L6-v2|onnx-int8"
        assert QueryEmbedder(backend="onnx").memo_key == "all-MiniLM-L6-v2"


class TestQueryMemo:
    def test_least_recently_used_is_dropped(self):
        memo = QueryMemo(max_size=2)
        memo.put("m", "a", [1.0])
        memo.put("m", "b", [2.0])
        assert memo.get("m", "a") is not None  # a is now the most recent
        memo.put("m", "c", [3.0])
        assert memo.get("m", "b") is None and len(memo) == 2
        assert memo.get("m", "a").tolist() == [1.0] and memo.get("other-model", "a") is None


@pytest.mark.integration
def test_remembered_batch_matches_single_query_embeddings():
    """With the real bundled model, a batched (padded) embedding equals the single-query one."""
    import numpy as np

    texts = ["annual leave entitlement", "How do I claim travel expenses after a trip abroad?", "试用期"]
    single = [np.asarray(QueryEmbedder().run(text=t)["embedding"]) for t in texts]
    batched = QueryEmbedder()
    assert batched.remember(texts) == 3
    for text, vector in zip(texts, single, strict=True):
        assert float(np.dot(vector, np.asarray(batched.run(text=text)["embedding"]))) > 0.9999


@pytest.mark.integration
def test_remembered_int8_queries_are_the_vectors_a_single_query_gets(tmp_path):
    """int8 vectors depend on their batch, so `remember` (what eval runs) embeds queries one per call."""
    import numpy as np

    texts = ["annual leave", "How do I claim travel expenses after a trip abroad? " * 5]
    single = QueryEmbedder(backend="onnx-int8", cache_dir=str(tmp_path))
    vectors = [np.asarray(single.run(text=t)["embedding"]) for t in texts]
    batched = QueryEmbedder(backend="onnx-int8", cache_dir=str(tmp_path))
    assert batched.remember(texts) == 2
    for text, vector in zip(texts, vectors, strict=True):
        assert np.array_equal(np.asarray(batched.run(text=text)["embedding"]), vector)


class TestSharedModels:
    def test_embedders_sharing_models_load_one(self, fake_model):
        models: dict = {}
        first, second = QueryEmbedder(), QueryEmbedder()
        first.share_models(models)
        second.share_models(models)
        first.run(text="annual leave")
        second.run(text="parking")
        assert len(fake_model.instances) == 1  # the second pipeline's embedder reused the loaded model
        QueryEmbedder().run(text="x")  # one that shares nothing loads its own
        assert len(fake_model.instances) == 2
