"""`copy_store`: move an embedded store into a Qdrant collection, embeddings included (none re-embedded).

Kept for callers of the first version; `haygraph.retrieval.store_copy.copy_store` copies between any two
backends.
"""

from __future__ import annotations

from pathlib import Path

from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import ConfigError
from haygraph.retrieval.store_copy import CopyReport, StoreLocation
from haygraph.retrieval.store_copy import copy_store as copy_between

__all__ = ["CopyReport", "copy_store"]


def copy_store(source_dir: str | Path, config: RetrievalConfig) -> CopyReport:
    """Copy the embedded store in `source_dir` into the Qdrant collection `config.store` names.

    Raises:
        ConfigError: `config.store.backend` is not qdrant, or `config` changes an indexing setting.
        StoreNotFoundError / CorruptStoreError: `source_dir` holds no (intact) store.
        StoreError: Qdrant is unreachable, refuses the key, or the collection does not fit.

    """
    if config.store.backend != "qdrant":
        raise ConfigError(
            f"store copy --to needs a config with store.backend qdrant, but it says {config.store.backend!r}"
        )
    return copy_between(StoreLocation(directory=Path(source_dir)), StoreLocation(config=config))
