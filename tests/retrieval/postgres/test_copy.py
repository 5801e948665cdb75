"""`haygraph store copy` in every direction between embedded, PostgreSQL and Qdrant: same ids and vectors."""

import itertools
from pathlib import Path

import numpy as np
import pytest
import yaml

from haygraph.adapters.cli.main import main
from haygraph.retrieval.config import RetrievalConfig, StoreConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.kb_reader import open_store
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.postgres import connection as pg
from haygraph.retrieval.store_copy import StoreLocation, copy_store
from tests.retrieval.postgres.test_store import TEXTS
from tests.retrieval.store_helpers import write_texts

pytest.importorskip("haystack_integrations.document_stores.qdrant")


def no_embedding(self, documents):
    raise AssertionError("store copy must not embed")


def contents(location: StoreLocation) -> dict[str, tuple[str, list[float]]]:
    """id -> (tenant, normalised vector) of every chunk in the store at `location`."""
    _, store = open_store(location.directory, location.config)
    return {d.id: (d.meta.get("tenant"), list(d.embedding or [])) for d in store.filter_documents()}


def test_every_direction_keeps_ids_and_vectors(tmp_path: Path, pg_settings, monkeypatch) -> None:
    from tests.retrieval.qdrant.targets import drop_target, qdrant_target

    docs = write_texts(tmp_path / "docs", TEXTS)
    kb = KnowledgeBase(RetrievalConfig().with_overrides(query={"mode": "bm25"}), tmp_path / "emb")
    kb.index([docs], meta={"tenant": "acme"})
    kb.index([docs / "leave.md"], meta={"tenant": "*"})
    monkeypatch.setattr(CachedDocumentEmbedder, "run", no_embedding)
    qdrant = qdrant_target(tmp_path)
    other_table = {**pg_settings, "collection": pg_settings["collection"] + "_b"}
    stores = {
        "embedded": StoreLocation(directory=tmp_path / "emb"),
        "postgres": StoreLocation(config=RetrievalConfig.from_dict({"store": pg_settings})),
        "qdrant": StoreLocation(
            config=RetrievalConfig.from_dict({"store": qdrant.model_dump(exclude_none=True)})
        ),
        "postgres-b": StoreLocation(config=RetrievalConfig.from_dict({"store": other_table})),
        "embedded-b": StoreLocation(directory=tmp_path / "emb-b"),
    }
    expected = contents(stores["embedded"])
    assert len(expected) == len(TEXTS) + 1 and {t for t, _ in expected.values()} == {"acme", "*"}
    # embedded -> postgres -> qdrant -> postgres -> embedded -> qdrant (replacing) -> embedded (replacing)
    route = ["embedded", "postgres", "qdrant", "postgres-b", "embedded-b", "qdrant", "embedded-b"]
    try:
        for source, target in itertools.pairwise(route):
            report = copy_store(stores[source], stores[target])
            assert report.documents == len(expected), (source, target)
            copied = contents(stores[target])
            assert copied.keys() == expected.keys(), (source, target)
            for chunk_id, (tenant, vector) in expected.items():
                assert copied[chunk_id][0] == tenant
                assert np.allclose(copied[chunk_id][1], vector, atol=1e-6), (source, target, chunk_id)
        assert report.replaced == len(expected)  # the last copy replaced what the target held
        assert KnowledgeBase.open(tmp_path / "emb-b").config.query.mode == "bm25"  # the config travelled
    finally:
        pg.drop_store(StoreConfig(**other_table))
        drop_target(qdrant)


def test_cli_both_ways_and_the_same_store_refused(tmp_path: Path, pg_settings, capsys) -> None:
    docs = write_texts(tmp_path / "docs", TEXTS)
    KnowledgeBase(RetrievalConfig().with_overrides(query={"mode": "bm25"}), tmp_path / "emb").index([docs])
    config = tmp_path / "pg.yaml"
    config.write_text(yaml.safe_dump({"store": pg_settings}))
    assert main(["store", "copy", "--from", str(tmp_path / "emb"), "--to", str(config)]) == 0
    assert f"copied {len(TEXTS)} document(s)" in capsys.readouterr().out
    assert main(["store", "copy", "--from", str(config), "--to", str(tmp_path / "back")]) == 0
    assert "ids checked" in capsys.readouterr().out
    assert main(["search", "annual leave", "--store", str(tmp_path / "back")]) == 0
    assert "leave.md" in capsys.readouterr().out
    with pytest.raises(ConfigError, match=r"--from and --to name the same store"):
        copy_store(StoreLocation.parse(config), StoreLocation.parse(config))
