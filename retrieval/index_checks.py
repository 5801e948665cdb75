"""What the write side checks before it changes a store (called under the store's writer lock).

A store holds one encoder's vectors: `adopted_encoder` keeps a store's encoder when the settings say
``backend: auto``, `check_compatible` refuses vectors of another model or of another vector family
(int8 next to fp32), and `check_saveable` refuses to save a default reranker that cannot load.
"""

from __future__ import annotations

from haygraph.retrieval.config import BUNDLED_MODEL, RetrievalConfig, saved_encoder
from haygraph.retrieval.embedding_cache import cache_model_key
from haygraph.retrieval.errors import ConfigError, ModelUnavailableError
from haygraph.retrieval.kb_reader import saved_reranker
from haygraph.retrieval.pipelines import check_reranker
from haygraph.retrieval.store import EmbeddedDocumentStore


def adopted_encoder(config: RetrievalConfig, store: EmbeddedDocumentStore) -> RetrievalConfig | None:
    """With backend "auto": `config` with the encoder of a store holding vectors (None: nothing to adopt)."""
    embedder = config.embedder
    if embedder.backend != "auto" or embedder.model != BUNDLED_MODEL or not store.count_documents():
        return None
    keep = saved_encoder((store.meta.get("config") or {}).get("embedder"))
    return config.with_overrides(embedder=keep) if keep else None


def check_compatible(config: RetrievalConfig, store: EmbeddedDocumentStore) -> None:
    """Refuse to add embeddings of one model to a store built with another."""
    embedder = (store.meta.get("config") or {}).get("embedder") or {}
    saved, wanted = embedder.get("model"), config.embedder.model
    fix = "open it with its own settings (KnowledgeBase.open / no --config), or index into a new directory"
    if saved and saved != wanted and store.count_documents():
        raise ConfigError(
            f"store {store.path} was built with embedder.model {saved!r}, but this config uses "
            f"{wanted!r}; {fix}"
        )
    # int8 vectors differ from fp32 ones (torch and ONNX fp32 give the same vectors): never mix them
    saved_backend = embedder.get("backend", "torch")
    wanted_backend = config.embedder.backend
    if (
        saved
        and store.count_documents()
        and cache_model_key(wanted, saved_backend) != cache_model_key(wanted, wanted_backend)
    ):
        raise ConfigError(
            f"store {store.path} was built with embedder.backend {saved_backend!r}, whose vectors "
            f"differ from {wanted_backend!r}'s; {fix}"
        )


def check_saveable(config: RetrievalConfig, store: EmbeddedDocumentStore) -> None:
    """Refuse to make a reranker that cannot load the store's default (every default search needs it).

    Checked before anything is indexed, for a reranker the store does not hold yet; one it already
    holds (saved before this check, or deleted since) is skipped at query time instead
    (`KnowledgeReader.runner`). With ``on_unavailable: skip`` a model missing offline is accepted:
    searches then say it was skipped.
    """
    reranker = config.query.reranker
    if reranker.model is None or reranker.model == saved_reranker(store):
        return
    try:
        check_reranker(reranker)
    except (ModelUnavailableError, ConfigError) as exc:
        if isinstance(exc, ModelUnavailableError) and reranker.on_unavailable == "skip":
            return
        raise ConfigError(
            f"query.reranker.model {reranker.model!r} cannot be saved as the store's default: {exc}; "
            "nothing was indexed or saved"
        ) from exc
