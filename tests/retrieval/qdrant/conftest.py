"""Qdrant test targets: local mode in a temporary directory, or the server at $QDRANT_URL when it is set.

The same tests run unchanged against both; against a server every test uses its own collection, which
is dropped afterwards.
"""

import os
import uuid

import pytest

from haygraph.retrieval.config import RetrievalConfig, StoreConfig
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.qdrant import connection
from tests.retrieval.store_helpers import fake_warm_up

pytest.importorskip("qdrant_client")
pytest.importorskip("haystack_integrations.document_stores.qdrant")


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)


@pytest.fixture
def qdrant_settings(tmp_path) -> StoreConfig:
    url = os.environ.get("QDRANT_URL")
    name = f"t{uuid.uuid4().hex[:12]}"
    target = {"url": url} if url else {"path": str(tmp_path / "qdrant")}
    settings = StoreConfig(backend="qdrant", collection=name, **target)
    yield settings
    if url:
        client = connection.client_for(settings)
        for collection in (name, connection.manifest_collection(settings)):
            if client.collection_exists(collection):
                client.delete_collection(collection)
    connection.close_clients()


@pytest.fixture
def qdrant_config(qdrant_settings) -> RetrievalConfig:
    # only the store section is set explicitly, as in a user's config file
    return RetrievalConfig.from_dict({"store": qdrant_settings.model_dump(exclude_none=True)})
