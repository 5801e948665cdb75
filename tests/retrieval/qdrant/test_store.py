"""A Qdrant-backed KnowledgeBase against the embedded one: same results, lifecycle, tenancy, errors.

The embedding model is patched out (8-d hash vectors); dense searches pass the query vector directly.
"""

from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.config import RetrievalConfig, StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreError, StoreNotFoundError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
from haygraph.retrieval.qdrant import connection
from haygraph.retrieval.qdrant.store import QdrantStore
from tests.retrieval.store_helpers import write_texts

TEXTS = {
    "leave.md": "# Leave\n\nAnnual leave is twenty days per year. Unused leave carries over (five days).\n",
    "travel.md": "# Travel\n\nBook flights at least fourteen days before departure in TripDesk.\n",
    "pets.md": "# Pets\n\nDogs are welcome in the office on Fridays if they are calm.\n",
    "年假.md": "# 年假\n\n员工每年享有二十天年假，未休年假最多可结转五天。\n",
}
TENANT = {"field": "meta.tenant", "operator": "==", "value": "acme"}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_texts(tmp_path / "docs", TEXTS)


def ranking(kb: KnowledgeBase, query: str, mode: str, **kwargs) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 4)) for h in kb.search(query, config=mode, **kwargs).hits]


def dense_ids(kb: KnowledgeBase, vector: list[float], filters=None) -> list[str]:
    q = kb.config.with_overrides(query={"mode": "dense", "cut": {"enabled": False}}).query
    pipe, info = build_query_pipeline(kb.config, kb.store, q, embed_query=False)
    data = query_inputs(pipe, "x", query_embedding=vector, filters=filters)
    out = run_direct(pipe, data, include_outputs_from={info.output})
    return [d.id for d in out[info.output]["documents"]]


class TestParity:
    def test_bm25_same_ranking_and_scores(self, tmp_path, docs, qdrant_config):
        embedded = KnowledgeBase(RetrievalConfig(), tmp_path / "emb")
        embedded.index([docs])
        qdrant = KnowledgeBase(qdrant_config)
        qdrant.index([docs])
        for query in ("how many days of annual leave", "flights departure", "年假结转"):
            assert ranking(qdrant, query, "bm25") == ranking(embedded, query, "bm25")
            assert ranking(qdrant, query, "bm25")

    def test_dense_same_ranking(self, tmp_path, docs, qdrant_config):
        embedded = KnowledgeBase(RetrievalConfig(), tmp_path / "emb")
        embedded.index([docs])
        qdrant = KnowledgeBase(qdrant_config)
        qdrant.index([docs])
        vector = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.4, 0.6]
        assert dense_ids(qdrant, vector) == dense_ids(embedded, vector)
        assert len(dense_ids(qdrant, vector)) == qdrant.store.count_documents()

    def test_query_pipeline_uses_qdrant_retrievers(self, docs, qdrant_config):
        kb = KnowledgeBase(qdrant_config)
        kb.index([docs])
        pipe, _ = build_query_pipeline(kb.config, kb.store)
        kinds = {name: type(pipe.get_component(name)).__name__ for name in pipe.graph.nodes}
        assert kinds["bm25"] == "QdrantSparseEmbeddingRetriever"
        assert kinds["dense"] == "QdrantEmbeddingRetriever"
        assert kinds["fusion"] == "HybridFusion"

    def test_server_side_fusion_option(self, docs, qdrant_config):
        config = qdrant_config.with_overrides(store={"fusion": "qdrant"})
        kb = KnowledgeBase(config)
        kb.index([docs])
        q = kb.config.with_overrides(query={"cut": {"enabled": False}}).query
        pipe, info = build_query_pipeline(kb.config, kb.store, q, embed_query=False)
        assert type(pipe.get_component("hybrid")).__name__ == "QdrantHybridRetriever"
        data = query_inputs(pipe, "annual leave", query_embedding=[0.5] * 8, top_k=10)
        out = run_direct(pipe, data, include_outputs_from={info.output})[info.output]["documents"]
        # server-side RRF over both lists: every chunk comes back (dense ranks all), the BM25 match included
        assert len(out) == kb.store.count_documents()
        assert "leave.md" in {d.meta["source_id"] for d in out}


class TestLifecycle:
    def test_reopen_has_documents_and_settings(self, docs, qdrant_config):
        config = qdrant_config.with_overrides(query={"mode": "bm25"})
        kb = KnowledgeBase(config)
        kb.index([docs])
        expected = ranking(kb, "annual leave", "bm25")
        connection.close_clients()  # as a new process would
        again = KnowledgeBase.open(None, qdrant_config)
        assert again.store.count_documents() == kb.store.count_documents()
        assert again.config.query.mode == "bm25"  # the store's default query settings came along
        assert ranking(again, "annual leave", "bm25") == expected

    def test_edit_and_delete_and_remove(self, docs, qdrant_config):
        kb = KnowledgeBase(qdrant_config)
        kb.index([docs])
        (docs / "travel.md").write_text("# Travel\n\nTrains are booked in RailDesk.\n", encoding="utf-8")
        (docs / "pets.md").unlink()
        report = kb.index([docs])
        assert report.removed_stale >= 1 and report.removed_sources == ["pets.md"]
        kb.remove_sources(["年假.md"])
        connection.close_clients()
        again = KnowledgeBase.open(None, qdrant_config)
        assert {d.meta["source_id"] for d in again.store.documents} == {"leave.md", "travel.md"}
        assert again.store.qdrant().count_documents() == again.store.count_documents()
        assert [h.source for h in again.search("RailDesk trains", config="bm25").hits] == ["travel.md"]
        assert again.search("flights departure TripDesk", config="bm25").hits == []
        assert again.search("dogs office", config="bm25").hits == []

    def test_new_knowledge_base_adds_to_existing_collection(self, docs, tmp_path, qdrant_config):
        KnowledgeBase(qdrant_config).index([docs / "leave.md"])
        KnowledgeBase(qdrant_config).index([docs / "pets.md"])
        again = KnowledgeBase.open(None, qdrant_config)
        assert {d.meta["source_id"] for d in again.store.documents} == {"leave.md", "pets.md"}


class TestTenancy:
    def test_filters_are_pushed_down(self, docs, qdrant_config):
        kb = KnowledgeBase(qdrant_config)
        kb.index([docs], meta={"tenant": "acme"})
        kb.index([docs], meta={"tenant": "globex"})
        hits = kb.search("annual leave", config="bm25", filters=TENANT, top_k=10).hits
        assert hits and {h.meta["tenant"] for h in hits} == {"acme"}
        vector = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.4, 0.6]
        ids = dense_ids(kb, vector, filters=TENANT)
        tenants = {kb.store.get(i).meta["tenant"] for i in ids}  # type: ignore[union-attr]
        assert len(ids) == len(TEXTS) and tenants == {"acme"}

    def test_identical_text_in_two_tenants_keeps_both(self, qdrant_config):
        kb = KnowledgeBase(qdrant_config)
        kb.index_documents(
            [
                Document(content="Refunds take five days.", meta={"source_id": "refunds.md", "tenant": t})
                for t in ("A", "B")
            ]
        )
        for tenant in ("A", "B"):
            only = {"field": "meta.tenant", "operator": "==", "value": tenant}
            hits = kb.search("refunds", config="bm25", filters=only).hits
            assert [h.meta["tenant"] for h in hits] == [tenant]

    def test_payload_indexes_are_created(self, docs, qdrant_settings, qdrant_config, monkeypatch):
        client = connection.client_for(qdrant_settings)
        created = []
        original = client.create_payload_index

        def spy(collection, field, **kwargs):
            created.append((collection, field, str(kwargs["field_schema"])))
            return original(collection, field, **kwargs)

        monkeypatch.setattr(client, "create_payload_index", spy)
        KnowledgeBase(qdrant_config).index([docs])
        name = qdrant_settings.collection
        assert created == [(name, "meta.tenant", "keyword"), (name, "meta.source_id", "keyword")]
        if qdrant_settings.url:  # local mode keeps no payload indexes (it scans), a server reports them
            schema = client.get_collection(name).payload_schema
            assert set(connection.INDEXED_FIELDS) <= set(schema)


class TestErrors:
    def test_config_needs_one_target(self):
        with pytest.raises(ConfigError, match=r"exactly one of store.url, store.path or store.location"):
            RetrievalConfig.from_dict({"store": {"backend": "qdrant"}})
        with pytest.raises(ConfigError, match=r"store.path only applies to store.backend qdrant"):
            RetrievalConfig.from_dict({"store": {"path": "/tmp/x"}})

    def test_missing_collection(self, qdrant_config):
        with pytest.raises(StoreNotFoundError, match=r"no haygraph collection there"):
            KnowledgeBase.open(None, qdrant_config)

    def test_other_embedding_dimension(self, docs, qdrant_settings, qdrant_config):
        KnowledgeBase(qdrant_config).index([docs])
        store = QdrantStore(qdrant_settings)  # a writer whose model makes 2-d vectors
        zebra = Document(id="z", content="zebra", embedding=[1.0, 0.0], meta={"source_id": "z"})
        store.write_documents([zebra])
        with pytest.raises(StoreError, match=r"holds 8-d vectors but embedder.model makes 2-d"):
            store.save()

    def test_other_sparse_vocabulary(self, docs, qdrant_settings, qdrant_config):
        kb = KnowledgeBase(qdrant_config)
        kb.index([docs])
        manifest = connection.read_manifest(qdrant_settings)
        manifest["sparse"]["vocabulary"] = "another/v0"
        connection.write_manifest(qdrant_settings, manifest)
        with pytest.raises(StoreError, match=r"sparse vectors were made with vocabulary='another/v0'"):
            KnowledgeBase.open(None, qdrant_config)

    def test_unset_api_key_variable(self, monkeypatch):
        monkeypatch.delenv("HAYGRAPH_TEST_QDRANT_KEY", raising=False)
        settings = StoreConfig(
            backend="qdrant", url="http://127.0.0.1:9", api_key_env="HAYGRAPH_TEST_QDRANT_KEY"
        )
        with pytest.raises(ConfigError, match=r"HAYGRAPH_TEST_QDRANT_KEY.*not set"):
            connection.client_for(settings)

    def test_unreachable_url(self):
        settings = StoreConfig(backend="qdrant", url="http://127.0.0.1:9", timeout=2)
        config = RetrievalConfig().with_overrides(store=settings.model_dump())
        with pytest.raises(StoreError, match=r"cannot reach Qdrant.*check store.url"):
            KnowledgeBase.open(None, config)


class TestToPoints:
    def test_same_points_as_qdrant_haystack(self):
        from haystack.dataclasses import SparseEmbedding
        from haystack_integrations.document_stores.qdrant.converters import (
            convert_haystack_documents_to_qdrant_points,
        )

        from haygraph.retrieval.qdrant.store import to_points

        docs = [
            Document(
                id="x",
                content="annual leave",
                embedding=[0.1, -0.2, 0.3],
                sparse_embedding=SparseEmbedding(indices=[1, 5], values=[0.5, 0.25]),
                meta={"tenant": "acme", "source_id": "leave.md", "headings": ["Leave"]},
            ),
            Document(id="y", content="no vectors", meta={}),
        ]
        expected = convert_haystack_documents_to_qdrant_points(docs, use_sparse_embeddings=True)
        assert [p.model_dump() for p in to_points(docs)] == [p.model_dump() for p in expected]
        assert docs[0].embedding == [0.1, -0.2, 0.3]  # inputs untouched
