"""The engine's unigram tokenizer in Python (`e5_pieces`) against the `tokenizers` build (`e5_torch`).

Run as ``python -m benchmarks.bench_e5_pieces [--limit N]``. Over every document and query of the shared
datasets and every paragraph of the bundled handbook, each normalised as the reader and the ONNX encoder
normalise them (``passage: `` / ``query: `` prefix, the packed file's per-character table), it counts
the texts whose ids or character offsets differ between the two, prints the first differences, the
time each takes per 1,000 texts, and the memory each adds to a fresh process (VmRSS, MB).

This is a script that prints figures, not a test (``tests/retrieval/test_e5_pieces.py`` is the test).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.converters import read_beir_corpus


def texts(limit: int = 0) -> dict[str, list[str]]:
    """Texts by source: each dataset's documents and queries, the handbook's paragraphs."""
    out: dict[str, list[str]] = {}
    root = datasets_root()
    for folder in sorted(p for p in root.iterdir() if (p / "corpus.jsonl").is_file()):
        # the documents as they are indexed (title, blank line, text)
        docs = [d.content or "" for d in read_beir_corpus(folder / "corpus.jsonl", limit or None)]
        with (folder / "queries.jsonl").open(encoding="utf-8") as fh:
            queries = [json.loads(line)["text"] for line in fh]
        out[f"{folder.name} documents"] = docs
        out[f"{folder.name} queries"] = queries[:limit] if limit else queries
    paragraphs = [
        p.strip()
        for path in sorted(Path(sample_handbook_path()).rglob("*.md"))
        for p in path.read_text(encoding="utf-8").split("\n\n")
        if p.strip()
    ]
    out["handbook paragraphs"] = paragraphs
    return out


def rss_mb() -> float:
    """VmRSS of this process, MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def added_memory(setup: str) -> float:
    """MB (VmRSS) that running the Python statements `setup` adds to a fresh process."""
    code = (
        "from benchmarks.bench_e5_pieces import rss_mb; import gc; "
        f"b = rss_mb(); {setup}; gc.collect(); print(rss_mb() - b)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def memory(which: str) -> float:
    """MB that building tokenizer `which` adds to a fresh process."""
    return added_memory(f"from benchmarks.bench_e5_pieces import build; t = build({which!r})")


def build(which: str) -> Any:
    """Tokenizer `which` ("tokenizers" or "pieces") over the packed file's pieces."""
    from haygraph.retrieval.e5_pieces import UnigramPieces
    from haygraph.retrieval.e5_torch import PackedE5, build_tokenizer, packed_model_path

    packed = PackedE5.read(packed_model_path())
    packed.data = b""
    if which == "tokenizers":
        return build_tokenizer(packed)
    return UnigramPieces(packed.pieces, packed.scores, packed.unk)


def main(argv: list[str] | None = None) -> int:
    """Compare, time and measure both tokenizers."""
    from haygraph.retrieval.e5_encoder import clean_text
    from haygraph.retrieval.e5_torch import PackedE5, packed_model_path
    from haygraph.retrieval.reader.tokens import normalised

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.bench_e5_pieces", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--limit", type=int, default=0, help="texts per source (default: all)")
    parser.add_argument("--show", type=int, default=5, help="differences printed (default 5)")
    args = parser.parse_args(argv)
    table = PackedE5.read(packed_model_path()).normalisation
    fast, slow = build("tokenizers"), build("pieces")
    total = differ = shown = 0
    spent = {"tokenizers": 0.0, "pieces": 0.0}
    for source, items in texts(args.limit).items():
        bad = 0
        for text in items:
            for prefix in ("passage: ", "query: "):
                written, _origin = normalised(prefix + clean_text(text), table)
                start = time.perf_counter()
                a = fast.encode(written, add_special_tokens=False)
                spent["tokenizers"] += time.perf_counter() - start
                start = time.perf_counter()
                b = slow.encode(written)
                spent["pieces"] += time.perf_counter() - start
                same = list(a.ids) == b.ids and [tuple(o) for o in a.offsets] == b.offsets
                total += 1
                if not same:
                    bad += 1
                    if shown < args.show:
                        shown += 1
                        k = next(
                            (i for i, (x, y) in enumerate(zip(a.ids, b.ids, strict=False)) if x != y),
                            min(len(a.ids), len(b.ids)),
                        )
                        print(
                            f"  differs ({source}): {written[:80]!r} ids at {k}: "
                            f"{list(a.ids[k : k + 5])} vs {b.ids[k : k + 5]}"
                        )
        differ += bad
        print(f"{source}: {len(items)} texts x 2 prefixes, {bad} differ", flush=True)
    print(f"\nall: {total} encodings, {differ} differ (ids or offsets)")
    for name, seconds in spent.items():
        print(f"{name}: {1000 * seconds / total:.2f} ms per text ({seconds:.1f} s in all)")
    for name in spent:
        print(f"{name}: adds {memory(name):.0f} MB to a fresh process")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
