"""Concurrent writers on one store: two processes index different documents at once; both must land.

The store's writer lock (main) serialises them; this counts a lost update whenever one writer's
document is missing afterwards. BM25-only stores with a fake embedder: no model.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from pathlib import Path

import pytest
from haystack import Document

from tests.adapters.tenant_helpers import add_documents, build_bm25_store

ROUNDS = 2
JOIN_S = 300


def _writer(store: str, tenant: str, text: str) -> None:
    add_documents(Path(store), [Document(content=text, meta={"tenant": tenant, "source_id": f"{tenant}.md"})])


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_writers_both_land(tmp_path: Path, classify: Callable[..., None], round_: int) -> None:
    store = build_bm25_store(tmp_path / "store")
    context = multiprocessing.get_context("spawn")
    texts = {t: f"Round {round_} note of tenant {t}: parking on level {i}." for i, t in enumerate("AB")}
    procs = [context.Process(target=_writer, args=(str(store), t, text)) for t, text in texts.items()]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=JOIN_S)  # process start-up (imports) dominates; a writer still alive is a hang
    if any(proc.is_alive() for proc in procs):
        for proc in procs:
            proc.kill()
        classify("store-writers", "hang", f"round {round_}: a writer did not finish within {JOIN_S} s")
    from haygraph.retrieval.store import EmbeddedDocumentStore

    contents = {d.content for d in EmbeddedDocumentStore.load(store).documents}
    missing = [t for t, text in texts.items() if text not in contents]
    codes = [p.exitcode for p in procs]
    if any(code != 0 for code in codes):
        classify("store-writers", "crash", f"writer exit codes {codes}")
    classify("store-writers", "lost_update" if missing else "ok", f"round {round_}: missing {missing}")
