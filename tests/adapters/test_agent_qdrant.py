"""Migration: the handbook store copied into Qdrant answers every labelled question as the embedded one.

`haygraph store copy` moves the real handbook store (bundled model embeddings) into a Qdrant collection
(local mode, or the server at `$QDRANT_URL`); an agent over each backend then answers all the labelled
handbook cases (`eval/cases/handbook_cases.jsonl`), and status, route, answer and cited evidence must be
the same.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from haygraph.adapters.agent import build_agent
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.store import EmbeddedDocumentStore

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CASES = [
    json.loads(line) for line in (REPO / "eval/cases/handbook_cases.jsonl").read_text("utf-8").splitlines()
][::2]
"""Every other handbook case (41 of 82, both languages, answerable and not): the suite's time."""


@pytest.fixture(scope="module")
def qdrant_handbook(
    handbook_store: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RetrievalConfig]:
    pytest.importorskip("haystack_integrations.document_stores.qdrant")
    from haygraph.retrieval.qdrant.copy import copy_store
    from tests.retrieval.qdrant.targets import drop_target, qdrant_target

    settings = qdrant_target(tmp_path_factory.mktemp("handbook-qdrant"), prefix="hb")
    config = RetrievalConfig.from_dict({"store": settings.model_dump(exclude_none=True)})
    report = copy_store(handbook_store, config)
    assert report.documents == EmbeddedDocumentStore.load(handbook_store).count_documents()
    yield config
    drop_target(settings)


def test_copy_keeps_every_chunk_and_its_embedding(
    handbook_store: Path, qdrant_handbook: RetrievalConfig
) -> None:
    embedded = EmbeddedDocumentStore.load(handbook_store)
    moved = KnowledgeBase.open(None, qdrant_handbook).store
    assert sorted(d.id for d in moved.documents) == sorted(d.id for d in embedded.documents)
    vectors, moved_vectors = embedded.matrix(), moved.matrix()
    assert vectors is not None and moved_vectors is not None
    for doc in embedded.documents:
        i, j = embedded.position(doc.id), moved.position(doc.id)
        assert i is not None and j is not None
        assert moved.document(j).content == doc.content and moved.document(j).meta == doc.meta
        # copied, not re-embedded: the stored vectors up to Qdrant's cosine normalisation (float32)
        assert np.allclose(moved_vectors[j], vectors[i] / np.linalg.norm(vectors[i]), atol=1e-6)


def _outcome(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "status": result["status"],
        "route": result["route"],
        "answer": result["answer"],
        "evidence_ids": result["evidence_ids"],
        "evidence": [e["id"] for e in result["evidence"]],
    }


def test_ask_gives_the_same_answers_on_both_backends(
    handbook_store: Path, qdrant_handbook: RetrievalConfig
) -> None:
    embedded = build_agent(handbook_store)
    qdrant = build_agent(handbook_store, config=qdrant_handbook)
    differ, completed = [], 0
    for case in CASES:
        a = _outcome(embedded.ask(case["question"], thread_id=case["id"]))
        b = _outcome(qdrant.ask(case["question"], thread_id=case["id"]))
        completed += a["status"] == "completed"
        if a != b:
            differ.append(f"{case['id']}: embedded {a} / qdrant {b}")
    assert differ == []
    assert completed >= len(CASES) // 3  # not vacuous: many questions are answered with evidence
