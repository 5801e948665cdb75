"""Where haygraph keeps what it computes once per machine: `default_cache_dir`.

A module of the top-level package, below both halves: the retrieval side caches embeddings, ONNX
exports and BM25 segments there, and `haygraph.chinese_words` (read by both halves) its dictionary.
"""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """`$HAYGRAPH_CACHE_DIR`, else `~/.cache/haygraph` (read when called, never at import)."""
    env = os.environ.get("HAYGRAPH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "haygraph"
