"""PostgreSQL test targets: a fresh table per test on the session server (`pg_settings`, tests/conftest.py).

The embedding model is patched out (8-d hash vectors), as in the Qdrant tests.
"""

import pytest

from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from tests.retrieval.store_helpers import fake_warm_up

pytest.importorskip("haystack_integrations.document_stores.pgvector")


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)


@pytest.fixture
def pg_config(pg_settings) -> RetrievalConfig:
    # only the store section is set explicitly, as in a user's config file
    return RetrievalConfig.from_dict({"store": pg_settings})
