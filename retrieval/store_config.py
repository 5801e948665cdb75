"""A store's persisted settings and a caller's config: which one wins for which key.

A store keeps the whole `RetrievalConfig` it was indexed with in the manifest of its version directory:
the settings that shaped the index and its default query settings. `merge_store_config` lays the keys a
caller set explicitly (Pydantic's ``exclude_unset``: a config file that only says
``query: {mode: bm25}`` sets nothing else) on top of it:

- **indexing settings** — ``splitter.*``, ``embedder.model`` and the BM25 tokenization and scoring
  (``bm25.*`` except ``backend``) — shaped the stored chunks, vectors and BM25 index. The caller may
  repeat them but not change them: a different value raises `IndexSettingsMismatchError` naming the
  key (re-index with the new config to change them);
- everything else — ``query.*``, the retriever backends (``bm25.backend``, ``dense.backend``) and the
  embedder's runtime knobs (``batch_size``, ``cache_dir``, ``use_cache``, ``backend``) — the caller's
  value wins. Backend ``auto`` (the default) defers to the store: the store's backend, model and
  languages are kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from haygraph.retrieval.config import BUNDLED_MODEL, ENCODER_KEYS, RetrievalConfig
from haygraph.retrieval.errors import ConfigError, IndexSettingsMismatchError

INDEXING_KEYS: tuple[str, ...] = (
    "splitter",
    "embedder.model",
    "bm25.k1",
    "bm25.b",
    "bm25.method",
    "bm25.language",
    "bm25.stemming",
    "bm25.stopwords",
)
"""Dotted keys (or whole sections) that shaped a stored index and cannot be overridden when opening it."""


def persisted_config(saved: Mapping[str, Any] | None, *, where: str) -> RetrievalConfig:
    """Validate a store's persisted config (missing sections take the defaults).

    Raises:
        ConfigError: an unknown key or a bad value; the message starts with `where` (the store file).

    """
    try:
        return RetrievalConfig.from_dict(dict(saved or {}))
    except ConfigError as exc:
        raise ConfigError(f"{where}: the store's saved config is invalid: {exc}") from exc


def merge_store_config(
    saved: Mapping[str, Any] | None, given: RetrievalConfig | None, *, where: str
) -> RetrievalConfig:
    """Return the store's persisted config (`saved`) with the keys `given` set explicitly laid on top.

    Raises:
        ConfigError: the persisted config is invalid (the message names `where`, the store file).
        IndexSettingsMismatchError: `given` sets an indexing setting to a value the store was not
            built with; the message names the key and both values.

    """
    base = persisted_config(saved, where=where)
    if given is None:
        return base
    overlay = given.model_dump(mode="json", exclude_unset=True)
    if given.embedder.backend == "auto" and isinstance(overlay.get("embedder"), dict):
        # auto chose the store's encoder when it was built: keep it (a dumped default config says auto)
        drop = set(ENCODER_KEYS) - ({"model"} if given.embedder.model != BUNDLED_MODEL else set())
        overlay["embedder"] = {k: v for k, v in overlay["embedder"].items() if k not in drop}
    stored = base.model_dump(mode="json")
    for key, value in leaves(overlay):
        if not is_indexing_key(key):
            continue
        built_with = _get(stored, key)
        if value != built_with:
            raise IndexSettingsMismatchError(
                f"config key {key!r} is {value!r} but the store ({where}) was indexed with {built_with!r}; "
                "indexing settings (splitter, embedder.model, bm25 except backend) come from the store: "
                "re-index with the new config to change them"
            )
    return base.with_overrides(**overlay)


def is_indexing_key(key: str) -> bool:
    """Tell whether the dotted `key` is (inside) one of `INDEXING_KEYS`."""
    return any(key == k or key.startswith(k + ".") for k in INDEXING_KEYS)


def leaves(data: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield (dotted key, value) for every non-mapping value of a nested mapping (empty ones set nothing)."""
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from leaves(value, path + ".")
        else:
            yield path, value


def _get(data: Mapping[str, Any], dotted: str) -> Any:
    value: Any = data
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value
