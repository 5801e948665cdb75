"""Store-backend benchmark: index time and query latency of Qdrant local mode against the embedded store.

Run as ``python -m benchmarks.bench_qdrant [--chunks 20000] [--queries 100]``. The chunks, queries and
cached embeddings are those of ``benchmarks.bench_retrieval`` (real corpora from the shared BEIR datasets),
so vectors come from the shared embedding cache. Both stores receive the same embedded chunks in the same
run; index time is write + BM25 (bm25s index, or sparse vectors pushed to Qdrant) + save. Query latency is
the whole query pipeline per mode (retrievers, fusion, cut, relevance) with the query vector precomputed,
so the embedding model is not timed. With ``--random-vectors`` the chunks and queries get seeded random
384-d unit vectors instead of model embeddings (exact search costs the same whatever the values; use it
when the embedding cache does not hold the chunks, which takes ~10 min per 20k chunks to fill here).

Qdrant local mode is the client's embedded engine: exact search in Python/numpy with no HNSW and no
payload indexes, so it measures the integration, not a Qdrant server. This is a script, not a test.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.bench_retrieval import embed_chunks, load_chunks, load_queries, timed
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
from haygraph.retrieval.qdrant import connection
from haygraph.retrieval.qdrant.store import QdrantStore
from haygraph.retrieval.query_embedder import QueryEmbedder
from haygraph.retrieval.store import EmbeddedDocumentStore


def main(argv: list[str] | None = None) -> int:
    """Index the same chunks into both stores, time queries per mode, print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="store size in chunks (default 20000)")
    parser.add_argument("--queries", type=int, default=100, help="queries timed per mode (default 100)")
    parser.add_argument("--random-vectors", action="store_true", help="seeded random vectors, no model")
    args = parser.parse_args(argv)
    root = datasets_root()
    work = Path(tempfile.mkdtemp(prefix="bench-qdrant-"))
    try:
        chunks = load_chunks(root, args.chunks)
        queries = load_queries(root, args.queries)
        if args.random_vectors:
            rng = np.random.default_rng(0)
            units = rng.normal(size=(len(chunks) + len(queries), 384)).astype(np.float32)
            units /= np.linalg.norm(units, axis=1, keepdims=True)
            chunks = [replace(c, embedding=units[i].tolist()) for i, c in enumerate(chunks)]
            vectors = [units[len(chunks) + i].tolist() for i in range(len(queries))]
        else:
            chunks = embed_chunks(chunks, RetrievalConfig())
            embedder = QueryEmbedder()
            embedder.warm_up()
            vectors = [embedder.run(text=q)["embedding"] for q in queries]

        embedded = EmbeddedDocumentStore(path=str(work / "embedded"))
        start = time.perf_counter()
        embedded.write_documents(chunks)
        embedded.bm25_index(BM25Index.from_config(RetrievalConfig().bm25))
        embedded.save()
        index_s = {"embedded": time.perf_counter() - start}

        settings = RetrievalConfig.from_dict(
            {"store": {"backend": "qdrant", "path": str(work / "qdrant"), "collection": "bench"}}
        )
        qdrant = QdrantStore(settings.store)
        start = time.perf_counter()
        qdrant.write_documents(chunks)
        qdrant.bm25_index(BM25Index.from_config(settings.bm25))  # the catalog's, for the relevance stage
        qdrant.save()
        index_s["qdrant local"] = time.perf_counter() - start

        print(f"{len(chunks)} chunks, {len(queries)} queries\n")
        print("| store | index s | mode | p50 ms | p95 ms |")
        print("|---|---:|---|---:|---:|")
        for name, config, store in (
            ("embedded", RetrievalConfig(), embedded),
            ("qdrant local", settings, qdrant),
        ):
            for mode in ("bm25", "dense", "hybrid"):
                q = config.with_overrides(query={"mode": mode}).query
                pipe, info = build_query_pipeline(config, store, q, embed_query=False)
                pipe.warm_up()

                def run(i: int, pipe=pipe, info=info) -> None:  # type: ignore[no-untyped-def]
                    data = query_inputs(pipe, queries[i], query_embedding=vectors[i])
                    run_direct(pipe, data, include_outputs_from={info.output})

                ms = timed(run, len(queries))
                p50, p95 = np.percentile(ms, 50), np.percentile(ms, 95)
                print(f"| {name} | {index_s[name]:.1f} | {mode} | {p50:.1f} | {p95:.1f} |")
    finally:
        connection.close_clients()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
