"""The encoders side by side on every shared dataset: a section of ``benchmarks/RESULTS.md``.

Run after one ``haygraph eval`` per dataset with the multilingual encoder (``e5.yaml`` holding
``embedder: {backend: e5-multilingual}``)::

    haygraph eval --dataset D --configs default,bm25,dense,hybrid,hybrid-minmax
        --config e5.yaml --store STORES/D --out DIR/D.json
    python -m benchmarks.encoder_page --e5-json DIR [--speed FILE]

The all-MiniLM-L6-v2 figures are read from the per-dataset tables RESULTS.md already holds (the
harness's own output, same data and code path); the e5 figures from the JSON files. The section
between the ``<!-- encoders -->`` markers is replaced (appended the first time). ``--speed`` adds a
Markdown file of embedding throughput and query latency (``python -m benchmarks.bench_embedding``
output, copied as is). A script that writes figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
CONFIGS: tuple[str, ...] = ("dense", "hybrid", "hybrid-minmax", "default")
START, END = "<!-- encoders -->", "<!-- /encoders -->"


def minilm_table(text: str) -> dict[str, dict[str, float]]:
    """nDCG@10 per dataset and config from RESULTS.md's ``## name (...)`` tables."""
    out: dict[str, dict[str, float]] = {}
    dataset = None
    for line in text.splitlines():
        if line.startswith("## "):
            dataset = line[3:].split(" ")[0]
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if dataset and line.startswith("|") and cells[0] in CONFIGS:
            try:
                out.setdefault(dataset, {})[cells[0]] = float(cells[1])
            except (ValueError, IndexError):
                continue
    return out


def e5_table(directory: Path) -> dict[str, dict[str, object]]:
    """nDCG@10 per config and the index figures of each ``<dataset>.json`` in `directory`."""
    out: dict[str, dict[str, object]] = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        configs = data.get("configs") or {}
        row: dict[str, object] = {
            name: configs[name]["metrics"]["nDCG@10"]
            for name in CONFIGS
            if name in configs and "metrics" in configs[name]
        }
        row["index"] = data.get("index") or {}
        out[path.stem] = row
    return out


def section(minilm: dict[str, dict[str, float]], e5: dict[str, dict[str, object]], speed: str) -> str:
    """The Markdown section: one row per dataset, MiniLM beside e5 for each config."""
    lines = [
        START,
        "## Encoders side by side: all-MiniLM-L6-v2 and multilingual-e5-small",
        "",
        "nDCG@10 on each dataset's test queries, whole documents, the same harness and configs as the",
        "tables above (MiniLM: those tables; e5: `embedder.backend: e5-multilingual`). `default` is the",
        "shipped query configuration (weighted RRF, language-aware). Index: seconds to index the corpus",
        "with e5 on this shared 2-core machine (documents embedded per second; the rest came from the",
        "embedding cache).",
        "",
        "| dataset | " + " | ".join(f"{c} MiniLM | {c} e5" for c in CONFIGS) + " | e5 index s (docs/s) |",
        "|---|" + "---:|" * (2 * len(CONFIGS) + 1),
    ]
    for name in sorted(set(minilm) | set(e5)):
        cells = []
        for config in CONFIGS:
            a = minilm.get(name, {}).get(config)
            b = e5.get(name, {}).get(config)
            cells += [_figure(a), _figure(b)]
        index = e5.get(name, {}).get("index")
        info: dict[str, Any] = index if isinstance(index, dict) else {}
        seconds, embedded = info.get("seconds"), info.get("embedded")
        rate = f"{seconds:.0f} ({embedded / seconds:.1f})" if seconds and embedded else "– (cached)"
        if name not in e5:
            rate = "not run"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {rate} |")
    if speed:
        lines += ["", speed.strip()]
    lines.append(END)
    return "\n".join(lines) + "\n"


def _figure(value: object) -> str:
    return f"{value:.4f}" if isinstance(value, float) else "–"


def main(argv: list[str] | None = None) -> int:
    """Write the section into RESULTS.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--e5-json", required=True, help="folder of haygraph eval JSONs")
    parser.add_argument("--speed", help="a Markdown file with embedding speed figures, added as is")
    parser.add_argument("--out", default=str(RESULTS))
    args = parser.parse_args(argv)
    text = RESULTS.read_text(encoding="utf-8")
    speed = Path(args.speed).read_text(encoding="utf-8") if args.speed else ""
    block = section(minilm_table(text), e5_table(Path(args.e5_json)), speed)
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) + 1 :]
    else:
        text = text.rstrip("\n") + "\n\n" + block
    Path(args.out).write_text(text, encoding="utf-8")
    print(block, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
