"""The eval harness on the PostgreSQL backend: a run builds the table; a later run on the same corpus
reuses it, another corpus rebuilds it.

The document embedder is patched out (8-d hash vectors, so only BM25 is queried); BM25 runs for real
over the store's postings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from haygraph.eval.harness import run_harness
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from tests.eval.test_index_prep_qdrant import CORPUS, write_dataset
from tests.retrieval.store_helpers import fake_warm_up

pytest.importorskip("haystack_integrations.document_stores.pgvector")


@pytest.fixture
def pg_config(pg_settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> RetrievalConfig:
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)
    return RetrievalConfig.from_dict({"store": pg_settings})


class TestEvalOnPostgres:
    def test_a_run_builds_the_table_and_the_next_reuses_it(
        self, tmp_path: Path, pg_config: RetrievalConfig
    ) -> None:
        dataset = write_dataset(tmp_path / "ds", CORPUS)
        first = run_harness(dataset, configs="bm25", ks=(1, 3), retrieval_config=pg_config)
        assert first["index"]["reused"] is False and first["index"]["with_embeddings"] is True
        assert first["index"]["store"].startswith("postgres:") and first["index"]["documents"] == 3
        assert first["configs"]["bm25"]["metrics"]["HitRate@1"] == 1.0
        again = run_harness(dataset, configs="bm25", ks=(1, 3), retrieval_config=pg_config)
        assert again["index"]["reused"] is True and again["index"]["with_embeddings"] is True
        assert again["configs"]["bm25"]["metrics"] == first["configs"]["bm25"]["metrics"]

    def test_another_corpus_rebuilds_the_table(self, tmp_path: Path, pg_config: RetrievalConfig) -> None:
        run_harness(
            write_dataset(tmp_path / "a", CORPUS), configs="bm25", ks=(1,), retrieval_config=pg_config
        )
        changed = {**CORPUS, "d3": "Receipts for expenses go to finance within a month."}
        result = run_harness(
            write_dataset(tmp_path / "b", changed), configs="bm25", ks=(1,), retrieval_config=pg_config
        )
        assert result["index"]["reused"] is False and result["index"]["documents"] == 3
        assert result["configs"]["bm25"]["metrics"]["HitRate@1"] == 1.0
