"""The evaluation harness: run named retrieval configurations side by side on one BEIR dataset.

One process, one index, one embedding pass: the corpus is indexed once (see `haygraph.eval.index_prep`) and
every configuration is a different query pipeline over that store. For each configuration the
harness reports the metrics at every cutoff k, the query latency (p50/p95/mean, measured around
each pipeline run after a warm-up query; queries are embedded in one batched pass first, so it
excludes the query embedding), the shared indexing time and, for ``+cut``
configurations, what the score-cliff cut passes on: the mean number of chunks kept and the
precision / recall / F1 of the kept documents, next to the same numbers for a fixed top-5 of the
uncut twin configuration.

Run dicts: every ranked chunk maps to its corpus document (``meta["source_id"]``); the first
occurrence of a document keeps its rank and the document's score is ``1 / rank`` (rank counted
over distinct documents), so the metrics see exactly the pipeline's order.
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document
from tqdm import tqdm

from haygraph.eval.beir import BeirDataset, load_beir
from haygraph.eval.configs import EvalConfig, TunedParams, build_configs, parse_config_names
from haygraph.eval.errors import EvalError
from haygraph.eval.index_prep import prepare_index, resolve_dataset, whole_document_config
from haygraph.eval.metrics import evaluate
from haygraph.eval.names import DEFAULT_KS
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.errors import QueryError
from haygraph.retrieval.knowledge_base import KnowledgeBase, validate_query

logger = logging.getLogger(__name__)

METRIC_FAMILIES: tuple[str, ...] = ("nDCG", "HitRate", "MRR", "Recall", "MAP")
FIXED_TOP = 5
"""Size of the fixed top-k list the score-cliff cut is compared with."""


@dataclass
class ConfigRun:
    """What one configuration returned: distinct documents per query in rank order, and timings."""

    ranked: dict[str, list[str]] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def source_ranking(documents: Sequence[Document]) -> list[str]:
    """Distinct corpus document ids of ranked chunks, in first-occurrence order.

    The id is ``meta["source_id"]``; a chunk without one falls back to the part of its id before ``::``.
    """
    seen: dict[str, None] = {}
    for doc in documents:
        source = doc.meta.get("source_id") or str(doc.id).split("::", 1)[0]
        seen.setdefault(str(source), None)
    return list(seen)


def run_dict(ranked: Mapping[str, Sequence[str]]) -> dict[str, dict[str, float]]:
    """Metrics run dict ``{query: {doc: 1/rank}}`` that preserves each ranking exactly.

    Raises:
        EvalError: a ranking lists the same document twice (use `source_ranking` first).

    """
    run: dict[str, dict[str, float]] = {}
    for query_id, docs in ranked.items():
        scores = {doc_id: 1.0 / rank for rank, doc_id in enumerate(docs, start=1)}
        if len(scores) != len(docs):
            raise EvalError(f"ranking of query {query_id!r} lists a document twice")
        run[query_id] = scores
    return run


def set_quality(kept: Sequence[str], relevant: set[str]) -> tuple[float, float, float]:
    """(precision, recall, F1) of a set of passed-on documents against the relevant ones.

    An empty kept set has precision 0; no relevant documents gives recall 0; F1 is 0 when both are 0.
    """
    unique = set(kept)
    hits = len(unique & relevant)
    precision = hits / len(unique) if unique else 0.0
    recall = hits / len(relevant) if relevant else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def mean_set_quality(
    ranked: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], size: int | None = None
) -> dict[str, float]:
    """Mean precision/recall/F1 over the queries of ``qrels`` of each ranking (its first ``size`` docs)."""
    if not qrels:
        raise EvalError("no judged query to average over")
    totals = [0.0, 0.0, 0.0]
    for query_id, judgments in qrels.items():
        docs = list(ranked.get(query_id, []))
        relevant = {doc for doc, grade in judgments.items() if grade > 0}
        for i, value in enumerate(set_quality(docs[:size] if size is not None else docs, relevant)):
            totals[i] += value
    n = len(qrels)
    return {"precision": totals[0] / n, "recall": totals[1] / n, "f1": totals[2] / n}


def latency_summary(latencies_ms: Sequence[float]) -> dict[str, float]:
    """p50, p95 (`numpy.percentile`, linear interpolation) and mean of per-query latencies in ms.

    Empty input gives an empty dict.
    """
    if not latencies_ms:
        return {}
    p50, p95 = np.percentile(latencies_ms, [50, 95])
    return {"p50": float(p50), "p95": float(p95), "mean": statistics.fmean(latencies_ms)}


def metric_names(ks: Sequence[int]) -> list[str]:
    """Every metric family at every cutoff: ``nDCG@1 ... MAP@100``."""
    return [f"{family}@{k}" for family in METRIC_FAMILIES for k in ks]


def parse_ks(text: str | Sequence[int] | None) -> tuple[int, ...]:
    """Parse ``"1,3,5,10,100"`` (or take a sequence) into sorted distinct positive cutoffs.

    Raises:
        EvalError: a cutoff is not a positive integer.

    """
    if text is None or (isinstance(text, str) and not text.strip()):
        return DEFAULT_KS
    parts = [p.strip() for p in text.split(",")] if isinstance(text, str) else [str(p) for p in text]
    try:
        ks = sorted({int(p) for p in parts if p})
    except ValueError:
        raise EvalError(f"--k must be comma-separated positive integers, got {text!r}") from None
    if not ks or ks[0] <= 0:
        raise EvalError(f"--k must be comma-separated positive integers, got {text!r}")
    return tuple(ks)


def run_config(
    kb: KnowledgeBase, config: EvalConfig, queries: Mapping[str, str], depth: int, *, progress: bool = False
) -> ConfigRun:
    """Run one configuration on every query; latency is measured after an untimed warm-up query.

    The queries are embedded up front in batches (`QueryRunner.embed_queries`), so every configuration's
    latency excludes the query embedding alike (before, the first configuration paid for it and the
    others hit the shared memo), and thousands of queries cost one batched pass, not one call each.
    """
    if config.query is None:
        raise EvalError(f"config {config.name!r} is skipped: {config.skip_reason}")
    runner = kb.runner(config.query)
    runner.warm_up()
    out = ConfigRun(notes=list(runner.info.notes))
    texts = {qid: _checked(text) for qid, text in queries.items()}
    runner.embed_queries([t for t in texts.values() if t])
    first = next((t for t in texts.values() if t), None)
    if first:
        runner.run(first, top_k=depth)
    for query_id, text in tqdm(
        texts.items(), desc=config.name, file=sys.stderr, disable=not progress, leave=False
    ):
        if text is None:
            out.ranked[query_id], out.chunks[query_id] = [], 0
            continue
        start = time.perf_counter()
        docs = runner.run(text, top_k=depth)
        out.latencies_ms.append((time.perf_counter() - start) * 1000)
        out.ranked[query_id] = source_ranking(docs)
        out.chunks[query_id] = len(docs)
    skipped = sum(1 for t in texts.values() if t is None)
    if skipped:
        out.notes.append(f"{skipped} empty or over-long queries returned nothing")
    return out


def _checked(text: str) -> str | None:
    """Return the query as the knowledge base would search it, or None if it would be rejected."""
    try:
        return validate_query(text)
    except QueryError:
        return None


def summarize(
    config: EvalConfig,
    run: ConfigRun,
    qrels: Mapping[str, Mapping[str, int]],
    ks: Sequence[int],
    base_run: ConfigRun | None,
    index_seconds: float | None,
) -> dict[str, Any]:
    """Build the JSON result of one configuration (see the module docstring for its keys)."""
    result: dict[str, Any] = {
        "metrics": evaluate(qrels, run_dict(run.ranked), metric_names(ks)),
        "latency_ms": latency_summary(run.latencies_ms),
        "chunks_kept_mean": None,
        "indexing_s": index_seconds,
        f"top{FIXED_TOP}_set": mean_set_quality(run.ranked, qrels, FIXED_TOP),
        "notes": run.notes,
    }
    if config.cut:
        kept = [run.chunks.get(query_id, 0) for query_id in qrels]
        result["chunks_kept_mean"] = statistics.fmean(kept)
        result["kept_set"] = {**mean_set_quality(run.ranked, qrels), "chunks_mean": statistics.fmean(kept)}
        if base_run is not None:
            fixed = mean_set_quality(base_run.ranked, qrels, FIXED_TOP)
            result[f"fixed_top{FIXED_TOP}"] = {"config": config.base, **fixed}
    return result


def run_harness(
    dataset: str | Path,
    *,
    split: str = "test",
    configs: str | Sequence[str] | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    store_dir: str | Path | None = None,
    limit: int | None = None,
    tuned: TunedParams | None = None,
    reranker_model: str | None = None,
    retrieval_config: RetrievalConfig | None = None,
    progress: bool = False,
    on_config: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Evaluate the named configurations on one dataset split and return the results object.

    Args:
        dataset: a BEIR folder, or a dataset name under the shared datasets folder.
        split: the qrels split (``test``; tuning uses ``train``).
        configs: names (comma-separated or a sequence); default: every base config and its ``+cut``.
        ks: metric cutoffs; the largest is also the retrieval depth.
        store_dir: keep/reuse the index there (default: an in-memory index).
        limit: evaluate only the first ``limit`` queries (smoke runs).
        tuned: parameters for ``hybrid-tuned`` (from `haygraph.eval.tuning.load_tuned`).
        reranker_model: cross-encoder for ``hybrid+rerank``.
        retrieval_config: base retrieval config (default: the library default); the splitter is turned off.
        progress: show tqdm progress bars on stderr.
        on_config: called with (name, result) after each configuration (for live CLI output).

    Raises:
        EvalError: bad arguments, an unreadable dataset, or a tuned file made on this very split.

    """
    ks = parse_ks(ks)
    if limit is not None and limit <= 0:
        raise EvalError(f"--limit must be a positive integer, got {limit}")
    folder = resolve_dataset(dataset)
    data = load_beir(folder, split)
    if tuned is not None and tuned.dataset == data.name and tuned.split == split:
        raise EvalError(f"the tuned parameters were tuned on {data.name}/{split}: evaluate on another split")
    names = parse_config_names(configs, tuned=tuned is not None)
    config = whole_document_config(retrieval_config)
    depth = max(ks)
    plan = build_configs(names, config, depth=depth, tuned=tuned, reranker_model=reranker_model)
    queries, qrels = _subset(data, limit)
    runnable = [c for c in plan if c.query is not None]
    need_embeddings = any(c.needs_embeddings for c in runnable)
    kb, index = prepare_index(
        folder, config, store_dir=store_dir, need_embeddings=need_embeddings, progress=progress
    )
    results: dict[str, Any] = {
        "dataset": data.name,
        "split": split,
        "num_queries": len(queries),
        "ks": list(ks),
        "depth": depth,
        "index": index.to_dict(),
        "configs": {},
        "skipped": {},
    }
    if tuned is not None:
        results["tuned"] = {"file_dataset": tuned.dataset, "file_split": tuned.split}
    runs: dict[str, ConfigRun] = {}
    by_name = {c.name: c for c in plan}
    for cfg in plan:
        if cfg.query is None:
            results["skipped"][cfg.name] = cfg.skip_reason
            results["configs"][cfg.name] = _skipped(cfg)
            continue
        if cfg.name not in runs:
            runs[cfg.name] = run_config(kb, cfg, queries, depth, progress=progress)
        base_run = None
        if cfg.cut:
            base_run = runs.get(cfg.base)
            if base_run is None:
                twin = by_name.get(cfg.base) or _uncut(cfg, config, depth, tuned, reranker_model)
                base_run = runs[cfg.base] = run_config(kb, twin, queries, depth, progress=progress)
        result = summarize(cfg, runs[cfg.name], qrels, ks, base_run, index.seconds)
        result["query_config"] = cfg.query.model_dump(mode="json")
        results["configs"][cfg.name] = result
        if on_config is not None:
            on_config(cfg.name, result)
    return results


def _uncut(
    cfg: EvalConfig, config: RetrievalConfig, depth: int, tuned: TunedParams | None, reranker: str | None
) -> EvalConfig:
    """Build the uncut twin of a ``+cut`` configuration."""
    return build_configs([cfg.base], config, depth=depth, tuned=tuned, reranker_model=reranker)[0]


def _skipped(cfg: EvalConfig) -> dict[str, Any]:
    """Build the result entry of a configuration that could not run (kept in the report with its reason)."""
    return {
        "metrics": {},
        "latency_ms": {},
        "chunks_kept_mean": None,
        "indexing_s": None,
        "skipped": cfg.skip_reason,
    }


def _subset(data: BeirDataset, limit: int | None) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    """Return the (first ``limit``) judged queries and their qrels."""
    ids = list(data.queries)[:limit] if limit is not None else list(data.queries)
    if not ids:
        raise EvalError(f"{data.name}/{data.split} has no judged query")
    return {q: data.queries[q] for q in ids}, {q: data.qrels[q] for q in ids}
