"""Keyword side of the PostgreSQL store: BM25 in the process against BM25 in SQL and `ts_rank_cd`, measured.

Run as ``python -m benchmarks.bench_pg_keyword [--dataset scifact] [--latency-chunks 100000] [--url URL]``.

The issue offered two designs: keep bm25s in the process (built from the table), or keep the terms in
PostgreSQL. Both SQL variants tokenise with our own tokenizer (English stemming and stop words, jieba for
Chinese; PostgreSQL has no Chinese parser), so the terms are identical:

- ``sql-bm25``: one row per (term, chunk, tf), a B-tree on term, document lengths and Lucene IDF in side
  tables; a query sums the BM25 contributions of its terms' postings (exact BM25, k1 1.2, b 0.75);
- ``ts_rank_cd``: the terms in a ``tsvector`` (``simple`` configuration) with a GIN index, queries OR their
  terms and rank by PostgreSQL's cover density (not BM25);

against ``bm25s`` in the process (the embedded store's index) and ``postings segments``, what the
PostgreSQL store uses: the segments its indexing jobs write (`haygraph.retrieval.postgres.postings`),
scored in the process by `SegmentIndex` from local files, as a serving process does (its time includes
tokenizing the query; the other variants are given the terms). Printed: nDCG@10 on the dataset's test
queries and query latency p50/p95; with ``--latency-chunks N`` also the latency over N chunks of
`benchmarks.bench_scale`'s corpus (no judgments there). Without ``--url`` a private PostgreSQL with
pgvector is started on a loopback port. A script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_postgres import server
from benchmarks.bench_scale import _read_chunks, chunks_file
from haygraph.eval.beir import load_beir
from haygraph.eval.index_prep import resolve_dataset
from haygraph.eval.metrics import ndcg
from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.config import BM25Config
from haygraph.retrieval.postgres import postings

K1, B = 1.2, 0.75


def load(conn: Any, prefix: str, ids: list[str], terms: list[list[str]]) -> None:
    """Write the postings, lengths, IDF and tsvectors of one corpus into tables named `prefix`_*."""
    n = len(ids)
    conn.execute(f"DROP TABLE IF EXISTS {prefix}_post, {prefix}_doc, {prefix}_idf, {prefix}_tsv")
    conn.execute(f"CREATE TABLE {prefix}_doc (doc int PRIMARY KEY, id text, len int)")
    conn.execute(f"CREATE TABLE {prefix}_post (term text, doc int, tf int)")
    conn.execute(f"CREATE TABLE {prefix}_tsv (doc int PRIMARY KEY, tsv tsvector)")
    df: Counter[str] = Counter()
    with conn.cursor() as cur:
        with cur.copy(f"COPY {prefix}_doc (doc, id, len) FROM STDIN") as copy:
            for i, (doc_id, toks) in enumerate(zip(ids, terms, strict=True)):
                copy.write_row((i, doc_id, len(toks)))
        with cur.copy(f"COPY {prefix}_post (term, doc, tf) FROM STDIN") as copy:
            for i, toks in enumerate(terms):
                counts = Counter(toks)
                df.update(counts.keys())
                for term, tf in counts.items():
                    copy.write_row((term, i, tf))
        with cur.copy(f"COPY {prefix}_tsv (doc, tsv) FROM STDIN") as copy:
            for i, toks in enumerate(terms):
                copy.write_row((i, _tsvector(toks)))
    conn.execute(f"CREATE TABLE {prefix}_idf (term text PRIMARY KEY, idf float8)")
    with conn.cursor() as cur, cur.copy(f"COPY {prefix}_idf (term, idf) FROM STDIN") as copy:
        for term, d in df.items():
            copy.write_row((term, float(np.log(1 + (n - d + 0.5) / (d + 0.5)))))
    conn.execute(f"CREATE INDEX ON {prefix}_post (term)")
    conn.execute(f"CREATE INDEX ON {prefix}_tsv USING gin (tsv)")
    conn.execute(f"ANALYZE {prefix}_post")
    conn.execute(f"ANALYZE {prefix}_doc")
    conn.execute(f"ANALYZE {prefix}_tsv")


def _tsvector(terms: list[str]) -> str:
    """The tsvector text of `terms` with their positions (cover density needs them; at most 16383)."""
    positions: dict[str, list[int]] = {}
    for pos, term in enumerate(terms[:16383], start=1):
        positions.setdefault(term, []).append(pos)
    return " ".join(f"{_lexeme(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def _lexeme(term: str) -> str:
    """A term as a quoted tsvector/tsquery lexeme (any character, jieba's included)."""
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


Search = Callable[[str, list[str]], list[tuple[str, float]]]
"""A variant: (query text, its terms) -> (chunk id, score), best first."""


def sql_bm25(conn: Any, prefix: str, avgdl: float) -> Search:
    """Exact BM25 over the postings: the sum of each query term's contribution (query terms repeat)."""
    query = (
        f"SELECT d.id, sum(i.idf * p.tf * {K1 + 1} / (p.tf + {K1} * (1 - {B} + {B} * d.len / %s))) AS s "
        f"FROM unnest(%s::text[]) q(term) JOIN {prefix}_post p USING (term) JOIN {prefix}_idf i USING (term) "
        f"JOIN {prefix}_doc d ON d.doc = p.doc GROUP BY d.id ORDER BY s DESC LIMIT 100"
    )
    return lambda text, toks: [(r[0], float(r[1])) for r in conn.execute(query, (avgdl, toks)).fetchall()]


def ts_rank(conn: Any, prefix: str) -> Search:
    """PostgreSQL's cover-density rank over the terms OR-ed together."""
    query = (
        f"SELECT d.id, ts_rank_cd(t.tsv, q) AS s FROM {prefix}_tsv t JOIN {prefix}_doc d ON d.doc = t.doc, "
        "to_tsquery('simple', %s) q WHERE t.tsv @@ q ORDER BY s DESC LIMIT 100"
    )

    def run(text: str, toks: list[str]) -> list[tuple[str, float]]:
        if not toks:
            return []
        terms = " | ".join(_lexeme(t) for t in dict.fromkeys(toks))
        return [(r[0], float(r[1])) for r in conn.execute(query, (terms,)).fetchall()]

    return run


def measure(
    name: str, search: Search, queries: dict[str, tuple[str, list[str]]]
) -> tuple[dict[str, dict[str, float]], list[float]]:
    """(run, latencies ms) of `search` over `queries` (query id -> text and terms)."""
    run, lat = {}, []
    for qid, (text, toks) in queries.items():
        start = time.perf_counter()
        hits = search(text, toks)
        lat.append((time.perf_counter() - start) * 1000)
        run[qid] = {doc: score for doc, score in hits}
    return run, lat


def in_process(index: BM25Index, ids: list[str]) -> Search:
    """bm25s over the same terms (the index was built from the same texts by the same tokenizer)."""

    def run(text: str, toks: list[str]) -> list[tuple[str, float]]:
        if index._bm25 is None:
            return []
        token_ids = index._bm25.get_tokens_ids(toks)
        if not token_ids:
            return []
        scores = np.asarray(index._bm25.get_scores_from_ids(token_ids))
        top = np.argsort(-scores)[:100]
        return [(ids[i], float(scores[i])) for i in top if scores[i] > 0]

    return run


def segments(folder: Path, texts: list[str], ids: list[str], tokenizer: Any) -> Search:
    """The store's postings segments over `texts` (`SEGMENT_DOCS` chunks each), read as serve reads them."""
    files = []
    for seg, begin in enumerate(range(0, len(texts), postings.SEGMENT_DOCS)):
        builder = postings.SegmentBuilder(tokenizer)
        for docno, text in enumerate(texts[begin : begin + postings.SEGMENT_DOCS], start=begin + 1):
            builder.add(docno, text, None)
        files.append(folder / f"{seg}.seg")
        files[-1].write_bytes(builder.build())
    index = postings.SegmentIndex(
        [postings.Segment(i, f) for i, f in enumerate(files)], np.empty(0, np.int64), tokenizer, K1, B
    )

    def run(text: str, toks: list[str]) -> list[tuple[str, float]]:
        scores = index.scores(text)
        if scores is None:
            return []
        top = np.argsort(-scores)[:100]
        return [(ids[i], float(scores[i])) for i in top if scores[i] > 0]

    return run


def main(argv: list[str] | None = None) -> int:
    """Build both SQL layouts and the in-process index; print nDCG@10 and latency per variant."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_pg_keyword", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--dataset", default="scifact", help="BEIR dataset (name in the shared folder, or a path)"
    )
    parser.add_argument(
        "--latency-chunks", type=int, default=0, help="also time over N chunks (no judgments)"
    )
    parser.add_argument("--url", help="postgresql://... (default: start a private server)")
    args = parser.parse_args(argv)
    tokenizer = BM25Index.from_config(BM25Config()).tokenizer
    data = load_beir(resolve_dataset(args.dataset))
    ids = list(data.corpus)
    terms = [tokenizer(data.corpus[i].content or "") for i in ids]
    queries = {qid: (text, tokenizer(text)) for qid, text in data.queries.items() if qid in data.qrels}
    import psycopg

    with (
        server(args.url) as url,
        psycopg.connect(url, autocommit=True) as conn,
        tempfile.TemporaryDirectory(prefix="haygraph-kw-") as tmp,
    ):
        rows = []
        texts = [data.corpus[i].content or "" for i in ids]
        for label, corpus_ids, corpus_texts, corpus_terms, qrels in [
            ("dataset", ids, texts, terms, data.qrels)
        ] + (
            [("chunks", *_scale_corpus(args.latency_chunks, tokenizer), None)] if args.latency_chunks else []
        ):
            start = time.perf_counter()
            load(conn, f"kw_{label}", corpus_ids, corpus_terms)
            load_s = time.perf_counter() - start
            index = BM25Index(tokenizer, K1, B).build(corpus_texts)
            avgdl = float(np.mean([len(t) for t in corpus_terms]))
            folder = Path(tmp) / label
            folder.mkdir()
            for name, search in (
                ("bm25s in the process", in_process(index, corpus_ids)),
                ("postings segments", segments(folder, corpus_texts, corpus_ids, tokenizer)),
                ("sql-bm25", sql_bm25(conn, f"kw_{label}", avgdl)),
                ("ts_rank_cd (simple)", ts_rank(conn, f"kw_{label}")),
            ):
                run, lat = measure(name, search, queries)
                score = ndcg(qrels, run, 10) if qrels is not None else float("nan")
                rows.append(
                    (
                        label,
                        len(corpus_ids),
                        name,
                        score,
                        np.percentile(lat, 50),
                        np.percentile(lat, 95),
                        load_s,
                    )
                )
    print(
        f"{'corpus':8s} {'chunks':>8s} {'variant':22s} {'nDCG@10':>8s} {'p50 ms':>8s} {'p95 ms':>8s} "
        f"{'load s':>7s}"
    )
    for label, n, name, score, p50, p95, load_s in rows:
        print(f"{label:8s} {n:8d} {name:22s} {score:8.4f} {p50:8.1f} {p95:8.1f} {load_s:7.1f}")
    return 0


def _scale_corpus(size: int, tokenizer: Any) -> tuple[list[str], list[str], list[list[str]]]:
    records = list(_read_chunks(chunks_file(size), size))
    texts = [r["content"] for r in records]
    return [r["id"] for r in records], texts, [tokenizer(t) for t in texts]


if __name__ == "__main__":
    raise SystemExit(main())
