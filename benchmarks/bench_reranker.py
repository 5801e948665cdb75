"""Rerank latency for a fixed number of candidates, per reranker backend (torch, onnx, onnx-int8).

Run (from the repo root)::

    python -m benchmarks.bench_reranker --reranker DIR [--dataset scifact] [--queries 50] [--candidates 20]

For each of the first ``--queries`` queries of the dataset's test split, the top ``--candidates`` of our
hybrid min-max retrieval are reranked by `BlendedSimilarityRanker` (the pipeline's reranker stage)
with each backend; the time of that stage alone is recorded (after one untimed warm-up query), and the
p50/p95 are printed with the largest score difference of each ONNX backend from torch. The queries are
only timed, never scored against judgments.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
from haystack import Document

from haygraph.eval.beir import load_beir
from haygraph.eval.index_prep import resolve_dataset
from haygraph.eval.reranker_data import mine_candidates
from haygraph.retrieval.cross_encoder_ranker import BlendedSimilarityRanker
from haygraph.retrieval.onnx_cross_encoder import RERANKER_BACKENDS


def main(argv: list[str] | None = None) -> int:
    """Time the reranker stage per backend and print one line each (JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reranker", required=True, help="trained reranker directory")
    parser.add_argument("--dataset", default="scifact")
    parser.add_argument("--split", default="test", help="queries to time (not scored)")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--store", help="reuse the dataset index here")
    parser.add_argument("--backends", default=",".join(RERANKER_BACKENDS))
    parser.add_argument("--threads", type=int, default=2, help="torch / onnxruntime threads")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    folder = resolve_dataset(args.dataset)
    data = load_beir(folder, args.split)
    queries = dict(list(data.queries.items())[: args.queries])
    candidates = mine_candidates(folder, queries, args.candidates, store_dir=args.store)
    corpus = {d: (doc.content or "") for d, doc in data.corpus.items()}
    inputs = [
        (queries[q], [_doc(d, s, corpus) for d, s in candidates[q][: args.candidates]]) for q in queries
    ]
    results: dict[str, dict[str, float]] = {}
    reference: list[np.ndarray] = []
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        ranker = BlendedSimilarityRanker(
            model=args.reranker, top_k=args.candidates, backend=backend, batch_size=args.candidates
        )
        ranker.warm_up()
        ranker.run(query=inputs[0][0], documents=inputs[0][1])
        times, scores = [], []
        for query, docs in inputs:
            start = time.perf_counter()
            out = ranker.run(query=query, documents=docs)["documents"]
            times.append((time.perf_counter() - start) * 1000)
            by_id = {d.id: d.meta["reranker_score"] for d in out}
            scores.append(np.array([by_id[d.id] for d in docs]))
        p50, p95 = np.percentile(times, [50, 95])
        row = {"p50_ms": float(p50), "p95_ms": float(p95), "mean_ms": statistics.fmean(times)}
        if backend == "torch":
            reference = scores
        elif reference:
            row["max_abs_diff_vs_torch"] = float(
                max(np.abs(a - b).max() for a, b in zip(scores, reference, strict=True))
            )
        results[backend] = row
        sys.stdout.write(f"{backend:<10} " + "  ".join(f"{k} {v:.4g}" for k, v in row.items()) + "\n")
    if args.json:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
    return 0


def _doc(doc_id: str, score: float, corpus: dict[str, str]) -> Document:
    return Document(id=doc_id, content=corpus[doc_id], score=score)


if __name__ == "__main__":
    sys.exit(main())
