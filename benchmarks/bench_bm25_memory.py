"""What an in-process bm25s index keeps resident, loaded whole or memory-mapped, against the postings.

Run as ``python -m benchmarks.bench_bm25_memory [--size 100000] [--queries 100]``.

The question behind it: could a `serve` process on a PostgreSQL store keep today's bm25s index (the
embedded store's) if it were saved to disk and loaded with ``bm25s.BM25.load(..., mmap=True)``? Over
`bench_scale`'s real chunks the script builds that index (`BM25Index`, our tokenizer) and the store's
postings segments (`postings.SegmentBuilder`, 50k chunks each), saves both, then in a fresh process per
variant loads one and runs the same real queries, printing the process's RSS after loading and after
the queries — VmRSS, of it anonymous memory and file-backed pages — and the query p50. File-backed
pages are the OS page cache mapped into the process: shared, and dropped under memory pressure, but
counted in RSS. This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_postgres import memory
from benchmarks.bench_retrieval import load_queries, timed
from benchmarks.bench_scale import _read_chunks, chunks_file
from haygraph.eval.index_prep import datasets_root

VARIANTS = ("bm25s", "bm25s-mmap", "postings")


def build(size: int, folder: Path) -> dict[str, Any]:
    """Build and save both indexes over `size` real chunks; their sizes on disk and build times."""
    from haygraph.retrieval.bm25_index import BM25Index
    from haygraph.retrieval.postgres import postings
    from haygraph.retrieval.tokenize import BM25Tokenizer

    texts = [r["content"] for r in _read_chunks(chunks_file(size), size)]
    start = time.perf_counter()
    index = BM25Index(BM25Tokenizer()).build(texts)
    index.save(folder / "bm25s")
    bm25s_s = time.perf_counter() - start
    start = time.perf_counter()
    (folder / "segments").mkdir()
    for seg, begin in enumerate(range(0, len(texts), postings.SEGMENT_DOCS)):
        builder = postings.SegmentBuilder(BM25Tokenizer())
        for i, text in enumerate(texts[begin : begin + postings.SEGMENT_DOCS], start=begin + 1):
            builder.add(i, text, None)
        (folder / "segments" / f"{seg}.seg").write_bytes(builder.build())
    postings_s = time.perf_counter() - start

    def mb(path: Path) -> float:
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6

    return {
        "chunks": len(texts),
        "bm25s_build_s": bm25s_s,
        "postings_build_s": postings_s,
        "bm25s_mb": mb(folder / "bm25s"),
        "postings_mb": mb(folder / "segments"),
    }


def measure(variant: str, folder: Path, n_queries: int) -> dict[str, Any]:
    """Load one index in this (fresh) process and run the queries; RSS after each step."""
    import bm25s

    from haygraph.retrieval.bm25_index import BM25Index
    from haygraph.retrieval.postgres import postings
    from haygraph.retrieval.tokenize import BM25Tokenizer

    tokenizer = BM25Tokenizer()
    tokenizer("预热")  # jieba's dictionary, in every variant
    queries = load_queries(datasets_root(), n_queries)
    before = memory()
    start = time.perf_counter()
    if variant == "postings":
        segments = [postings.Segment(i, p) for i, p in enumerate(sorted((folder / "segments").glob("*.seg")))]
        index: Any = postings.SegmentIndex(segments, np.empty(0, np.int64), tokenizer)
    else:
        index = BM25Index.load(folder / "bm25s")
        if variant == "bm25s-mmap":
            index._bm25 = bm25s.BM25.load(str(folder / "bm25s"), mmap=True, show_progress=False)
    load_s = time.perf_counter() - start
    loaded = memory()
    latency = timed(lambda i: index.scores(queries[i]), len(queries))
    return {
        "variant": variant,
        "load_s": load_s,
        "before": before,
        "loaded": loaded,
        "after": memory(),
        "ms": latency,
    }


def main(argv: list[str] | None = None) -> int:
    """Build once, then measure each variant in its own process and print the table."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_bm25_memory", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--size", type=int, default=100_000, help="chunks (default 100000)")
    parser.add_argument("--queries", type=int, default=100, help="queries run after loading (default 100)")
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        sys.stdout.write(json.dumps(measure(args.child[0], Path(args.child[1]), args.queries)) + "\n")
        return 0
    folder = Path(tempfile.mkdtemp(prefix="haygraph-bm25-memory-"))
    try:
        built = build(args.size, folder)
        print(
            f"{built['chunks']:,} chunks: bm25s index {built['bm25s_mb']:.0f} MB on disk (built in "
            f"{built['bm25s_build_s']:.0f} s); postings segments {built['postings_mb']:.0f} MB (built in "
            f"{built['postings_build_s']:.0f} s)"
        )
        for variant in VARIANTS:
            cmd = [sys.executable, "-m", "benchmarks.bench_bm25_memory", "--queries", str(args.queries)]
            done = subprocess.run(
                [*cmd, "--child", variant, str(folder)], capture_output=True, text=True, check=True
            )
            r = json.loads(done.stdout.strip().splitlines()[-1])
            grow = {k: r[k]["VmRSS"] - r["before"]["VmRSS"] for k in ("loaded", "after")}
            print(
                f"  {variant:11s} load {r['load_s']:.1f} s; RSS +{grow['loaded']:.0f} MB loaded, "
                f"+{grow['after']:.0f} MB after {args.queries} queries (anonymous "
                f"+{r['after']['RssAnon'] - r['before']['RssAnon']:.0f}, file "
                f"+{r['after']['RssFile'] - r['before']['RssFile']:.0f}); "
                f"query p50 {np.percentile(r['ms'], 50):.1f} ms"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
