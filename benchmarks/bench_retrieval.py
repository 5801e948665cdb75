"""Retrieval latency benchmark: our hybrid pipeline (bm25s + numpy) against Haystack's stock retrievers.

Run as ``python -m benchmarks.bench_retrieval [--chunks 20000] [--queries 200]``. It builds a store from
the
real corpora in the shared BEIR datasets (``$HAYGRAPH_DATASETS`` or ``../shared/datasets`` beside the
repository): whole documents first, then the project's splitter's chunks to fill up, embedded with
`CachedDocumentEmbedder` (vectors are cached on disk, so only the first run pays), and prints
p50/p95 query latency over the datasets' real queries for:

- our hybrid pipeline (FastBM25Retriever + FastEmbeddingRetriever + HybridFusion + ScoreCliffCutter +
  RelevanceScorer),
  excluding the query embedding (the precomputed vector is fed to the dense retriever) and including it;
- the same pipeline built with ``stock=True`` (Haystack's InMemoryBM25Retriever /
  InMemoryEmbeddingRetriever), both ways;
- each retriever alone, and the speed-up ratios.

The scale benchmark (2k → 20k → 100k chunks, memory, save/load) is `benchmarks.bench_scale`.

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document, Pipeline
from haystack.components.preprocessors import DocumentCleaner

from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.chunk_ids import ChunkIdentifier, ContentDeduplicator
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.model_paths import resolve_model
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
from haygraph.retrieval.splitter import StructuredSplitter
from haygraph.retrieval.store import EmbeddedDocumentStore
from haygraph.retrieval.tokenize import BM25Tokenizer

TARGET_SPEEDUP = 20.0


def load_chunks(root: Path, limit: int) -> list[Document]:
    """Split every dataset's corpus into chunks (source ids prefixed by dataset) and return up to `limit`."""
    corpora = sorted(root.glob("*/corpus.jsonl"))
    if not corpora:
        raise SystemExit(f"no */corpus.jsonl under {root} (set HAYGRAPH_DATASETS)")
    identify, dedup = ChunkIdentifier(), ContentDeduplicator()
    # Same cleaning as the indexing pipeline, so vectors cached by `haygraph eval` runs are reused.
    cleaner = DocumentCleaner(
        remove_empty_lines=False, remove_extra_whitespaces=False, unicode_normalization="NFC"
    )
    per_corpus: list[list[Document]] = []
    for corpus in corpora:
        name = corpus.parent.name
        docs = [
            Document(
                content=d.content,
                meta={**d.meta, "source_id": f"{name}/{d.meta['source_id']}", "dataset": name},
            )
            for d in read_beir_corpus(corpus)
        ]
        per_corpus.append(cleaner.run(documents=docs)["documents"])
    # Whole documents first (abstracts and passages of a few hundred characters are chunk-sized),
    # then the splitter's chunks of the same corpora (default sizes, then finer, then finest) until the store
    # is large enough; short documents split into themselves and are dropped as duplicates.
    chunks: list[Document] = [d for docs in per_corpus for d in docs]
    unique = dedup.run(documents=identify.run(documents=chunks)["documents"])["documents"]
    splitters = (
        StructuredSplitter(),
        StructuredSplitter(min_chars=150, max_chars=400),
        StructuredSplitter(min_chars=60, max_chars=200),
    )
    for splitter in splitters:
        for docs in per_corpus:
            if len(unique) >= limit:
                break
            chunks.extend(splitter.run(documents=docs)["documents"])
            unique = dedup.run(documents=identify.run(documents=chunks)["documents"])["documents"]
    if len(unique) < limit:
        print(f"note: the corpora give only {len(unique)} distinct chunks (asked for {limit})")
    return unique[:limit]


def load_queries(root: Path, limit: int) -> list[str]:
    """Up to `limit` real queries, taken round-robin from every dataset's queries.jsonl."""
    per_set: list[list[str]] = []
    for path in sorted(root.glob("*/queries.jsonl")):
        with path.open(encoding="utf-8") as fh:
            per_set.append([json.loads(line)["text"] for line in fh if line.strip()])
    queries: list[str] = []
    i = 0
    while len(queries) < limit and any(i < len(q) for q in per_set):
        queries.extend(q[i] for q in per_set if i < len(q))
        i += 1
    return [q for q in queries[:limit] if q.strip()]


def embed_chunks(chunks: list[Document], config: RetrievalConfig, batch: int = 512) -> list[Document]:
    """Embed chunks in batches with a progress bar; every batch is cached on disk as soon as it is done."""
    from tqdm import tqdm

    embedder = CachedDocumentEmbedder(
        model=config.embedder.model,
        batch_size=config.embedder.batch_size,
        cache_dir=config.embedder.cache_dir,
    )
    out: list[Document] = []
    cached = 0
    with tqdm(total=len(chunks), desc="embedding chunks", unit="chunk", file=sys.stderr) as bar:
        for start in range(0, len(chunks), batch):
            part = chunks[start : start + batch]
            out.extend(embedder.run(documents=part)["documents"])
            cached += embedder.stats["cached"]
            bar.update(len(part))
    print(f"embedded {len(chunks) - cached} chunks, {cached} from the cache")
    return out


def timed(fn: Callable[[int], Any], n: int, warmup: int = 3) -> list[float]:
    """Call `fn(i)` for i in range(n) after `warmup` untimed calls; return latencies in milliseconds."""
    for i in range(min(warmup, n)):
        fn(i)
    times = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - start) * 1000)
    return times


def _peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def main(argv: list[str] | None = None) -> int:
    """Build the store, time every configuration and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000, help="store size in chunks (default 20000)")
    parser.add_argument("--queries", type=int, default=200, help="number of real queries timed (default 200)")
    parser.add_argument(
        "--stock-queries",
        type=int,
        default=40,
        help="queries timed for Haystack's stock retrievers, which take ~1 s each at 20k (default 40)",
    )
    args = parser.parse_args(argv)
    if args.chunks <= 0 or args.queries <= 0:
        parser.error("--chunks and --queries must be > 0")
    root = datasets_root()
    config = RetrievalConfig()
    t0 = time.perf_counter()
    chunks = load_chunks(root, args.chunks)
    queries = load_queries(root, args.queries)
    print(f"{len(chunks)} chunks from {root}, {len(queries)} queries ({time.perf_counter() - t0:.1f} s)")

    store = EmbeddedDocumentStore()
    store.write_documents(embed_chunks(chunks, config))
    store.matrix()

    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersTextEmbedder,
    )

    text_embedder = SentenceTransformersTextEmbedder(
        model=resolve_model(config.embedder.model),
        normalize_embeddings=True,
        progress_bar=False,
        local_files_only=True,
    )
    text_embedder.warm_up()
    embed_ms = timed(lambda i: text_embedder.run(text=queries[i]), len(queries))
    vectors = [text_embedder.run(text=q)["embedding"] for q in queries]

    # embed_query=False: the dense retriever (and relevance) take the precomputed query vector as input
    ours, info = build_query_pipeline(config, store, embed_query=False)
    ours_full, _ = build_query_pipeline(config, store)
    stock, stock_info = build_query_pipeline(config, store, stock=True, embed_query=False)
    stock_full, _ = build_query_pipeline(config, store, stock=True)
    for pipe in (ours, ours_full, stock, stock_full):
        pipe.warm_up()

    # Both pipelines run the way `KnowledgeBase.search` runs them (retrieval.pipeline_runner.run_direct);
    # the Pipeline.run rows show Haystack's own scheduler for comparison.
    def run_vec(pipe: Pipeline) -> Callable[[int], Any]:
        return lambda i: run_direct(pipe, query_inputs(pipe, queries[i], query_embedding=vectors[i]))

    def run_text(pipe: Pipeline) -> Callable[[int], Any]:
        return lambda i: run_direct(pipe, query_inputs(pipe, queries[i]))

    def haystack_run_vec(pipe: Pipeline) -> Callable[[int], Any]:
        return lambda i: pipe.run(query_inputs(pipe, queries[i], query_embedding=vectors[i]))

    BM25Tokenizer()("预热")  # load jieba's dictionary now, not inside the first timed Chinese query
    k = config.query.fusion.candidates
    bm25, dense = ours.get_component("bm25"), ours.get_component("dense")
    stock_bm25, stock_dense = stock.get_component("bm25"), stock.get_component("dense")

    n = len(queries)
    rows: dict[str, list[float]] = {}
    print(f"timing {n} queries per configuration (top-{k} candidates per retriever, fusion + cut)...")
    rows["ours hybrid (excl. query embedding)"] = timed(run_vec(ours), n)
    ns = min(n, args.stock_queries)
    rows["stock hybrid (excl. query embedding)"] = timed(run_vec(stock), ns)
    rows["ours hybrid (incl. query embedding)"] = timed(run_text(ours_full), n)
    rows["stock hybrid (incl. query embedding)"] = timed(run_text(stock_full), ns)
    rows["ours hybrid via Pipeline.run (excl. emb.)"] = timed(haystack_run_vec(ours), n)
    rows["stock hybrid via Pipeline.run (excl. emb.)"] = timed(haystack_run_vec(stock), ns)
    rows["ours BM25 alone (bm25s)"] = timed(lambda i: bm25.run(query=queries[i], top_k=k), n)
    rows["stock InMemoryBM25Retriever alone"] = timed(lambda i: stock_bm25.run(query=queries[i], top_k=k), ns)
    rows["ours dense alone (numpy)"] = timed(lambda i: dense.run(query_embedding=vectors[i], top_k=k), n)
    rows["stock InMemoryEmbeddingRetriever alone"] = timed(
        lambda i: stock_dense.run(query_embedding=vectors[i], top_k=k), ns
    )
    rows["query embedding alone (all-MiniLM-L6-v2)"] = embed_ms

    print(
        f"\nquery latency at {store.count_documents()} chunks, {n} queries ({ns} for stock retrievers) (ms)"
    )
    print("(pipelines run as KnowledgeBase.search runs them: components in graph order, pipeline_runner;")
    print(" Haystack's Pipeline.run adds per-input deep copies, the same fixed cost for both: see its rows)")
    print(f"{'configuration':44s} {'p50':>9s} {'p95':>9s}")
    for name, values in rows.items():
        print(f"{name:44s} {np.percentile(values, 50):9.2f} {np.percentile(values, 95):9.2f}")

    def ratio(stock_name: str, ours_name: str) -> float:
        return float(np.percentile(rows[stock_name], 50) / np.percentile(rows[ours_name], 50))

    print("\nspeed-up, stock / ours at p50")
    pairs = [
        (
            "hybrid, excl. query embedding",
            "stock hybrid (excl. query embedding)",
            "ours hybrid (excl. query embedding)",
        ),
        (
            "hybrid, incl. query embedding",
            "stock hybrid (incl. query embedding)",
            "ours hybrid (incl. query embedding)",
        ),
        (
            "hybrid via Pipeline.run, excl. embedding",
            "stock hybrid via Pipeline.run (excl. emb.)",
            "ours hybrid via Pipeline.run (excl. emb.)",
        ),
        ("BM25 retriever", "stock InMemoryBM25Retriever alone", "ours BM25 alone (bm25s)"),
        ("dense retriever", "stock InMemoryEmbeddingRetriever alone", "ours dense alone (numpy)"),
    ]
    for label, stock_name, ours_name in pairs:
        print(f"{label:44s} {ratio(stock_name, ours_name):8.1f}x")
    headline = ratio(pairs[0][1], pairs[0][2])
    verdict = "met" if headline >= TARGET_SPEEDUP else "NOT met"
    print(
        f"\ntarget: ours >= {TARGET_SPEEDUP:.0f}x faster at p50 (hybrid, excl. query embedding): {verdict} "
        f"({headline:.1f}x)"
    )
    # sanity: both hybrids return results for the same queries
    sample = run_vec(ours)(0)[info.output]["documents"]
    stock_sample = run_vec(stock)(0)[stock_info.output]["documents"]
    print(
        f"sample query {queries[0][:60]!r}: ours {len(sample)} hits, stock {len(stock_sample)} hits; "
        f"top hit ours {sample[0].id if sample else None}, "
        f"stock {stock_sample[0].id if stock_sample else None}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
