"""`copy_store`: move an embedded store into a Qdrant collection, embeddings included (none re-embedded)."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.qdrant.store import QdrantStore
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.store_config import merge_store_config

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CopyReport:
    """What `copy_store` copied, and where to."""

    documents: int
    replaced: int
    target: str
    seconds: float


def copy_store(source_dir: str | Path, config: RetrievalConfig) -> CopyReport:
    """Copy the embedded store in `source_dir` into the Qdrant collection `config.store` names.

    The documents keep their ids, meta and stored embeddings; BM25 sparse vectors are computed from
    their text with the store's BM25 settings. Whatever the collection held is replaced. The store's
    persisted config travels with it (its `store` section becomes `config.store`).

    Raises:
        ConfigError: `config.store.backend` is not qdrant, or `config` changes an indexing setting.
        StoreNotFoundError / CorruptStoreError: `source_dir` holds no (intact) store.
        StoreError: Qdrant is unreachable, refuses the key, or the collection does not fit.

    """
    if config.store.backend != "qdrant":
        raise ConfigError(
            f"store copy --to needs a config with store.backend qdrant, but it says {config.store.backend!r}"
        )
    start = time.perf_counter()
    source = EmbeddedDocumentStore.load(source_dir)
    where = str((source.version_dir or Path(source_dir)) / "manifest.json")
    merged = merge_store_config(source.meta.get("config"), config, where=where)
    merged = merged.with_overrides(store=config.store.model_dump())
    target = QdrantStore(config.store, merged.bm25)
    with target.writing():
        replaced = target.count_documents()
        target.clear()
        target.meta = {**source.meta, "config": merged.model_dump(mode="json")}
        documents = source.filter_documents()
        target.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
        target.save()
    logger.info("copied %d documents from %s to %s", len(documents), source_dir, target.path)
    return CopyReport(
        documents=len(documents),
        replaced=replaced,
        target=target.path or "",
        seconds=time.perf_counter() - start,
    )
