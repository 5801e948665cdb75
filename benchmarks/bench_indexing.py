"""Indexing throughput: chunks/s of each embedding backend on the handbook and a SciFact subset.

    python -m benchmarks.bench_indexing [--backends torch,onnx,onnx-int8] [--scifact 500]
                                        [--batch-sizes 16,32,64] [--run-sizes 0,4,8,32] [--threads 0,1,2]

For every backend the texts are embedded with the cache off (`CachedDocumentEmbedder`, what
``haygraph index`` runs), after one untimed warm-up call that loads the model; the model load itself
is timed separately (``load s``). ``torch`` means sentence-transformers here (a store of that backend
indexes on the fp32 ONNX copy once it is exported: the ``onnx`` row). Corpora:

- **handbook**: the chunks of the bundled handbook's English pages (the splitter's output; the
  Chinese pages go to multilingual-e5-small, which ``--backends e5-multilingual`` adds);
- **scifact**: the first ``--scifact`` documents of the SciFact corpus (title + abstract, embedded
  whole as ``haygraph eval`` indexes them). The whole corpus (5,183 documents) is an option
  (``--scifact 0``) but takes many minutes per backend on a shared 2-core machine.

Backends and settings take turns within each repetition (``--repeat``), so load elsewhere on the
machine spreads over all of them; the best (fastest) repetition is reported, as usual for throughput.
``--batch-sizes`` (texts per embedder call: sentence-transformers' batch for ``torch``),
``--run-sizes`` (most texts per ONNX Runtime call; 0 = `RUN_SIZE`, the default) and ``--threads`` (ONNX
Runtime intra-op threads; 0 = its default) sweep the settings on the SciFact subset.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from haystack import Document

from haygraph.eval.beir import load_beir
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.config import RetrievalConfig
from haygraph.retrieval.embedding_cache import EMBEDDER_BACKENDS, CachedDocumentEmbedder
from haygraph.retrieval.pipelines import build_indexing_pipeline
from haygraph.retrieval.store import EmbeddedDocumentStore


def handbook_chunks() -> list[str]:
    """The chunk texts of the handbook's English pages, as the indexing pipeline splits them."""
    files = [p for p in sorted(sample_handbook_path().iterdir()) if p.name.isascii()]
    pipe = build_indexing_pipeline(RetrievalConfig(), EmbeddedDocumentStore(), from_files=True, embed=False)
    data = {"converter": {"sources": [str(p) for p in files], "meta": {}}}
    out = pipe.run(data, include_outputs_from={"dedup"})
    return [d.content or "" for d in out["dedup"]["documents"]]


def scifact_texts(limit: int) -> list[str]:
    """Title and abstract of the first `limit` SciFact documents (all when 0)."""
    corpus = load_beir(datasets_root() / "scifact", "test").corpus
    docs = list(corpus.values())
    return [d.content or "" for d in (docs[:limit] if limit else docs)]


def throughput(
    texts: list[str], backend: str, batch_size: int, threads: int, run_size: int = 0
) -> tuple[float, float]:
    """(model load s, chunks/s) of embedding `texts` with the cache off.

    ``torch`` is sentence-transformers itself: its cache directory is an empty one, where no ONNX copy
    of the model is found (with one, ``torch`` runs on that copy: the ``onnx`` row).
    """
    cache_dir = tempfile.mkdtemp(prefix="bench-indexing-") if backend == "torch" else None
    embedder = CachedDocumentEmbedder(
        batch_size=batch_size, cache_dir=cache_dir, use_cache=False, backend=backend, threads=threads
    )
    start = time.perf_counter()
    embedder.run(documents=[Document(content="warm up")])
    loaded = time.perf_counter() - start
    if run_size and embedder.backend in ("onnx", "onnx-int8"):
        embedder._embedder.run_size = run_size
    if threads and embedder.backend in ("onnx", "onnx-int8"):  # onnxruntime intra-op threads
        encoder = embedder._embedder
        encoder.threads = threads
        encoder._session = None
        encoder.warm_up()
    start = time.perf_counter()
    embedder.run(documents=[Document(content=t) for t in texts])
    return loaded, len(texts) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--scifact", type=int, default=500, help="SciFact documents (0: all 5,183)")
    parser.add_argument("--batch-sizes", default="32", help="batch sizes to compare (default 32)")
    parser.add_argument("--run-sizes", default="0", help="ONNX texts per call to compare (0: RUN_SIZE)")
    parser.add_argument("--threads", default="0", help="ONNX Runtime threads to compare (0: default)")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    backends = [b for b in args.backends.split(",") if b]
    for b in backends:
        if b not in EMBEDDER_BACKENDS or b == "auto":
            parser.error(f"--backends: unknown backend {b!r}")
    sizes = [int(x) for x in args.batch_sizes.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    runs = [int(x) for x in args.run_sizes.split(",")]
    corpora = {
        "handbook (English chunks)": handbook_chunks(),
        f"scifact (first {args.scifact or 'all'})": scifact_texts(args.scifact),
    }
    settings = [
        (corpus, backend, size, n, run)
        for corpus in corpora
        for backend in backends
        for size in (sizes if corpus.startswith("scifact") else [32])
        for n in (threads if corpus.startswith("scifact") and backend.startswith("onnx") else [0])
        for run in (runs if corpus.startswith("scifact") and backend.startswith("onnx") else [0])
    ]
    best: dict[tuple[str, str, int, int, int], tuple[float, float]] = {}
    for rep in range(args.repeat):
        for key in settings:
            corpus, backend, size, n, run = key
            loaded, rate = throughput(corpora[corpus], backend, size, n, run)
            if key not in best or rate > best[key][1]:
                best[key] = (loaded, rate)
            print(
                f"[{rep + 1}/{args.repeat}] {corpus} {backend} batch {size} run {run} threads {n}: "
                f"{rate:.1f}/s",
                flush=True,
            )
    print(f"\ncpu count {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}; best of {args.repeat}")
    print(
        f"{'corpus':28} {'backend':16} {'batch':>5} {'run':>4} {'threads':>7} {'texts':>6} {'load s':>7} "
        f"{'chunks/s':>9}"
    )
    for (corpus, backend, size, n, run), (loaded, rate) in best.items():
        print(
            f"{corpus:28} {backend:16} {size:5d} {run:4d} {n:7d} {len(corpora[corpus]):6d} {loaded:7.2f} "
            f"{rate:9.1f}"
        )
    for line in speedups(best):
        print(line)
    return 0


def speedups(best: dict[tuple[str, str, int, int, int], tuple[float, float]]) -> list[str]:
    """One line per corpus and backend: its default setting's chunks/s over torch's (batch 32)."""
    lines = []
    for corpus in dict.fromkeys(key[0] for key in best):
        torch = best.get((corpus, "torch", 32, 0, 0))
        if torch is None:
            continue
        for (name, backend, size, n, run), (_loaded, rate) in best.items():
            if name == corpus and backend != "torch" and (size, n, run) == (32, 0, 0):
                lines.append(f"{corpus}: {backend} / torch = {rate / torch[1]:.2f}x")
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
