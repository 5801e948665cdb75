"""Build or reuse the one index that every evaluated configuration shares.

Datasets are indexed whole (the splitter is off: one BEIR document = one chunk) through
`KnowledgeBase.index_beir`, so document embeddings come from (and go to) the on-disk embedding
cache keyed by model + exact text. When no configuration needs embeddings (a BM25-only smoke run)
the same indexing pipeline is run without its embedder, so no model is loaded.

A ``store_dir`` that already holds a compatible index (same splitter, embedder and BM25 settings,
the same document contents, embeddings present when needed) is reused as is; otherwise it is
(re)built there and kept.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from haygraph.eval.errors import DatasetError
from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.chunk_ids import content_hash
from haygraph.retrieval.config import RetrievalConfig, saved_encoder
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.errors import ConfigError, IndexSettingsMismatchError, StoreError
from haygraph.retrieval.knowledge_base import KnowledgeBase, run_pipeline
from haygraph.retrieval.pipelines import build_indexing_pipeline

logger = logging.getLogger(__name__)

DATASETS_ENV = "HAYGRAPH_DATASETS"
_MATCHED_SECTIONS = ("splitter", "embedder", "bm25")
_QUERY_TIME_KEYS = frozenset({"languages"})


@dataclass(frozen=True)
class IndexInfo:
    """How the shared index was obtained.

    Attributes:
        seconds: wall time spent building it in this run (None when a saved index was reused).
        documents: chunks in the store (one per corpus document here).
        embedded: document embeddings computed in this run (None when nothing was embedded).
        from_cache: document embeddings taken from the on-disk cache (None when nothing was embedded).
        reused: a saved index in ``store`` was opened instead of building one.
        with_embeddings: the store holds document embeddings.
        store: the store directory, or None for an in-memory index.

    """

    seconds: float | None
    documents: int
    embedded: int | None
    from_cache: int | None
    reused: bool
    with_embeddings: bool
    store: str | None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form for the JSON results."""
        return asdict(self)


def datasets_root() -> Path:
    """Return the shared datasets folder: ``$HAYGRAPH_DATASETS`` or ``<repo>/../shared/datasets``."""
    override = os.environ.get(DATASETS_ENV)
    if override:
        return Path(override)
    return Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def resolve_dataset(name_or_path: str | Path) -> Path:
    """Find a dataset folder given as a path, or as a name under `datasets_root` (``scifact``).

    Raises:
        DatasetError: neither exists.

    """
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    shared = datasets_root() / str(name_or_path)
    if shared.is_dir():
        return shared
    raise DatasetError(
        f"dataset not found: {name_or_path} (not a folder, and not a dataset in {datasets_root()})"
    )


def whole_document_config(base: RetrievalConfig | None = None) -> RetrievalConfig:
    """Return the retrieval config used for datasets: ``base`` (default config) with the splitter off."""
    return (base or RetrievalConfig()).with_overrides(splitter={"enabled": False})


def prepare_index(
    dataset_dir: Path,
    config: RetrievalConfig,
    *,
    store_dir: str | Path | None = None,
    need_embeddings: bool = True,
    progress: bool = False,
) -> tuple[KnowledgeBase, IndexInfo]:
    """Open a compatible index in ``store_dir`` or build one (kept there when a directory is given)."""
    corpus_path = dataset_dir / "corpus.jsonl"
    if config.store.backend != "embedded":
        return _prepare_remote(corpus_path, config, progress=progress)
    if store_dir is not None and (Path(store_dir) / "CURRENT").exists():
        reason, kb = _reusable(store_dir, config, corpus_path, need_embeddings)
        if kb is not None:
            logger.info("reusing the index in %s", store_dir)
            return kb, _info(kb, None, None, None, reused=True)
        logger.info("rebuilding the index in %s: %s", store_dir, reason)
    kb = KnowledgeBase(config, store_dir)
    if store_dir is not None:
        kb.clear()  # indexing into an existing store updates it; a rebuild replaces its content instead
    start = time.perf_counter()
    if need_embeddings:
        report = kb.index_beir(corpus_path, progress=progress, save=store_dir is not None)
        return kb, _info(kb, report.seconds, report.embedded, report.from_cache, reused=False)
    _index_without_embeddings(kb, corpus_path, save=store_dir is not None)
    return kb, _info(kb, time.perf_counter() - start, None, None, reused=False)


def _prepare_remote(
    corpus_path: Path, config: RetrievalConfig, *, progress: bool
) -> tuple[KnowledgeBase, IndexInfo]:
    """Reuse the Qdrant collection or PostgreSQL table ``config.store`` names when it holds this corpus.

    Otherwise it is dropped and rebuilt. It is the store (``--store`` is not used), always built with
    embeddings, even for BM25-only runs: its dense vector size is fixed when it is created (the vectors
    come from the cache).
    """
    if config.store.backend == "postgres":
        from haygraph.retrieval.postgres import connection as pg

        exists = pg.store_version(config.store) is not None
        where, drop = pg.describe(config.store), pg.drop_store
    else:
        from haygraph.retrieval.qdrant import connection as qd

        exists = qd.collection_exists(config.store)
        where, drop = qd.describe(config.store), qd.drop_collection
    if exists:
        reason, kb = _reusable(None, config, corpus_path, True)
        if kb is not None:
            logger.info("reusing the store %s", kb.store.path)
            return kb, _info(kb, None, None, None, reused=True)
        logger.info("rebuilding the store %s: %s", where, reason)
        drop(config.store)
    kb = KnowledgeBase(config)
    report = kb.index_beir(corpus_path, progress=progress, save=True)
    return kb, _info(kb, report.seconds, report.embedded, report.from_cache, reused=False)


def _info(
    kb: KnowledgeBase, seconds: float | None, embedded: int | None, cached: int | None, *, reused: bool
) -> IndexInfo:
    """Describe the index in ``kb``."""
    return IndexInfo(
        seconds=seconds,
        documents=kb.store.count_documents(),
        embedded=embedded,
        from_cache=cached,
        reused=reused,
        with_embeddings=kb.store.has_embeddings(),
        store=kb.store.path,
    )


def _index_without_embeddings(kb: KnowledgeBase, corpus_path: Path, *, save: bool) -> None:
    """Run the standard indexing pipeline without its embedder, then build the BM25 index."""
    pipe = build_indexing_pipeline(kb.config, kb.store, from_files=False, embed=False)
    run_pipeline(pipe, {"cleaner": {"documents": read_beir_corpus(corpus_path)}})
    kb.store.meta["config"] = kb.config.model_dump(mode="json")
    kb.store.bm25_index(BM25Index.from_config(kb.config.bm25))
    if save:
        kb.save()


def _indexing_part(section: Any) -> Any:
    """A config section without its query-time keys (``embedder.languages`` only steers fusion)."""
    if not isinstance(section, dict):
        return section
    return {k: v for k, v in section.items() if k not in _QUERY_TIME_KEYS}


def _reusable(
    store_dir: str | Path | None, config: RetrievalConfig, corpus_path: Path, need_embeddings: bool
) -> tuple[str, KnowledgeBase | None]:
    """(reason it cannot be reused, None) or ("", the opened knowledge base)."""
    try:
        kb = KnowledgeBase.open(store_dir, config)
    except IndexSettingsMismatchError as exc:
        return f"its indexing settings differ ({exc})", None
    except (StoreError, ConfigError) as exc:
        return f"cannot open it ({exc})", None
    saved = kb.store.meta.get("config") or {}
    wanted = config.model_dump(mode="json")
    if wanted["embedder"]["backend"] == "auto":
        # auto picks the same encoder for the same documents (checked below) as when the store was built
        wanted["embedder"] = {**wanted["embedder"], **saved_encoder(saved.get("embedder"))}
    for section in _MATCHED_SECTIONS:
        if _indexing_part(saved.get(section)) != _indexing_part(wanted[section]):
            return f"its {section} settings differ", None
    if need_embeddings and not kb.store.has_embeddings():
        return "it holds no embeddings", None
    stored = {d.meta.get("content_hash") for d in kb.store.documents}
    expected = {content_hash(d.content or "") for d in read_beir_corpus(corpus_path)}
    if stored != expected:
        return "its documents differ from the corpus", None
    return "", kb
