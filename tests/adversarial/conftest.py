"""The adversarial suite's tally: every case is counted by outcome, and the totals are printed at the end.

Outcomes: `ok` (a correct result), `clear_error` (a typed error / error result / one-line CLI error),
and the failures the acceptance counts — `crash` (a traceback or an untyped exception), `hang`
(slower than `HANG_S`), `unclear` (an error that does not say what was wrong, or a multi-line CLI
error), `data_lost`, `lost_update`, `foreign_chunk` (a chunk of another tenant returned) and
`side_effect` (a ticket or address change caused by injected or invalid input). A failure outcome
also fails its test; the summary makes the totals visible in one place (`make adversarial`).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

HANG_S = 30.0
FAILURES = ("crash", "hang", "unclear", "data_lost", "lost_update", "foreign_chunk", "side_effect")


class Tally:
    """Counts adversarial cases by surface and outcome."""

    def __init__(self) -> None:
        self.cases: Counter[str] = Counter()
        self.outcomes: Counter[str] = Counter()
        self.queries = 0
        self.failures: list[str] = []

    def record(self, surface: str, outcome: str, detail: str = "") -> None:
        """Count one case of `surface` with `outcome`; a failure outcome is remembered with `detail`."""
        self.cases[surface] += 1
        self.outcomes[outcome] += 1
        if outcome in FAILURES:
            self.failures.append(f"{surface}: {outcome}: {detail[:200]}")

    @contextmanager
    def timed(self, surface: str, label: str) -> Iterator[None]:
        """Count a hang when the body takes longer than `HANG_S`."""
        start = time.monotonic()
        yield
        if time.monotonic() - start > HANG_S:
            self.record(surface, "hang", label)
            pytest.fail(f"{surface} {label}: took more than {HANG_S} s")

    def totals(self) -> dict[str, Any]:
        """The acceptance totals."""
        return {
            "cases_tried": sum(self.cases.values()),
            "tenant_queries": self.queries,
            **{name: self.outcomes[name] for name in FAILURES},
            "by_surface": dict(sorted(self.cases.items())),
            "outcomes": dict(sorted(self.outcomes.items())),
        }


_TALLY = Tally()


@pytest.fixture(scope="session")
def tally() -> Tally:
    """The session's tally (also printed by `pytest_terminal_summary`)."""
    return _TALLY


@pytest.fixture()
def classify(tally: Tally) -> Callable[..., None]:
    """`classify(surface, outcome, detail)`: record a case, and fail the test on a failure outcome."""

    def _classify(surface: str, outcome: str, detail: str = "") -> None:
        tally.record(surface, outcome, detail)
        if outcome in FAILURES:
            pytest.fail(f"{surface}: {outcome}: {detail[:500]}")

    return _classify


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of this folder `adversarial` (left out of `make test-fast`)."""
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.adversarial)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the adversarial totals (and write them to `$HAYGRAPH_ADVERSARIAL_REPORT` when set)."""
    if not _TALLY.cases:
        return
    totals = _TALLY.totals()
    terminalreporter.section("adversarial totals")
    for key, value in totals.items():
        terminalreporter.write_line(f"{key}: {value}")
    for failure in _TALLY.failures[:20]:
        terminalreporter.write_line(f"  {failure}")
    report = os.environ.get("HAYGRAPH_ADVERSARIAL_REPORT")
    if report:
        Path(report).write_text(json.dumps(totals, indent=2) + "\n", encoding="utf-8")


# -- stores -------------------------------------------------------------------------------------------
TENANTS = ("A", "B")
SHARED_QUESTION = "Which wifi network do visitors use in the office?"


def _shared_doc() -> Any:
    from haystack import Document

    return Document(
        content="Company-wide notice: visitors use the office wifi network GuestNet; ask reception.",
        meta={"tenant": "*", "source_id": "shared-wifi.md"},
    )


def build_handbook_tenant_store(store: Path, *, real_model: bool, cache_dir: Path | None = None) -> Path:
    """The sample handbook indexed once per tenant (identical text, same source ids) plus `DOCS`.

    Without `real_model` the embedder is faked and queries run BM25 only (no model is loaded); with
    it, the store is hybrid over the bundled model (embeddings cached in `cache_dir`).
    """
    from unittest.mock import patch

    from haystack import Document

    from haygraph.retrieval import KnowledgeBase, RetrievalConfig, sample_handbook_path
    from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
    from tests.adapters.tenant_helpers import BM25_ONLY, DOCS

    SHARED_DOC = _shared_doc()  # every tenant reads it (meta.tenant "*")
    from tests.retrieval.store_helpers import fake_warm_up

    config = RetrievalConfig()
    if cache_dir is not None:
        config = config.with_overrides(embedder={"cache_dir": str(cache_dir)})
    if not real_model:
        config = config.with_overrides(query=BM25_ONLY)
    kb = KnowledgeBase(config, store)
    fake = patch.object(CachedDocumentEmbedder, "warm_up", fake_warm_up) if not real_model else _nothing()
    with fake, kb.writing():
        for tenant in TENANTS:
            kb.index([sample_handbook_path()], meta={"tenant": tenant}, progress=False)
        kb.index_documents([Document(content=d.content, meta=dict(d.meta)) for d in [*DOCS, SHARED_DOC]])
    return store


@contextmanager
def _nothing() -> Iterator[None]:
    yield


@pytest.fixture(scope="session")
def bm25_tenant_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tenants' handbooks in a BM25-only store (no model); read-only for tests."""
    return build_handbook_tenant_store(tmp_path_factory.mktemp("adv-bm25") / "store", real_model=False)


@pytest.fixture(scope="session")
def hybrid_tenant_store(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Path:
    """Two tenants' handbooks in a hybrid store over the real bundled model; read-only for tests."""
    store = tmp_path_factory.mktemp("adv-hybrid") / "store"
    return build_handbook_tenant_store(store, real_model=True, cache_dir=haygraph_cache_dir)


@pytest.fixture(scope="module")
def qdrant_tenant_config(bm25_tenant_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """`bm25_tenant_store` copied into a Qdrant collection (local mode, or `$QDRANT_URL`); its config.

    Module-scoped: local mode allows one client per directory, and the Qdrant tests close every client
    when they finish.
    """
    pytest.importorskip("haystack_integrations.document_stores.qdrant")
    from haygraph.retrieval import RetrievalConfig
    from haygraph.retrieval.qdrant.copy import copy_store
    from tests.retrieval.qdrant.targets import drop_target, qdrant_target

    settings = qdrant_target(tmp_path_factory.mktemp("adv-qdrant"), prefix="adv")
    config = RetrievalConfig.from_dict({"store": settings.model_dump(exclude_none=True)})
    copy_store(bm25_tenant_store, config)
    yield config
    drop_target(settings)


@pytest.fixture(scope="module")
def postgres_tenant_config(bm25_tenant_store: Path, pg_settings_module: dict[str, Any]) -> Any:
    """`bm25_tenant_store` copied into a PostgreSQL table on the test session's server; its config."""
    pytest.importorskip("haystack_integrations.document_stores.pgvector")
    from haygraph.retrieval import RetrievalConfig
    from haygraph.retrieval.store_copy import StoreLocation, copy_store

    config = RetrievalConfig.from_dict({"store": pg_settings_module})
    copy_store(StoreLocation(directory=bm25_tenant_store), StoreLocation(config=config))
    return config


@pytest.fixture(scope="module")
def pg_settings_module(pgvector_cluster: Any) -> Iterator[dict[str, Any]]:
    """A table on the session's PostgreSQL server for one module; dropped afterwards."""
    import contextlib

    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.postgres import connection

    settings = {"backend": "postgres", "url": pgvector_cluster.url, "collection": f"adv_{os.getpid()}"}
    connection.drop_store(StoreConfig(**settings))
    yield settings
    with contextlib.suppress(Exception):
        connection.drop_store(StoreConfig(**settings))
