"""Scale benchmark: the embedded store at 2k, 20k and 100k chunks, one fresh process per size.

Run as ``python -m benchmarks.bench_scale [--sizes 2000,20000,100000] [--queries 200]``.

The chunks are real text: every shared BEIR corpus (``$HAYGRAPH_DATASETS`` or ``../shared/datasets``),
whole documents first, then the project's splitter's chunks at default, finer and finest sizes until
there are enough distinct chunks. They are prepared once and kept in
``$HAYGRAPH_CACHE_DIR/scale-chunks.jsonl``. 100k chunks cannot be embedded in the time available here
(~40 chunks/s), so every chunk and query gets a **synthetic embedding** (a seeded random unit vector,
384 dimensions — clearly not a model's). Dense *rankings* are therefore meaningless; latency, memory,
store size and save/load times are real, since they do not depend on the vectors' values.

Each size runs in its own subprocess, so the reported peak RSS is that size's own:

- ``input MB``: resident memory once the input chunks (Haystack Documents with float32 vectors) are
  loaded — what any caller holding the documents pays;
- ``write peak MB``: the process's peak through ``write_documents``, the BM25 build and ``save`` — the
  write path's peak (target ≤ 1 GB at 100k). The vectors come in blocks of 256 rows, as the embedder
  hands them over, and the caller drops its documents once they are written, as an indexing run does;
  the contiguous embedding matrix is only built when a query needs it (``save`` streams the rows);
- ``query peak MB``: after timing our bm25, dense and hybrid query pipelines (store loaded from disk);
- ``stock peak MB``: after also building Haystack's stock in-memory hybrid pipeline and timing it on a
  few queries (its `InMemoryDocumentStore` holds another copy of every document and vector).

Latencies are per query in ms, excluding the query embedding (the synthetic query vector is fed in).
This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from benchmarks.bench_retrieval import load_chunks, load_queries, timed
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.embedding_cache import CACHE_SLICE, default_cache_dir, with_vector

DIM = 384


def _rss_mb() -> float:
    """Current resident set size of this process in MB (from /proc/self/status)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _dir_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6


def chunks_file(size: int) -> Path:
    """The prepared chunk file, (re)built when it holds fewer than `size` chunks."""
    path = default_cache_dir() / "scale-chunks.jsonl"
    if path.exists():
        with path.open(encoding="utf-8") as fh:
            have = sum(1 for _ in fh)
        if have >= size:
            return path
    start = time.perf_counter()
    chunks = load_chunks(datasets_root(), size)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for doc in chunks:
            fh.write(json.dumps({"id": doc.id, "content": doc.content, "meta": doc.meta}, ensure_ascii=False))
            fh.write("\n")
    tmp.replace(path)
    print(f"prepared {len(chunks)} chunks in {time.perf_counter() - start:.0f} s -> {path}", flush=True)
    return path


def _read_chunks(path: Path, size: int) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            if i >= size:
                return
            yield json.loads(line)


def run_size(size: int, path: Path, n_queries: int, n_stock: int) -> dict[str, Any]:
    """Measure one store size in this process (called in a fresh subprocess by `main`)."""
    from haygraph.retrieval.bm25_index import BM25Index
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.pipeline_runner import run_direct
    from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
    from haygraph.retrieval.store import EmbeddedDocumentStore
    from haygraph.retrieval.tokenize import BM25Tokenizer

    config = RetrievalConfig()
    queries = load_queries(datasets_root(), n_queries)
    BM25Tokenizer()("预热")  # load jieba's dictionary before measuring
    rng = np.random.default_rng(0)
    qvecs = rng.standard_normal((len(queries), DIM)).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    base = _rss_mb()

    # vectors come in blocks of `CACHE_SLICE` rows, each document's row a view of its block: the shape in
    # which `CachedDocumentEmbedder` hands embeddings to the writer
    docs: list[Document] = []
    block = np.empty((0, DIM), dtype=np.float32)
    for i, record in enumerate(_read_chunks(path, size)):
        if i % CACHE_SLICE == 0:
            block = rng.standard_normal((CACHE_SLICE, DIM)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        doc = Document(id=record["id"], content=record["content"], meta=record["meta"])
        docs.append(with_vector(doc, block[i % CACHE_SLICE]))
    del block
    if len(docs) < size:
        raise SystemExit(f"only {len(docs)} chunks prepared (asked for {size})")
    input_mb = _rss_mb()

    folder = Path(tempfile.mkdtemp(prefix="haygraph-scale-"))
    try:
        store = EmbeddedDocumentStore()
        start = time.perf_counter()
        store.write_documents(docs)
        write_s = time.perf_counter() - start
        del docs  # the caller lets go of its documents once they are written, as an indexing run does
        start = time.perf_counter()
        store.bm25_index(BM25Index.from_config(config.bm25))
        bm25_s = time.perf_counter() - start
        store.path = str(folder / "store")
        start = time.perf_counter()
        store.save()
        save_s = time.perf_counter() - start
        write_peak = _peak_mb()
        del store
        size_mb = _dir_mb(folder)
        files = {
            f.name: round(f.stat().st_size / 1e6, 1) for f in (folder / "store").rglob("*") if f.is_file()
        }
        start = time.perf_counter()
        store = EmbeddedDocumentStore.load(folder / "store")
        load_s = time.perf_counter() - start
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    def pipe(mode: str | None = None, stock: bool = False) -> Any:
        query = config.query if mode is None else config.query.model_copy(update={"mode": mode})
        built = build_query_pipeline(config, store, query, stock=stock, embed_query=False)[0]
        built.warm_up()
        return lambda q: run_direct(built, query_inputs(built, queries[q], query_embedding=qvecs[q].tolist()))

    n = len(queries)
    lat = {"bm25": timed(pipe("bm25"), n), "dense": timed(pipe("dense"), n), "hybrid": timed(pipe(), n)}
    query_peak = _peak_mb()
    lat["stock hybrid"] = timed(pipe(stock=True), min(n, n_stock), warmup=1)
    return {
        "size": size,
        "base_mb": round(base),
        "input_mb": round(input_mb),
        "write_peak_mb": round(write_peak),
        "query_peak_mb": round(query_peak),
        "stock_peak_mb": round(_peak_mb()),
        "write_s": write_s,
        "bm25_build_s": bm25_s,
        "save_s": save_s,
        "load_s": load_s,
        "disk_mb": size_mb,
        "files_mb": files,
        "latency_ms": {
            k: [float(np.percentile(v, 50)), float(np.percentile(v, 95)), len(v)] for k, v in lat.items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    """Prepare the chunks, run every size in a fresh subprocess and print the figures."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sizes", default="2000,20000,100000", help="comma-separated store sizes in chunks")
    parser.add_argument(
        "--queries", type=int, default=200, help="real queries timed per pipeline (default 200)"
    )
    parser.add_argument(
        "--stock-queries", type=int, default=10, help="queries timed on the stock pipeline (default 10)"
    )
    parser.add_argument("--json", help="also write the rows as JSON here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # internal: measure one size, print JSON
    args = parser.parse_args(argv)
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, but got {args.sizes!r}")
    if not sizes or sizes[0] <= 0 or args.queries <= 0 or args.stock_queries <= 0:
        parser.error("--sizes, --queries and --stock-queries must be > 0")
    if args.one:
        row = run_size(args.one, chunks_file(args.one), args.queries, args.stock_queries)
        sys.stdout.write(json.dumps(row) + "\n")
        return 0

    path = chunks_file(sizes[-1])
    rows = []
    for size in sizes:
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.bench_scale",
            "--one",
            str(size),
            "--queries",
            str(args.queries),
        ]
        cmd += ["--stock-queries", str(args.stock_queries)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-3000:])
            raise SystemExit(f"size {size} failed (exit {done.returncode})")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"{size} chunks done: write peak {rows[-1]['write_peak_mb']} MB", flush=True)
    print(f"\nchunks: {path}")
    print("EMBEDDINGS ARE SYNTHETIC (seeded random unit vectors, dim 384): latency/memory real, rankings not")
    head = ("chunks", "write s", "bm25 s", "save s", "load s", "disk MB", "input MB", "write peak MB")
    print(" ".join(f"{h:>13s}" for h in (*head, "query peak MB", "stock peak MB")))
    for r in rows:
        cells = (r["write_s"], r["bm25_build_s"], r["save_s"], r["load_s"], r["disk_mb"])
        print(
            f"{r['size']:13d} "
            + " ".join(f"{c:13.2f}" for c in cells)
            + " ".join(f"{r[k]:14d}" for k in ("input_mb", "write_peak_mb", "query_peak_mb", "stock_peak_mb"))
        )
    print("\nlatency ms p50 / p95 (excl. query embedding)")
    print(f"{'chunks':>7s} " + " ".join(f"{k:>22s}" for k in rows[0]["latency_ms"]))
    for r in rows:
        lat_cells = [f"{v[0]:9.2f} / {v[1]:<9.2f}" for v in r["latency_ms"].values()]
        print(f"{r['size']:7d} " + " ".join(f"{c:>22s}" for c in lat_cells))
    print("\nstore files (MB) at the largest size:", rows[-1]["files_mb"])
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
