"""`copy_store`: move a store between backends — embedded, PostgreSQL, Qdrant — in any direction.

The documents keep their ids, meta and stored embeddings (nothing is re-embedded); the persisted config
travels with them, its `store` section becoming the target's. Whatever the target held is replaced in
one write (one transaction on PostgreSQL, one version on the embedded store). Afterwards the target is
opened again and its ids compared with the source's: a copy that lost or added a chunk is an error.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import ConfigError, StoreError
from haygraph.retrieval.kb_reader import new_store, open_store

logger = logging.getLogger(__name__)

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class StoreLocation:
    """Where a store is: an embedded store's directory, or a config whose `store` section names a server."""

    directory: Path | None = None
    config: RetrievalConfig | None = None

    @classmethod
    def parse(cls, text: str | Path) -> StoreLocation:
        """A config file (.yaml/.yml/.json, `store.backend` qdrant or postgres) or a store directory."""
        path = Path(text)
        if path.suffix.lower() in CONFIG_SUFFIXES and path.is_file():
            config = RetrievalConfig.from_file(path)
            if config.store.backend == "embedded":
                raise ConfigError(
                    f"{path}: store.backend is embedded; name the store's directory instead of a config"
                )
            return cls(config=config)
        return cls(directory=path)

    def describe(self) -> str:
        """The directory, or the server target's short name."""
        if self.config is not None:
            return new_store(self.config, None).path or self.config.store.backend
        return str(self.directory)


@dataclass(frozen=True)
class CopyReport:
    """What `copy_store` copied, and where to."""

    documents: int
    replaced: int
    target: str
    seconds: float


def copy_store(source: StoreLocation, target: StoreLocation) -> CopyReport:
    """Copy every document of `source` (with embeddings and config) into `target`, replacing its content.

    Raises:
        ConfigError: `target` names the same store as `source`, or changes an indexing setting.
        StoreNotFoundError / CorruptStoreError: `source` holds no (intact) store.
        StoreError: a server is unreachable or refuses the credentials, or the copy's ids differ.

    """
    start = time.perf_counter()
    if source == target or (
        source.directory and target.directory and _same(source.directory, target.directory)
    ):
        raise ConfigError("store copy: --from and --to name the same store")
    merged, store = open_store(source.directory, source.config)
    target_config = merged.with_overrides(
        store=(target.config.store if target.config is not None else RetrievalConfig().store).model_dump()
    )
    out = new_store(target_config, target.directory)
    with out.writing():
        replaced = out.count_documents()
        out.clear()
        out.meta = {**store.meta, "config": target_config.model_dump(mode="json")}
        documents = store.filter_documents()
        out.write_documents(documents, policy=DuplicatePolicy.OVERWRITE)
        out.save(target.directory if target.config is None else None)
    _check_ids(store.documents, target_config, target)
    logger.info("copied %d documents from %s to %s", len(documents), source.describe(), out.path)
    return CopyReport(
        documents=len(documents),
        replaced=replaced,
        target=out.path or "",
        seconds=time.perf_counter() - start,
    )


def _check_ids(expected: list, config: RetrievalConfig, target: StoreLocation) -> None:
    """Open the target again: its ids must be the source's."""
    _, copied = open_store(target.directory, config if target.config is not None else None)
    want, got = {d.id for d in expected}, {d.id for d in copied.documents}
    if want != got:
        raise StoreError(
            f"store copy to {target.describe()}: the target holds {len(got)} chunks, the source "
            f"{len(want)} ({len(want - got)} missing, {len(got - want)} extra); run the copy again"
        )


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
