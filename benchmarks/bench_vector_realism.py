"""How hard is HNSW on synthetic vectors compared with real ones? pgvector recall@10 at one size, three sets.

    python -m benchmarks.bench_vector_realism [--size 50000] [--queries 200] [--components 256]
        [--ef 40,100,200,400,800] [--url URL]

`benchmarks.bench_postgres` measures a million chunks, which cannot be embedded on the 2-core machine
(hours); it draws synthetic vectors instead. Whether its recall figures say anything about real text
depends on how hard the synthetic set is for HNSW compared with real embeddings. This script answers it
at a size that can be embedded: `--size` of `bench_scale`'s real chunks (every shared BEIR corpus) are
embedded by the default model (multilingual-e5-small, cached on disk), and three vector sets of that
size go through the same pgvector HNSW index (``m`` 16, ``ef_construction`` 64, the defaults):

- **real**: the chunks' own embeddings;
- **gaussian**: `bench_postgres`'s e5-like vectors (one Gaussian with the mean and covariance of
  2,000 real embeddings: e5's spectrum, no topics);
- **mixture**: a Gaussian mixture (`--components`, diagonal covariances) fitted to the other half of
  a second draw of real chunks (never the chunks of the **real** set), sampled and normalised: topics.

Queries are real query texts of every BEIR dataset here, embedded with the model's ``query:`` prefix
(the same for every set). Printed per set and ``ef_search``: recall@10 of HNSW against exact search
(computed in numpy), and the mean cosine of each query's exact top-10 (how far real neighbours are).
A synthetic set whose recall matches the real set's at this size is the better stand-in at larger ones.
This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from haystack import Document

from benchmarks.bench_postgres import FIT_CHUNKS, e5_fit, e5_like_blocks
from benchmarks.bench_scale import DIM, _read_chunks, chunks_file

REAL_POOL = 100_000
"""The real chunks the sets are drawn from (`bench_scale.chunks_file`)."""


def embed(records: list[dict[str, Any]]) -> np.ndarray:
    """The default model's passage embeddings of `records` (the embedding cache keeps them for reruns)."""
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    kb = KnowledgeBase(RetrievalConfig())
    kb.index_documents(
        [Document(id=r["id"], content=r["content"], meta=r["meta"]) for r in records], save=False
    )
    matrix = kb.store.matrix()  # one row per chunk (a long record may give more than one)
    assert matrix is not None
    return np.asarray(matrix[: len(records)], dtype=np.float32)


def mixture_vectors(train: np.ndarray, size: int, components: int, seed: int = 0) -> np.ndarray:
    """`size` unit vectors sampled from a diagonal Gaussian mixture fitted to `train`."""
    from sklearn.mixture import GaussianMixture

    started = time.perf_counter()
    gm = GaussianMixture(components, covariance_type="diag", random_state=seed, max_iter=50, reg_covar=1e-6)
    gm.fit(train)
    took = time.perf_counter() - started
    print(f"  mixture of {components} fitted to {len(train):,} real vectors in {took:.0f} s")
    sample, _ = gm.sample(size)
    sample = sample[np.random.default_rng(seed).permutation(size)].astype(np.float32)
    return sample / np.linalg.norm(sample, axis=1, keepdims=True)


def recall_table(
    url: str, name: str, vectors: np.ndarray, queries: np.ndarray, efs: list[int]
) -> dict[str, Any]:
    """Recall@10 of pgvector's HNSW (m 16, ef_construction 64) against exact, per ef_search."""
    import psycopg
    from pgvector.psycopg import register_vector

    sims = queries @ vectors.T
    exact = np.argsort(-sims, axis=1)[:, :10]
    top_cos = float(np.mean(np.take_along_axis(sims, exact, axis=1)))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        table = f"realism_{name}"
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, embedding vector({DIM}))")
        with conn.cursor().copy(f"COPY {table} (id, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "vector"])
            for i, v in enumerate(vectors):
                copy.write_row((i, v))
        conn.execute("SET maintenance_work_mem = '2GB'")
        started = time.perf_counter()
        conn.execute(f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops)")
        build_s = time.perf_counter() - started
        out: dict[str, Any] = {"set": name, "top10_cosine": top_cos, "build_s": build_s, "recall": {}}
        for ef in efs:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            hits = []
            for q in queries:
                rows = conn.execute(
                    f"SELECT id FROM {table} ORDER BY embedding <=> %s LIMIT 10", (q,)
                ).fetchall()
                hits.append([r[0] for r in rows])
            out["recall"][ef] = float(
                np.mean([len(set(h) & set(e.tolist())) / 10 for h, e in zip(hits, exact, strict=True)])
            )
        conn.execute(f"DROP TABLE {table}")
    return out


@contextlib.contextmanager
def server(url: str | None) -> Iterator[str]:
    """`url`, or a private PostgreSQL with pgvector for the run (`bench_postgres.server`)."""
    from benchmarks.bench_postgres import server as pg_server

    with pg_server(url) as found:
        yield found


def main(argv: list[str] | None = None) -> int:
    """Embed, draw, index, measure and print (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=50_000, help="vectors per set (default 50,000)")
    ap.add_argument("--queries", type=int, default=200, help="real queries (default 200)")
    ap.add_argument("--components", type=int, default=256, help="mixture components (default 256)")
    ap.add_argument("--ef", default="40,100,200,400,800", help="hnsw.ef_search values")
    ap.add_argument("--url", help="a PostgreSQL with pgvector (default: a private one for the run)")
    args = ap.parse_args(argv)
    efs = [int(x) for x in args.ef.split(",")]
    if 2 * args.size > REAL_POOL:
        ap.error(f"--size at most {REAL_POOL // 2:,} (two disjoint draws of real chunks)")
    records = list(_read_chunks(chunks_file(REAL_POOL), REAL_POOL))
    pick = np.random.default_rng(11).permutation(len(records))
    real_records = [records[i] for i in pick[: args.size]]
    train_records = [records[i] for i in pick[args.size : 2 * args.size]]
    started = time.perf_counter()
    real = embed(real_records)
    train = embed(train_records)
    print(f"embedded {len(real) + len(train):,} real chunks in {time.perf_counter() - started:.0f} s")
    fit = e5_fit(args.queries)
    queries = fit["queries"][: args.queries]
    gaussian = np.concatenate(list(e5_like_blocks(len(real), fit, seed=1)))
    mixture = mixture_vectors(train, len(real), args.components)
    print(f"{len(real):,} vectors per set, {len(queries)} real queries, HNSW m 16 / ef_construction 64")
    print(f"(the Gaussian is fitted to {FIT_CHUNKS:,} real embeddings, as bench_postgres draws it)")
    print("| set | mean cosine of the exact top 10 | build s | " + " | ".join(f"ef {e}" for e in efs) + " |")
    print("|---|---|---|" + "---|" * len(efs))
    with server(args.url) as url:
        for name, vectors in (("real", real), ("gaussian", gaussian), ("mixture", mixture)):
            row = recall_table(url, name, vectors, queries, efs)
            cells = " | ".join(f"{row['recall'][e]:.3f}" for e in efs)
            print(f"| {name} | {row['top10_cosine']:.3f} | {row['build_s']:.0f} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
