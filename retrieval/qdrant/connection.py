"""Connecting to Qdrant: one client per target, collection set-up and error translation.

Qdrant's local mode locks its directory (and an in-memory instance lives in its client), so a process
keeps one `QdrantClient` per target (`client_for`); the `QdrantDocumentStore` of every `KnowledgeBase`
over the same target shares it. The collection is created here rather than by `QdrantDocumentStore`, so
its sparse vector gets Qdrant's IDF modifier, the payload indexes on `meta.tenant` and `meta.source_id`
exist, and shard/replication settings are applied; an existing collection is checked for the embedding
dimension and sparse vocabulary this config needs.
"""

from __future__ import annotations

import atexit
import logging
import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from haygraph.retrieval.config import StoreConfig
from haygraph.retrieval.errors import ConfigError, StoreError, StoreNotFoundError, translated_errors

logger = logging.getLogger(__name__)

DENSE = "text-dense"
"""Name of the dense vector (qdrant-haystack's `DENSE_VECTORS_NAME`)."""
SPARSE = "text-sparse"
"""Name of the sparse vector (qdrant-haystack's `SPARSE_VECTORS_NAME`)."""
INDEXED_FIELDS = ("meta.tenant", "meta.source_id")
"""Payload fields with a keyword index: tenant isolation and removal by source are filters on them."""

_CLIENTS: dict[tuple[str, str], Any] = {}


def describe(settings: StoreConfig) -> str:
    """A short human-readable name of the target, e.g. ``qdrant:docs@http://host:6333``."""
    target = settings.url or settings.path or settings.location
    return f"qdrant:{settings.collection}@{target}"


def manifest_collection(settings: StoreConfig) -> str:
    """Name of the side collection holding the store manifest (settings, BM25 statistics)."""
    return f"{settings.collection}__haygraph"


def client_for(settings: StoreConfig) -> Any:
    """The process' `QdrantClient` for the target of `settings` (created on first use).

    Raises:
        ConfigError: `api_key_env` names an unset variable.

    """
    from qdrant_client import QdrantClient

    key = ("url", settings.url) if settings.url else ("path", settings.path or settings.location or "")
    client = _CLIENTS.get(key)
    if client is not None:
        return client
    if settings.url:
        api_key = None
        if settings.api_key_env:
            api_key = os.environ.get(settings.api_key_env)
            if not api_key:
                raise ConfigError(
                    f"store.api_key_env names {settings.api_key_env!r}, but that environment variable is not "
                    "set: export it with the Qdrant API key"
                )
        client = QdrantClient(
            url=settings.url, api_key=api_key, timeout=settings.timeout, check_compatibility=False
        )
    elif settings.path:
        with qdrant_errors(settings):
            client = QdrantClient(path=settings.path)
    else:
        client = QdrantClient(location=":memory:")
    if not _CLIENTS:
        atexit.register(close_clients)  # local mode flushes and unlocks its directory on close
    _CLIENTS[key] = client
    return client


def close_clients() -> None:
    """Close every cached client (releases local-mode directory locks); for tests and shutdown."""
    for client in _CLIENTS.values():
        client.close()
    _CLIENTS.clear()


@contextmanager
def qdrant_errors(settings: StoreConfig) -> Iterator[None]:
    """Translate Qdrant client failures into `StoreError`s that name the target and the fix.

    Also inside a query pipeline, whose runner wraps them (`translated_errors`).
    """
    with translated_errors(lambda exc: _translate(exc, settings)):
        yield


def _translate(exc: BaseException, settings: StoreConfig) -> StoreError | None:
    """The `StoreError` for a Qdrant client failure, or None when `exc` is not one."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    where = describe(settings)
    if isinstance(exc, UnexpectedResponse):
        if exc.status_code in (401, 403):
            return StoreError(
                f"{where}: the server refused the API key (HTTP {exc.status_code}); set the key in the "
                f"environment variable named by store.api_key_env ({settings.api_key_env or 'not set'})"
            )
        return StoreError(f"{where}: Qdrant answered HTTP {exc.status_code}: {exc.reason_phrase}")
    if isinstance(exc, ResponseHandlingException | ConnectionError | TimeoutError):
        return StoreError(
            f"{where}: cannot reach Qdrant ({exc}); check store.url and that the server is running"
        )
    if isinstance(exc, RuntimeError) and "already accessed" in str(exc):
        # local mode: "Storage folder ... is already accessed by another instance of Qdrant client"
        return StoreError(
            f"{where}: the local-mode directory is open in another process; local mode allows one "
            "process at a time (stop the other process, or run a Qdrant server for shared access)"
        )
    return None


def collection_exists(settings: StoreConfig) -> bool:
    """Whether the target holds the collection and its manifest."""
    client = client_for(settings)
    with qdrant_errors(settings):
        return bool(client.collection_exists(settings.collection)) and bool(
            client.collection_exists(manifest_collection(settings))
        )


def drop_collection(settings: StoreConfig) -> bool:
    """Delete the collection and its manifest (a rebuild from scratch); True when there was one."""
    client = client_for(settings)
    dropped = False
    with qdrant_errors(settings):
        for name in (settings.collection, manifest_collection(settings)):
            if client.collection_exists(name):
                client.delete_collection(name)
                dropped = True
    if dropped:
        logger.info("dropped Qdrant collection %s", describe(settings))
    return dropped


def ensure_collection(settings: StoreConfig, dimension: int | None) -> None:
    """Create the collection (dense + IDF-weighted sparse vectors, payload indexes) or check the existing one.

    Raises:
        StoreError: the existing collection holds vectors of another dimension or lacks the IDF sparse vector.

    """
    from qdrant_client import models

    client = client_for(settings)
    name = settings.collection
    with qdrant_errors(settings):
        if client.collection_exists(name):
            check_collection(settings, dimension)
        else:
            if dimension is None:
                raise StoreError(f"{describe(settings)}: cannot create a collection without embeddings")
            client.create_collection(
                name,
                vectors_config={DENSE: models.VectorParams(size=dimension, distance=models.Distance.COSINE)},
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                shard_number=settings.shard_number,
                replication_factor=settings.replication_factor,
            )
            with warnings.catch_warnings():  # local mode warns that it has no use for payload indexes
                warnings.simplefilter("ignore", UserWarning)
                for field in INDEXED_FIELDS:
                    client.create_payload_index(name, field, field_schema=models.PayloadSchemaType.KEYWORD)
            logger.info(
                "created Qdrant collection %s (%d-d dense, IDF sparse)", describe(settings), dimension
            )
        meta = manifest_collection(settings)
        if not client.collection_exists(meta):
            client.create_collection(meta, vectors_config={})


def check_collection(settings: StoreConfig, dimension: int | None) -> None:
    """Raise `StoreError` naming the fix when the collection does not fit (dimension, sparse IDF vector)."""
    from qdrant_client import models

    client = client_for(settings)
    where = describe(settings)
    with qdrant_errors(settings):
        if not client.collection_exists(settings.collection):
            raise StoreNotFoundError(
                f"{where}: the collection does not exist; create it with `haygraph index --config CONFIG` "
                "or `haygraph store copy --from DIR --to CONFIG`"
            )
        params = client.get_collection(settings.collection).config.params
    vectors = params.vectors if isinstance(params.vectors, dict) else {}
    sparse = params.sparse_vectors or {}
    if DENSE not in vectors or SPARSE not in sparse:
        raise StoreError(
            f"{where}: the collection was not made by haygraph (it needs the vectors {DENSE!r} and "
            f"{SPARSE!r}); use another store.collection"
        )
    if dimension is not None and vectors[DENSE].size != dimension:
        raise StoreError(
            f"{where}: the collection holds {vectors[DENSE].size}-d vectors but embedder.model makes "
            f"{dimension}-d ones; use the embedder it was built with, or another store.collection"
        )
    if sparse[SPARSE].modifier != models.Modifier.IDF:
        raise StoreError(f"{where}: the sparse vector lacks Qdrant's IDF modifier; re-create the collection")


def read_manifest(settings: StoreConfig) -> dict[str, Any]:
    """The store manifest saved with the collection ({} when there is none)."""
    client = client_for(settings)
    with qdrant_errors(settings):
        if not client.collection_exists(manifest_collection(settings)):
            return {}
        records = client.retrieve(manifest_collection(settings), [0], with_payload=True)
    return dict(records[0].payload or {}) if records else {}


def write_manifest(settings: StoreConfig, manifest: dict[str, Any]) -> None:
    """Replace the store manifest saved with the collection."""
    from qdrant_client import models

    client = client_for(settings)
    with qdrant_errors(settings):
        client.upsert(manifest_collection(settings), [models.PointStruct(id=0, vector={}, payload=manifest)])
