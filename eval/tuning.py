"""Tune hybrid fusion (method and weights) and the score-cliff cut on a train split, never on test.

Efficient by construction: BM25 top-``depth`` and dense top-``depth`` are retrieved once per query
through the real pipelines; every grid point is then fused and cut in Python with the same pure
functions the pipeline uses (`haygraph.retrieval.fusion.rrf_scores` / `minmax_scores`,
`haygraph.retrieval.score_cliff.cliff_cut`), so a grid point scores exactly what the pipeline would return.

Objectives:

- fusion: mean nDCG@10 over the train queries. Grid: method in {rrf, minmax} x BM25 weight in
  {0, 0.1, ..., 1} (dense weight = 1 - BM25 weight), RRF k = 60.
- cut (on the best fusion): mean F1 of the kept documents against the relevant ones — the cut's
  job is to pass on fewer, cleaner chunks, and F1 rewards precision and recall of exactly the set
  that is passed on. Grid: drop_ratio in {0.1, ..., 0.9} x max_keep in {1, 2, 3, 4, 5, 8, 10}.

Ties keep the earlier grid point (RRF before min-max, lower BM25 weight first; lower drop ratio and
smaller max_keep first).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from haygraph.eval.beir import load_beir
from haygraph.eval.configs import TunedParams, build_configs
from haygraph.eval.errors import EvalError
from haygraph.eval.harness import mean_set_quality, run_dict
from haygraph.eval.index_prep import prepare_index, resolve_dataset, whole_document_config
from haygraph.eval.metrics import evaluate
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import QueryError
from haygraph.retrieval.fusion import minmax_scores, rrf_scores
from haygraph.retrieval.knowledge_base import KnowledgeBase, validate_query
from haygraph.retrieval.score_cliff import cliff_cut

logger = logging.getLogger(__name__)

FUSION_OBJECTIVE = "nDCG@10"
CUT_OBJECTIVE = "F1 of the kept set"
BM25_WEIGHTS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(11))
METHODS: tuple[str, ...] = ("rrf", "minmax")
DROP_RATIOS: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 10))
MAX_KEEPS: tuple[int, ...] = (1, 2, 3, 4, 5, 8, 10)
RRF_K = 60


@dataclass(frozen=True)
class Candidates:
    """One query's two candidate lists: (chunk id, raw score) in rank order, plus chunk -> document."""

    bm25: list[tuple[str, float]]
    dense: list[tuple[str, float]]
    source: dict[str, str]


def fuse(
    cands: Candidates, method: str, weights: tuple[float, float], rrf_k: int = RRF_K, depth: int = 100
) -> list[tuple[str, float]]:
    """Return the fused (chunk id, score) list, best first, ordered as `HybridFusion` orders it."""
    if method == "rrf":
        fused = rrf_scores([[i for i, _ in cands.bm25], [i for i, _ in cands.dense]], weights, rrf_k)
    elif method == "minmax":
        fused = minmax_scores([dict(cands.bm25), dict(cands.dense)], weights)
    else:
        raise EvalError(f"unknown fusion method {method!r}; valid: {', '.join(METHODS)}")
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:depth]


def _documents(fused: Sequence[tuple[str, float]], source: Mapping[str, str]) -> list[str]:
    """Distinct documents of a fused chunk list in rank order."""
    return list(dict.fromkeys(source.get(chunk, chunk.split("::", 1)[0]) for chunk, _ in fused))


def tune_fusion(
    candidates: Mapping[str, Candidates], qrels: Mapping[str, Mapping[str, int]], depth: int = 100
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Grid-search method x weights for `FUSION_OBJECTIVE`; returns (best point, every point)."""
    _check_inputs(candidates, qrels)
    grid: list[dict[str, Any]] = []
    for method in METHODS:
        for w in BM25_WEIGHTS:
            weights = (w, round(1 - w, 1))
            if sum(weights) <= 0:
                continue
            ranked = {
                q: _documents(fuse(c, method, weights, RRF_K, depth), c.source) for q, c in candidates.items()
            }
            score = evaluate(qrels, run_dict(ranked), [FUSION_OBJECTIVE])[FUSION_OBJECTIVE]
            grid.append({"method": method, "weights": weights, FUSION_OBJECTIVE: score})
    best = max(grid, key=lambda point: float(point[FUSION_OBJECTIVE]))  # max keeps the first of equal points
    return best, grid


def tune_cut(
    candidates: Mapping[str, Candidates],
    qrels: Mapping[str, Mapping[str, int]],
    method: str,
    weights: tuple[float, float],
    depth: int = 100,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Grid-search drop_ratio x max_keep on the given fusion for mean kept-set F1; (best, every point)."""
    _check_inputs(candidates, qrels)
    fused = {q: fuse(c, method, weights, RRF_K, depth) for q, c in candidates.items()}
    grid: list[dict[str, Any]] = []
    for drop in DROP_RATIOS:
        for keep in MAX_KEEPS:
            kept: dict[str, list[str]] = {}
            chunks = 0
            for query_id, ranked in fused.items():
                n = cliff_cut([score for _, score in ranked], drop, keep) if ranked else 0
                chunks += n
                kept[query_id] = _documents(ranked[:n], candidates[query_id].source)
            quality = mean_set_quality(kept, qrels)
            grid.append(
                {
                    "drop_ratio": drop,
                    "max_keep": keep,
                    "f1": quality["f1"],
                    "precision": quality["precision"],
                    "recall": quality["recall"],
                    "chunks_mean": chunks / len(fused),
                }
            )
    best = max(grid, key=lambda point: float(point["f1"]))
    return best, grid


def tune(
    candidates: Mapping[str, Candidates],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    dataset: str,
    split: str,
    depth: int = 100,
) -> dict[str, Any]:
    """Tune fusion, then the cut on the best fusion; return the JSON object `tune` writes.

    Raises:
        EvalError: ``split`` is ``test`` (tuning on test would leak), or no candidates were given.

    """
    if split == "test":
        raise EvalError("refusing to tune on the test split: tune on a train split and report once on test")
    fusion, fusion_grid = tune_fusion(candidates, qrels, depth)
    weights = (float(fusion["weights"][0]), float(fusion["weights"][1]))
    cut, cut_grid = tune_cut(candidates, qrels, fusion["method"], weights, depth)
    return {
        "dataset": dataset,
        "split": split,
        "num_queries": len(qrels),
        "fusion": {
            "method": fusion["method"],
            "weights": list(weights),
            "rrf_k": RRF_K,
            "candidates": depth,
            "objective": FUSION_OBJECTIVE,
            "value": fusion[FUSION_OBJECTIVE],
        },
        "cut": {
            "drop_ratio": cut["drop_ratio"],
            "max_keep": cut["max_keep"],
            "objective": CUT_OBJECTIVE,
            "value": cut["f1"],
            "precision": cut["precision"],
            "recall": cut["recall"],
            "chunks_mean": cut["chunks_mean"],
        },
        "grid": {"fusion": fusion_grid, "cut": cut_grid},
    }


def _check_inputs(candidates: Mapping[str, Candidates], qrels: Mapping[str, Mapping[str, int]]) -> None:
    """Raise unless there are candidates for at least one judged query."""
    if not candidates or not qrels:
        raise EvalError("tuning needs candidates and judgments for at least one query")


def load_tuned(path: str | Path) -> TunedParams:
    """Read a `tune` JSON file into `TunedParams`.

    Raises:
        EvalError: the file is missing, not JSON, or lacks a valid fusion/cut section.

    """
    file = Path(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise EvalError(f"cannot read tuned parameters {file}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise EvalError(f"{file} is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    return tuned_from_dict(data, where=str(file))


def tuned_from_dict(data: Any, where: str = "tuned parameters") -> TunedParams:
    """Validate the object `tune` returns (or its JSON) and turn it into `TunedParams`.

    Raises:
        EvalError: a missing or invalid fusion/cut value; the message names it.

    """
    try:
        fusion, cut = data["fusion"], data["cut"]
        weights = [float(w) for w in fusion["weights"]]
        params = TunedParams(
            method=str(fusion["method"]),
            weights=(weights[0], weights[1]),
            rrf_k=int(fusion.get("rrf_k", RRF_K)),
            candidates=int(fusion.get("candidates", 100)),
            drop_ratio=float(cut["drop_ratio"]),
            max_keep=int(cut["max_keep"]),
            dataset=str(data.get("dataset", "")),
            split=str(data.get("split", "")),
        )
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise EvalError(f"{where} is not a `haygraph tune` result: missing or invalid {exc}") from exc
    bad = (
        len(weights) != 2
        or min(weights) < 0
        or sum(weights) <= 0
        or params.method not in METHODS
        or not 0 < params.drop_ratio < 1
        or params.max_keep < 1
        or params.rrf_k < 1
        or params.candidates < 1
    )
    if bad:
        raise EvalError(
            f"{where}: invalid tuned values (method {params.method!r}, weights {weights}, "
            f"drop_ratio {params.drop_ratio}, max_keep {params.max_keep})"
        )
    return params


def collect_candidates(
    kb: KnowledgeBase, queries: Mapping[str, str], depth: int = 100, *, progress: bool = False
) -> dict[str, Candidates]:
    """Retrieve BM25 top-``depth`` and dense top-``depth`` once per query through the real pipelines.

    Scores are the raw ones the hybrid pipeline fuses: BM25 scores and dense cosine similarities.
    """
    bm25, dense = build_configs(["bm25", "dense"], kb.config, depth=depth)
    runners = [kb.runner(c.query) for c in (bm25, dense)]
    out: dict[str, Candidates] = {}
    for query_id, text in tqdm(queries.items(), desc="candidates", file=sys.stderr, disable=not progress):
        try:
            query = validate_query(text)
        except QueryError:
            out[query_id] = Candidates([], [], {})
            continue
        lists = [runner.run(query, top_k=depth) for runner in runners]
        source = {str(d.id): str(d.meta.get("source_id") or d.id) for docs in lists for d in docs}
        out[query_id] = Candidates(
            bm25=[(str(d.id), float(d.score or 0.0)) for d in lists[0]],
            dense=[(str(d.id), float(d.score or 0.0)) for d in lists[1]],
            source=source,
        )
    return out


def run_tuning(
    dataset: str | Path,
    *,
    split: str = "train",
    depth: int = 100,
    store_dir: str | Path | None = None,
    limit: int | None = None,
    retrieval_config: RetrievalConfig | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Load ``dataset``/``split``, index (or reuse) the corpus, collect candidates once and `tune`.

    Raises:
        EvalError: a test split, a bad dataset, or bad arguments.

    """
    if split == "test":
        raise EvalError("refusing to tune on the test split: tune on a train split and report once on test")
    if depth < 10:
        raise EvalError(f"depth must be >= 10 (the fusion objective is nDCG@10), got {depth}")
    if limit is not None and limit <= 0:
        raise EvalError(f"--limit must be a positive integer, got {limit}")
    folder = resolve_dataset(dataset)
    data = load_beir(folder, split)
    ids = list(data.queries)[:limit]
    config = whole_document_config(retrieval_config)
    kb, index = prepare_index(folder, config, store_dir=store_dir, need_embeddings=True, progress=progress)
    candidates = collect_candidates(kb, {q: data.queries[q] for q in ids}, depth, progress=progress)
    result = tune(candidates, {q: data.qrels[q] for q in ids}, dataset=data.name, split=split, depth=depth)
    result["index"] = index.to_dict()
    return result
