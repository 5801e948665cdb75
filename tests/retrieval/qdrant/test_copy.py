"""`copy_store` and `haygraph store copy`: an embedded store moves to Qdrant without re-embedding."""

from pathlib import Path

import pytest
import yaml

from haygraph.adapters.cli.main import main
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.qdrant import connection
from haygraph.retrieval.qdrant.copy import copy_store
from haygraph.retrieval.store import EmbeddedDocumentStore
from tests.retrieval.store_helpers import write_texts

TEXTS = {
    "leave.md": "# Leave\n\nAnnual leave is twenty days per year.\n",
    "travel.md": "# Travel\n\nBook flights fourteen days before departure.\n",
}


@pytest.fixture
def embedded_store(tmp_path: Path) -> Path:
    docs = write_texts(tmp_path / "docs", TEXTS)
    KnowledgeBase(RetrievalConfig().with_overrides(query={"mode": "bm25"}), tmp_path / "emb").index([docs])
    return tmp_path / "emb"


def no_embedding(self, documents):
    raise AssertionError("store copy must not embed")


class TestCopyStore:
    def test_moves_documents_embeddings_and_settings(self, embedded_store, qdrant_config, monkeypatch):
        monkeypatch.setattr(CachedDocumentEmbedder, "run", no_embedding)
        report = copy_store(embedded_store, qdrant_config)
        source = EmbeddedDocumentStore.load(embedded_store)
        assert report.documents == source.count_documents() and report.replaced == 0
        kb = KnowledgeBase.open(None, qdrant_config)
        assert kb.config.query.mode == "bm25"
        copied = {d.id: d.embedding for d in kb.store.qdrant().filter_documents()}
        for doc in source.filter_documents():
            assert copied[doc.id] == pytest.approx(doc.embedding, abs=1e-6)
        old = KnowledgeBase.open(embedded_store)
        for query in ("annual leave", "flights"):
            assert [h.id for h in kb.search(query).hits] == [h.id for h in old.search(query).hits]

    def test_copy_again_replaces(self, embedded_store, qdrant_config):
        copy_store(embedded_store, qdrant_config)
        report = copy_store(embedded_store, qdrant_config)
        assert report.replaced == report.documents
        assert KnowledgeBase.open(None, qdrant_config).store.qdrant().count_documents() == report.documents

    def test_needs_a_qdrant_config(self, embedded_store):
        with pytest.raises(ConfigError, match=r"needs a config with store.backend qdrant"):
            copy_store(embedded_store, RetrievalConfig())


class TestCli:
    def test_store_copy(self, embedded_store, qdrant_settings, tmp_path, capsys):
        config = tmp_path / "qdrant.yaml"
        config.write_text(yaml.safe_dump({"store": qdrant_settings.model_dump(exclude_none=True)}))
        assert main(["store", "copy", "--from", str(embedded_store), "--to", str(config)]) == 0
        out = capsys.readouterr().out
        assert f"copied {len(TEXTS)} document(s)" in out and "nothing re-embedded" in out
        connection.close_clients()
        assert main(["search", "annual leave", "--store", "unused", "--config", str(config)]) == 0
        assert "leave.md" in capsys.readouterr().out

    def test_bad_target_is_one_line_error(self, embedded_store, tmp_path, capsys):
        config = tmp_path / "bad.yaml"
        config.write_text("store:\n  backend: qdrant\n")
        assert main(["store", "copy", "--from", str(embedded_store), "--to", str(config)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error:") and "store.url, store.path or store.location" in err
