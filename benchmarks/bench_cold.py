"""Benchmark cold starts: what a one-shot `haygraph` command costs in a fresh process.

Five fresh processes (``--runs``) each for ``haygraph --help``, ``search`` and ``ask`` over the
handbook store (multilingual-e5-small, embeddings cached) and over an English-only store (MiniLM,
queries on its ONNX copy), and ``index`` of three small new files into a fresh store; with
``python -c pass`` and ``python -c "import haystack"`` timed in the same run as the baseline. The
commands take turns (one round runs each once), so a burst of load elsewhere on the machine spreads
over all of them. Prints p50 and max wall seconds per command, the acceptance checks (cold ``ask`` p50
at most twice the ``import haystack`` p50; ``search`` no slower than ``ask``), and the import-time
breakdown of one ``ask`` (``python -X importtime``) by top-level package.

    python -m benchmarks.bench_cold [--store DIR] [--english-store DIR] [--runs 5] [--out result.json]

Stores not given are built first in a temporary directory with ``haygraph index`` (untimed;
embeddings from $HAYGRAPH_CACHE_DIR or ~/.cache/haygraph, so only a first run embeds the handbook).
Each timed ``index`` writes three files whose text is new (the run number is in it), so every run
loads the embedding model and embeds; one untimed index first exports the ONNX copy of the model.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from haygraph.retrieval import sample_handbook_path

QUESTION = "How many days of annual leave do I get?"
ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}
ENGLISH_PAGES = ("leave-policy.md", "remote-work.md", "benefits.txt", "travel-policy.md", "it-security.md")
SMALL_FILES = {
    "parking.md": "# Parking\n\nStaff park in level B2. Run {run}: visitor badges are at the desk.\n",
    "printers.txt": "Printers\n\nThe third-floor printer takes badge logins. Toner: ask IT ({run}).\n",
    "kitchen.html": "<html><body><h1>Kitchen</h1><p>The kitchen closes at 20:00; batch {run} of rules.</p>"
    "</body></html>",
}


def _haygraph() -> list[str]:
    """The `haygraph` console script next to this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("haygraph")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "haygraph.adapters.cli"]


def _run(argv: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one fresh process running `argv` (which must succeed)."""
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} … failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return wall


def _build_store(docs: list[Path], store: Path, env: dict[str, str]) -> Path:
    print(f"indexing {len(docs)} path(s) into {store} (untimed) ...", file=sys.stderr)
    _run([*_haygraph(), "index", *map(str, docs), "--store", str(store), "--no-progress"], env)
    return store


def _small_files(root: Path, run: int) -> Path:
    folder = root / f"files-{run}"
    folder.mkdir(parents=True)
    for name, text in SMALL_FILES.items():
        (folder / name).write_text(text.format(run=run), encoding="utf-8")
    return folder


# runs the CLI, then says on its last stderr line which of torch & co. are really loaded (importtime
# also lists an import that failed at once, such as Haystack's hidden torch import)
_REPORT_HEAVY = (
    "import json, sys\n"
    "from haygraph.adapters.cli.main import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = ('torch', 'transformers', 'sentence_transformers')\n"
    "print(json.dumps([m for m in heavy if sys.modules.get(m) is not None]), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def import_breakdown(argv: list[str], env: dict[str, str], top: int = 12) -> dict[str, Any]:
    """One run of `argv` under ``python -X importtime``: wall, total import time, the top packages."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", _REPORT_HEAVY, *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall = time.perf_counter() - started
    by_package: Counter[str] = Counter()
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", line)
        if m:
            by_package[m.group(2).split(".")[0]] += int(m.group(1))
    total = sum(by_package.values()) / 1e6
    heavy = json.loads(proc.stderr.strip().splitlines()[-1])
    return {
        "wall_s": round(wall, 3),
        "imports_s": round(total, 3),
        "top_packages_s": {k: round(v / 1e6, 3) for k, v in by_package.most_common(top)},
        "heavy_imported": heavy,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print (and optionally save) its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="handbook store (default: built in a temporary directory)")
    parser.add_argument("--english-store", help="English-only MiniLM store (default: built likewise)")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command (default 5)")
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    env = {**os.environ, **ENV}
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        root = Path(tmp)
        handbook = (
            Path(args.store) if args.store else _build_store([sample_handbook_path()], root / "hb", env)
        )
        english = Path(args.english_store) if args.english_store else None
        if english is None:
            pages = root / "english"
            pages.mkdir()
            for name in ENGLISH_PAGES:
                (pages / name).write_bytes((sample_handbook_path() / name).read_bytes())
            english = _build_store([pages], root / "en", env)
        _build_store([_small_files(root, 0)], root / "index-warm", env)  # exports the ONNX copy once
        hg = _haygraph()
        commands: dict[str, Any] = {
            "python -c pass": lambda run: [sys.executable, "-c", "pass"],
            "python -c 'import haystack'": lambda run: [sys.executable, "-c", "import haystack"],
            "haygraph --help": lambda run: [*hg, "--help"],
            "search (handbook, e5)": lambda run: [*hg, "search", QUESTION, "--store", str(handbook)],
            "ask (handbook, e5)": lambda run: [*hg, "ask", QUESTION, "--store", str(handbook)],
            "search (English, MiniLM)": lambda run: [*hg, "search", QUESTION, "--store", str(english)],
            "ask (English, MiniLM)": lambda run: [*hg, "ask", QUESTION, "--store", str(english)],
            "index (3 small files)": lambda run: [
                *hg,
                "index",
                str(_small_files(root, run)),
                "--store",
                str(root / f"index-{run}"),
                "--no-progress",
            ],
        }
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for run in range(1, args.runs + 1):
            for name, make in commands.items():
                walls[name].append(_run(make(run), env))
            print(f"round {run}/{args.runs} done", file=sys.stderr)
        breakdown = import_breakdown(["ask", QUESTION, "--store", str(handbook)], env)
    figures: dict[str, dict[str, Any]] = {
        name: {
            "p50_s": round(statistics.median(w), 3),
            "max_s": round(max(w), 3),
            "runs_s": [round(x, 3) for x in w],
        }
        for name, w in walls.items()
    }
    haystack_p50 = figures["python -c 'import haystack'"]["p50_s"]
    ask_p50 = figures["ask (handbook, e5)"]["p50_s"]
    search_p50 = figures["search (handbook, e5)"]["p50_s"]
    checks = {
        "ask p50 <= 2 x import haystack p50": ask_p50 <= 2 * haystack_p50,
        "search p50 <= ask p50": search_p50 <= ask_p50,
    }
    print(f"\n{'command':32} {'p50 s':>7} {'max s':>7}   ({args.runs} fresh processes each)")
    for name, fig in figures.items():
        print(f"{name:32} {fig['p50_s']:7.2f} {fig['max_s']:7.2f}")
    ratio = ask_p50 / haystack_p50
    print(f"\nask p50 {ask_p50:.2f} s vs import haystack p50 {haystack_p50:.2f} s (x{ratio:.2f})")
    for check, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'}: {check}")
    print(
        f"\nimport-time breakdown of one cold ask (handbook): wall {breakdown['wall_s']:.2f} s, "
        f"imports {breakdown['imports_s']:.2f} s; torch/transformers/sentence_transformers imported: "
        f"{breakdown['heavy_imported'] or 'none'}"
    )
    for package, seconds in breakdown["top_packages_s"].items():
        print(f"  {package:28} {seconds:6.3f} s")
    if args.out:
        result = {"figures": figures, "checks": checks, "ask_import_breakdown": breakdown, "runs": args.runs}
        Path(args.out).write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
