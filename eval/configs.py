"""Named retrieval configurations that the harness runs side by side on one index.

Every name maps to a `QueryConfig` over the same store (one index, one embedding pass):

=====================  =================================================================
``default``            the config's own query settings as shipped (mode, fusion, weights, languages)
``bm25``               BM25 only (bm25s, the tokenizer of ``haygraph.retrieval.tokenize``)
``dense``              exact cosine over the embedding matrix
``hybrid``             weighted RRF of BM25 and dense (the config's default weights)
``hybrid-minmax``      weighted min-max normalized score fusion
``hybrid+rerank``      ``hybrid`` then a cross-encoder reranks the fused top-10
``hybrid-minmax+rerank``  ``hybrid-minmax`` then the cross-encoder (``--reranker DIR``)
``hybrid-tuned``       fusion method and weights read from a `tune` JSON (``--tuned``)
``<any>+cut``          the same config followed by the score-cliff cut
=====================  =================================================================

Uncut configs return a fixed top-``depth`` list (depth = the largest metric cutoff) so that
Recall@100 means something; the ``+cut`` variants pass that list through the score-cliff cut.
For hybrid configs each retriever contributes ``depth`` candidates. A config that cannot run here
(no reranker model offline) is returned with a ``skip_reason`` instead of being dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haygraph.eval.errors import EvalError
from haygraph.eval.names import BASE_NAMES, CUT_SUFFIX, DEFAULT_CONFIGS, DEFAULT_NAME, TUNED_NAME
from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.errors import ConfigError, ModelUnavailableError
from haygraph.retrieval.model_paths import resolve_model
from haygraph.retrieval.pipelines import check_cross_encoder

logger = logging.getLogger(__name__)

DEFAULT_RERANKER = "cross-encoder/ms-marco-MiniLM-L-6-v2"
"""Cross-encoder tried for ``hybrid+rerank`` when no other model is given (only if cached offline)."""

__all__ = [
    "BASE_NAMES",
    "CUT_SUFFIX",
    "DEFAULT_CONFIGS",
    "DEFAULT_NAME",
    "DEFAULT_RERANKER",
    "TUNED_NAME",
    "EvalConfig",
    "TunedParams",
    "build_configs",
    "parse_config_names",
]


@dataclass(frozen=True)
class TunedParams:
    """Parameters chosen by `haygraph.eval.tuning` on a train split (see ``tune_hybrid``)."""

    method: str
    weights: tuple[float, float]
    rrf_k: int
    candidates: int
    drop_ratio: float
    max_keep: int
    dataset: str = ""
    split: str = ""

    def query_overrides(self) -> dict[str, Any]:
        """These parameters as `RetrievalConfig` overrides: hybrid mode, the tuned fusion and cut values.

        What ``search/ask/chat/serve-mcp --tuned FILE`` lay over a store's query settings (whether the
        cut is enabled stays the store's or the config's choice).
        """
        fusion = {
            "method": self.method,
            "weights": list(self.weights),
            "rrf_k": self.rrf_k,
            "candidates": self.candidates,
        }
        return {"query": {"mode": "hybrid", "fusion": fusion, "cut": self.cut_overrides()}}

    def cut_overrides(self) -> dict[str, Any]:
        """The tuned cut as `CutConfig` overrides.

        The cut was tuned on the fused ranking score with no absolute floor (`eval.tuning.tune_cut`), so it
        runs on that scale (``scale: score``, ``min_score: 0``), not on the calibrated relevance that the
        shipped default cut uses: the tuned drop ratio means something only on the scale it was tuned on.
        """
        return {"drop_ratio": self.drop_ratio, "max_keep": self.max_keep, "scale": "score", "min_score": 0.0}


@dataclass(frozen=True)
class EvalConfig:
    """One named configuration to evaluate.

    Attributes:
        name: the report name (``hybrid+cut``).
        base: the name without ``+cut`` (its uncut twin, used for the fixed top-5 comparison).
        query: the query pipeline config, or None when the config is skipped.
        cut: whether the score-cliff cut ends the pipeline.
        needs_embeddings: the config embeds queries (dense or hybrid).
        skip_reason: why the config cannot run here (None when it can).

    """

    name: str
    base: str
    query: QueryConfig | None
    cut: bool
    needs_embeddings: bool
    skip_reason: str | None = None


def parse_config_names(text: str | Sequence[str] | None, *, tuned: bool = False) -> list[str]:
    """Split a comma-separated list (or take a sequence) of config names; validate and dedupe them.

    None or empty gives `DEFAULT_CONFIGS` (plus the tuned pair when ``tuned``).

    Raises:
        EvalError: an unknown name; the message lists the valid names.

    """
    if text is None or (isinstance(text, str) and not text.strip()):
        names = list(DEFAULT_CONFIGS) + ([TUNED_NAME, TUNED_NAME + CUT_SUFFIX] if tuned else [])
    else:
        parts = text.split(",") if isinstance(text, str) else list(text)
        names = [part.strip() for part in parts if part.strip()]
    valid = [*DEFAULT_CONFIGS, TUNED_NAME, TUNED_NAME + CUT_SUFFIX]
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise EvalError(f"unknown config name(s) {', '.join(map(repr, unknown))}; valid: {', '.join(valid)}")
    return list(dict.fromkeys(names))


def build_configs(
    names: Sequence[str],
    base: RetrievalConfig,
    *,
    depth: int = 100,
    tuned: TunedParams | None = None,
    reranker_model: str | None = None,
) -> list[EvalConfig]:
    """Turn config names into `EvalConfig` objects over ``base`` (a whole-document retrieval config).

    Args:
        names: validated names (see `parse_config_names`).
        base: the retrieval config of the index; its fusion weights are the default hybrid weights.
        depth: how many results each uncut config returns and each hybrid retriever contributes.
        tuned: parameters for ``hybrid-tuned``; required when that name is asked for.
        reranker_model: cross-encoder for ``hybrid+rerank`` (default `DEFAULT_RERANKER`).

    Raises:
        EvalError: ``hybrid-tuned`` asked for without tuned parameters, or ``depth`` < 1.

    """
    if depth < 1:
        raise EvalError(f"depth must be >= 1, but got {depth}")
    configs = []
    for name in names:
        root = name.removesuffix(CUT_SUFFIX)
        cut = name.endswith(CUT_SUFFIX)
        query, skip = _query_for(root, base.query, depth, tuned, reranker_model)
        if query is not None:
            query = _with(query, cut={"enabled": cut, **_cut_params(root, tuned)})
        needs_embeddings = root != "bm25" and not (root == DEFAULT_NAME and base.query.mode == "bm25")
        configs.append(
            EvalConfig(
                name=name,
                base=root,
                query=query,
                cut=cut,
                needs_embeddings=needs_embeddings,
                skip_reason=skip,
            )
        )
    return configs


def _with(query: QueryConfig, **sections: Any) -> QueryConfig:
    """Copy of ``query`` with nested section overrides, validated."""
    data = query.model_dump()
    for key, value in sections.items():
        data[key] = {**data[key], **value} if isinstance(value, dict) else value
    return QueryConfig.model_validate(data)


def _cut_params(root: str, tuned: TunedParams | None) -> dict[str, Any]:
    """Return the tuned cut for the tuned config, the config's defaults otherwise."""
    if root == TUNED_NAME and tuned is not None:
        return tuned.cut_overrides()
    return {}


def _query_for(
    root: str, default: QueryConfig, depth: int, tuned: TunedParams | None, reranker_model: str | None
) -> tuple[QueryConfig | None, str | None]:
    """Return the uncut query config for a base name, or (None, reason) when it cannot run offline."""
    candidates = max(default.fusion.candidates, depth)
    plain = _with(default, top_k=depth, reranker={"model": None}, fusion={"candidates": candidates})
    if root == DEFAULT_NAME:
        return plain, None
    if root in ("bm25", "dense"):
        return _with(plain, mode=root), None
    if root == "hybrid":
        return _with(plain, mode="hybrid", fusion={"method": "rrf"}), None
    if root == "hybrid-minmax":
        return _with(plain, mode="hybrid", fusion={"method": "minmax"}), None
    if root == TUNED_NAME:
        if tuned is None:
            raise EvalError(
                f"{TUNED_NAME!r} needs tuned parameters: run `haygraph tune` and pass --tuned FILE"
            )
        fusion = {
            "method": tuned.method,
            "weights": tuned.weights,
            "rrf_k": tuned.rrf_k,
            "candidates": max(tuned.candidates, depth),
        }
        return _with(plain, mode="hybrid", fusion=fusion), None
    if root in ("hybrid+rerank", "hybrid-minmax+rerank"):
        model = reranker_model or DEFAULT_RERANKER
        try:
            path = resolve_model(model, kind="reranker model")
        except ModelUnavailableError as exc:
            if reranker_model and Path(reranker_model).expanduser().exists():
                # a folder that is there but holds no model is a wrong --reranker, not a missing download
                raise EvalError(f"--reranker: {exc}") from exc
            logger.warning("%s skipped: %s", root, exc)
            return None, str(exc)
        try:
            check_cross_encoder(path)
        except ConfigError as exc:
            raise EvalError(f"--reranker: {exc}") from exc
        method = "minmax" if root.startswith("hybrid-minmax") else "rrf"
        reranker = {"model": model, "on_unavailable": "error"}
        return _with(plain, mode="hybrid", fusion={"method": method}, reranker=reranker), None
    raise EvalError(f"unknown config {root!r}")  # parse_config_names keeps this unreachable
