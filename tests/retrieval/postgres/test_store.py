"""A PostgreSQL-backed KnowledgeBase against the embedded one: results, lifecycle, tenancy in SQL, writers.

Runs against the live PostgreSQL + pgvector server of the test session (one table per test).
"""

import logging
import threading
from pathlib import Path

import pytest
from haystack import Document

from haygraph.retrieval.config import RetrievalConfig, StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreConflictError, StoreError, StoreNotFoundError
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
from haygraph.retrieval.postgres import connection
from haygraph.retrieval.postgres.store import PostgresStore
from tests.retrieval.store_helpers import write_texts

TEXTS = {
    "leave.md": "# Leave\n\nAnnual leave is twenty days per year. Unused leave carries over (five days).\n",
    "travel.md": "# Travel\n\nBook flights at least fourteen days before departure in TripDesk.\n",
    "pets.md": "# Pets\n\nDogs are welcome in the office on Fridays if they are calm.\n",
    "年假.md": "# 年假\n\n员工每年享有二十天年假，未休年假最多可结转五天。\n",
}
TENANT = {"field": "meta.tenant", "operator": "==", "value": "acme"}
VECTOR = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.4, 0.6]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return write_texts(tmp_path / "docs", TEXTS)


def ranking(kb: KnowledgeBase, query: str, mode: str, **kwargs) -> list[tuple[str, float]]:
    return [(h.id, round(h.score, 4)) for h in kb.search(query, config=mode, **kwargs).hits]


def ranked(
    kb: KnowledgeBase, mode: str, query: str = "annual leave", filters=None
) -> list[tuple[str, float]]:
    """The pipeline's output for `mode` with the query vector given (no query model)."""
    q = kb.config.with_overrides(query={"mode": mode, "cut": {"enabled": False}, "top_k": 10}).query
    pipe, info = build_query_pipeline(kb.config, kb.store, q, embed_query=False)
    data = query_inputs(pipe, query, query_embedding=VECTOR, filters=filters)
    out = run_direct(pipe, data, include_outputs_from={info.output})
    return [(d.id, round(float(d.score or 0), 4)) for d in out[info.output]["documents"]]


def segment_rows(settings: StoreConfig) -> int:
    conn = connection.connect(settings)
    try:
        return int(
            conn.execute(f'SELECT count(*) FROM "{connection.segments_table(settings)}"').fetchone()[0]
        )
    finally:
        conn.close()


def table_rows(settings: StoreConfig) -> int:
    conn = connection.connect(settings)
    try:
        return int(conn.execute(f'SELECT count(*) FROM "{settings.collection}"').fetchone()[0])
    finally:
        conn.close()


class TestParity:
    def test_bm25_dense_hybrid_same_ranking_and_scores(self, tmp_path, docs, pg_config):
        embedded = KnowledgeBase(RetrievalConfig(), tmp_path / "emb")
        embedded.index([docs])
        pg = KnowledgeBase(pg_config)
        pg.index([docs])
        for query in ("how many days of annual leave", "flights departure", "年假结转"):
            assert ranking(pg, query, "bm25") == ranking(embedded, query, "bm25")
            assert ranking(pg, query, "bm25")
        for mode in ("dense", "hybrid"):
            assert ranked(pg, mode) == ranked(embedded, mode)
        assert len(ranked(pg, "dense")) == pg.store.count_documents()

    def test_query_pipeline_uses_pgvector_retriever(self, docs, pg_config):
        kb = KnowledgeBase(pg_config)
        kb.index([docs])
        pipe, _ = build_query_pipeline(kb.config, kb.store)
        kinds = {name: type(pipe.get_component(name)).__name__ for name in pipe.graph.nodes}
        assert kinds["dense"] == "PgvectorEmbeddingRetriever"
        assert kinds["bm25"] == "PostgresBM25Retriever"
        assert kinds["fusion"] == "HybridFusion"

    def test_hnsw_index_is_built_and_searched(self, docs, pg_config, pg_settings):
        exact = KnowledgeBase(pg_config)
        exact.index([docs])
        hnsw_config = pg_config.with_overrides(store={"search": "hnsw"})
        kb = KnowledgeBase.open(None, hnsw_config)  # a store switched to hnsw gets its index on open
        conn = connection.connect(StoreConfig(**pg_settings))
        try:
            indexes = [r[0] for r in conn.execute("SELECT indexdef FROM pg_indexes").fetchall()]
        finally:
            conn.close()
        assert any("USING hnsw (embedding vector_cosine_ops)" in i and "m='16'" in i for i in indexes)
        assert [i for i, _ in ranked(kb, "dense")] == [i for i, _ in ranked(exact, "dense")]


class TestLifecycle:
    def test_reopen_has_documents_settings_and_a_new_version_per_job(self, docs, pg_config, pg_settings):
        config = pg_config.with_overrides(query={"mode": "bm25"})
        kb = KnowledgeBase(config)
        kb.index([docs / "leave.md"])
        assert kb.store.version == "1"
        kb.index([docs])
        assert kb.store.version == "2" == str(connection.store_version(StoreConfig(**pg_settings)))
        expected = ranking(kb, "annual leave", "bm25")
        again = KnowledgeBase.open(None, pg_config)
        assert again.store.count_documents() == kb.store.count_documents() == table_rows(again.store.settings)
        assert again.config.query.mode == "bm25"  # the store's default query settings came along
        assert ranking(again, "annual leave", "bm25") == expected

    def test_edit_delete_and_remove_are_synced(self, docs, pg_config):
        kb = KnowledgeBase(pg_config)
        kb.index([docs])
        (docs / "travel.md").write_text("# Travel\n\nTrains are booked in RailDesk.\n", encoding="utf-8")
        (docs / "pets.md").unlink()
        report = kb.index([docs])
        assert report.removed_stale >= 1 and report.removed_sources == ["pets.md"]
        kb.remove_sources(["年假.md"])
        again = KnowledgeBase.open(None, pg_config)
        assert {d.meta["source_id"] for d in again.store.documents} == {"leave.md", "travel.md"}
        assert table_rows(again.store.settings) == again.store.count_documents()
        assert [h.source for h in again.search("RailDesk trains", config="bm25").hits] == ["travel.md"]
        assert again.search("dogs office", config="bm25").hits == []

    def test_unchanged_files_are_not_written_again(self, docs, pg_config):
        kb = KnowledgeBase(pg_config)
        kb.index([docs])
        report = KnowledgeBase(pg_config).index([docs])
        assert report.chunks == 0 and report.unchanged == len(TEXTS)

    def test_other_embedding_dimension_is_refused(self, docs, pg_settings, pg_config):
        KnowledgeBase(pg_config).index([docs])
        store = PostgresStore(StoreConfig(**pg_settings))  # a writer whose model makes 2-d vectors
        with store.writing():
            store.clear()  # even replacing everything keeps the table's vector size
            store.write_documents(
                [Document(id="z", content="zebra", embedding=[1.0, 0.0], meta={"source_id": "z"})]
            )
            with pytest.raises(
                StoreError, match=r"the table holds 8-d vectors, this store's embedder makes 2-d"
            ):
                store.save()
        assert table_rows(store.settings) == KnowledgeBase.open(None, pg_config).store.count_documents() > 0

    def test_another_embedder_family_is_refused(self, docs, pg_config):
        minilm = pg_config.with_overrides(embedder={"backend": "onnx-int8"})  # not auto: it picks e5 now
        KnowledgeBase(minilm).index([docs / "leave.md"])
        other = pg_config.with_overrides(
            embedder={"model": "multilingual-e5-small", "backend": "e5-multilingual"}
        )
        built = r"was built with embedder\.\w+ '(?:onnx-int8|all-MiniLM-L6-v2)'"
        with pytest.raises(ConfigError, match=built):
            KnowledgeBase(other).index([docs / "pets.md"], delete_missing=False)
        assert {d.meta["source_id"] for d in KnowledgeBase.open(None, pg_config).store.documents} == {
            "leave.md"
        }

    def test_a_streamed_job_is_one_version_in_several_batches_and_segments(self, pg_config, monkeypatch):
        from haygraph.retrieval import kb_writer
        from haygraph.retrieval.postgres import postings
        from haygraph.retrieval.postgres import store as pg_store

        monkeypatch.setattr(kb_writer, "STREAM_BATCH", 3)  # pipeline runs of 3 documents
        monkeypatch.setattr(pg_store, "WRITE_BATCH", 2)  # sent 2 chunks at a time
        monkeypatch.setattr(postings, "SEGMENT_DOCS", 4)  # a segment every 4 chunks
        notes = [f"Note {i}: the parking level is {i} and the barrier code is {1000 + i}." for i in range(10)]
        kb = KnowledgeBase(pg_config.with_overrides(query={"mode": "bm25"}))
        report = kb.index_documents(
            Document(content=t, meta={"source_id": f"n{i}.md"}) for i, t in enumerate(notes)
        )
        assert report.chunks == 10 and kb.store.version == "1"
        assert segment_rows(kb.store.settings) == 3 and table_rows(kb.store.settings) == 10
        embedded = KnowledgeBase(RetrievalConfig().with_overrides(query={"mode": "bm25"}))
        embedded.index_documents(
            [Document(content=t, meta={"source_id": f"n{i}.md"}) for i, t in enumerate(notes)]
        )
        for query in ("parking level 7", "barrier code 1003"):
            assert ranking(KnowledgeBase.open(None, pg_config), query, "bm25") == ranking(
                embedded, query, "bm25"
            )

    def test_small_segments_are_merged_and_removed_chunks_stay_gone(self, pg_config):
        from haygraph.retrieval.postgres import postings

        kb = KnowledgeBase(pg_config)
        for i in range(postings.MERGE_AT + 1):  # one small segment per job, then a merge
            kb.index_documents(
                [Document(content=f"Parking level {i} is open.", meta={"source_id": f"p{i}.md"})]
            )
        kb.remove_sources(["p3.md"])
        assert segment_rows(kb.store.settings) < postings.MERGE_AT
        again = KnowledgeBase.open(None, pg_config)
        every = again.config.with_overrides(query={"mode": "bm25", "cut": {"enabled": False}, "top_k": 20})
        hits = again.search("parking level", config=every.query).hits
        assert sorted(h.source for h in hits) == sorted(
            f"p{i}.md" for i in range(postings.MERGE_AT + 1) if i != 3
        )


class TestTenancy:
    def test_filters_become_sql_conditions(self, docs, pg_config):
        kb = KnowledgeBase(pg_config)
        kb.index([docs], meta={"tenant": "acme"})
        kb.index([docs], meta={"tenant": "globex"})
        hits = kb.search("annual leave", config="bm25", filters=TENANT, top_k=10).hits
        assert hits and {h.meta["tenant"] for h in hits} == {"acme"}
        dense = kb.store.pgvector()._embedding_retrieval(VECTOR, filters=TENANT, top_k=100)
        assert len(dense) == len(TEXTS) and {d.meta["tenant"] for d in dense} == {"acme"}
        assert [i for i, _ in ranked(kb, "hybrid", filters=TENANT)] == [
            i for i, _ in ranked(kb, "hybrid", filters=TENANT) if kb.store.get(i).meta["tenant"] == "acme"
        ]

    def test_identical_text_in_two_tenants_keeps_both(self, pg_config):
        kb = KnowledgeBase(pg_config)
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
            assert [
                d.meta["tenant"] for d in kb.store.pgvector()._embedding_retrieval(VECTOR, filters=only)
            ] == [tenant]


class TestWriters:
    def test_concurrent_writers_are_serialised_and_both_kept(self, docs, pg_config, caplog):
        KnowledgeBase(pg_config).index([docs / "leave.md"])
        first, second = KnowledgeBase.open(None, pg_config), KnowledgeBase.open(None, pg_config)
        inside, release = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def slow_writer() -> None:
            try:
                with first.writing():
                    inside.set()
                    release.wait(10)
                    first.index([docs / "travel.md"], delete_missing=False)
            except BaseException as exc:  # reported below
                errors.append(exc)

        thread = threading.Thread(target=slow_writer)
        thread.start()
        assert inside.wait(10)
        threading.Timer(0.5, release.set).start()
        with caplog.at_level(logging.WARNING):
            second.index([docs / "pets.md"], delete_missing=False)  # waits for the lock, then catches up
        thread.join(10)
        assert not errors
        assert "is being written by another process" in caplog.text
        final = KnowledgeBase.open(None, pg_config)
        assert {d.meta["source_id"] for d in final.store.documents} == {"leave.md", "travel.md", "pets.md"}
        assert final.store.version == "3"

    def test_unsaved_changes_on_an_old_version_are_refused(self, docs, pg_config):
        KnowledgeBase(pg_config).index([docs / "leave.md"])
        stale = KnowledgeBase.open(None, pg_config)  # `index` saves at once: change the store directly
        stale.store.write_documents([Document(content="x", embedding=[1.0] * 8, meta={"source_id": "x.md"})])
        KnowledgeBase.open(None, pg_config).index([docs / "travel.md"], delete_missing=False)
        with pytest.raises(StoreConflictError, match=r"saved by another writer \(version 2\)"):
            stale.save()
        assert {d.meta["source_id"] for d in KnowledgeBase.open(None, pg_config).store.documents} == {
            "leave.md",
            "travel.md",
        }


class TestErrors:
    def test_config_checks(self):
        with pytest.raises(ConfigError, match=r"store.backend postgres needs store.url"):
            RetrievalConfig.from_dict({"store": {"backend": "postgres"}})
        with pytest.raises(ConfigError, match=r"store.url must start with postgresql://"):
            RetrievalConfig.from_dict({"store": {"backend": "postgres", "url": "http://x"}})
        with pytest.raises(ConfigError, match=r"store.collection names a PostgreSQL table"):
            RetrievalConfig.from_dict(
                {"store": {"backend": "postgres", "url": "postgresql://x/y", "collection": "a-b"}}
            )

    def test_missing_store(self, pg_config):
        with pytest.raises(
            StoreNotFoundError, match=r"no haygraph store there; create it with `haygraph index"
        ):
            KnowledgeBase.open(None, pg_config)

    def test_unreachable_server_is_one_line_naming_the_setting(self):
        settings = StoreConfig(backend="postgres", url="postgresql://postgres@127.0.0.1:9/kb", timeout=2)
        with pytest.raises(
            StoreError, match=r"^postgres:haygraph@127.0.0.1:9/kb: cannot reach PostgreSQL .*check store.url"
        ) as err:
            PostgresStore.open(settings)
        assert "\n" not in str(err.value)

    def test_unset_password_variable(self, monkeypatch):
        monkeypatch.delenv("HAYGRAPH_TEST_PG_PASSWORD", raising=False)
        settings = StoreConfig(
            backend="postgres", url="postgresql://u@127.0.0.1/kb", password_env="HAYGRAPH_TEST_PG_PASSWORD"
        )
        with pytest.raises(ConfigError, match=r"HAYGRAPH_TEST_PG_PASSWORD.*not set"):
            connection.conninfo(settings)
