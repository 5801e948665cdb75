"""Names of the evaluated retrieval configurations and the default metric cutoffs.

Import-light on purpose (no Pydantic, Haystack or torch): the CLI builds its ``--help`` from them.
`haygraph.eval.configs` turns the names into query pipeline configs.
"""

from __future__ import annotations

CUT_SUFFIX = "+cut"
DEFAULT_NAME = "default"
"""The retrieval config's own query settings (`QueryConfig()` unless ``--config`` changes them)."""
BASE_NAMES: tuple[str, ...] = (
    DEFAULT_NAME,
    "bm25",
    "dense",
    "hybrid",
    "hybrid-minmax",
    "hybrid+rerank",
    "hybrid-minmax+rerank",
)
TUNED_NAME = "hybrid-tuned"
DEFAULT_CONFIGS: tuple[str, ...] = tuple(n for base in BASE_NAMES for n in (base, base + CUT_SUFFIX))
"""Every base config and its ``+cut`` variant, in report order."""

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 100)
"""Metric cutoffs evaluated by default; the largest is also the retrieval depth."""
