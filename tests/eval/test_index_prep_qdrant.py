"""The eval harness on the Qdrant backend: a BM25-only run builds the collection; later runs reuse it.

The embedding model is patched out (8-d hash vectors); BM25 runs for real through the sparse vectors.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from haygraph.eval.harness import run_harness
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from tests.retrieval.store_helpers import fake_warm_up

pytest.importorskip("haystack_integrations.document_stores.qdrant")

CORPUS = {
    "d1": "Annual leave is twenty days per year for every employee.",
    "d2": "Book business travel in TripDesk fourteen days before departure.",
    "d3": "Expense claims are filed within thirty days with receipts.",
}
QUERIES = {"q1": "how many days of annual leave", "q2": "book travel in TripDesk", "q3": "expense receipts"}


def write_dataset(root: Path, corpus: dict[str, str]) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in corpus.items())
    )
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": t}) + "\n" for i, t in QUERIES.items())
    )
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n")
    return root


@pytest.fixture
def qdrant_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RetrievalConfig]:
    from tests.retrieval.qdrant.targets import drop_target, qdrant_target

    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)
    settings = qdrant_target(tmp_path)
    yield RetrievalConfig.from_dict({"store": settings.model_dump(exclude_none=True)})
    drop_target(settings)


class TestEvalOnQdrant:
    def test_bm25_only_run_builds_then_reuses_the_collection(
        self, tmp_path: Path, qdrant_config: RetrievalConfig
    ) -> None:
        dataset = write_dataset(tmp_path / "ds", CORPUS)
        first = run_harness(dataset, configs="bm25", ks=(1, 3), retrieval_config=qdrant_config)
        assert first["index"]["reused"] is False and first["index"]["with_embeddings"] is True
        assert first["index"]["store"].startswith("qdrant:")
        assert first["configs"]["bm25"]["metrics"]["HitRate@1"] == 1.0
        again = run_harness(dataset, configs="bm25", ks=(1, 3), retrieval_config=qdrant_config)
        assert again["index"]["reused"] is True
        assert again["configs"]["bm25"]["metrics"] == first["configs"]["bm25"]["metrics"]

    def test_another_corpus_rebuilds_the_collection(
        self, tmp_path: Path, qdrant_config: RetrievalConfig
    ) -> None:
        run_harness(
            write_dataset(tmp_path / "a", CORPUS), configs="bm25", ks=(1,), retrieval_config=qdrant_config
        )
        changed = {**CORPUS, "d3": "Receipts for expenses go to finance within a month."}
        result = run_harness(
            write_dataset(tmp_path / "b", changed), configs="bm25", ks=(1,), retrieval_config=qdrant_config
        )
        assert result["index"]["reused"] is False and result["index"]["documents"] == 3
        assert result["configs"]["bm25"]["metrics"]["HitRate@1"] == 1.0
