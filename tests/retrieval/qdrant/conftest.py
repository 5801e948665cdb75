"""Qdrant test targets: local mode in a temporary directory, or the server at $QDRANT_URL when it is set.

The same tests run unchanged against both; against a server every test uses its own collection, which
is dropped afterwards.
"""

import pytest

from haygraph.retrieval.config import RetrievalConfig, StoreConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from tests.retrieval.qdrant.targets import drop_target, qdrant_target
from tests.retrieval.store_helpers import fake_warm_up

pytest.importorskip("qdrant_client")
pytest.importorskip("haystack_integrations.document_stores.qdrant")


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)


@pytest.fixture
def qdrant_settings(tmp_path) -> StoreConfig:
    settings = qdrant_target(tmp_path)
    yield settings
    drop_target(settings)


@pytest.fixture
def qdrant_config(qdrant_settings) -> RetrievalConfig:
    # only the store section is set explicitly, as in a user's config file
    return RetrievalConfig.from_dict({"store": qdrant_settings.model_dump(exclude_none=True)})
