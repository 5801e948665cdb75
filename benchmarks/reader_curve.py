"""The reader's learning curve: ``curve.csv`` of `benchmarks.train_reader --dev` as a table and a plot.

    python -m benchmarks.reader_curve RUN/curve.csv [--plot curve.png]

Prints a Markdown table (one row per evaluation: windows read, epochs, EM / F1 per language) and, with
``--plot``, draws dev F1 per language against the epochs read. `gains` says what the issue's stopping rule
reads: the F1 change between successive evaluations.
"""

from __future__ import annotations

import argparse
import csv
import itertools
from collections.abc import Sequence
from pathlib import Path


def read_curve(path: Path) -> list[dict[str, str]]:
    """The rows of `path`, in file order."""
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def by_step(rows: Sequence[dict[str, str]]) -> list[tuple[int, int, float, dict[str, tuple[float, float]]]]:
    """(step, windows, epoch, {lang: (EM, F1)}) per evaluation, by step."""
    points: dict[int, tuple[int, float, dict[str, tuple[float, float]]]] = {}
    for r in rows:
        step = int(r["step"])
        windows, epoch, scores = points.get(step, (int(r["windows"]), float(r["epoch"]), {}))
        scores[r["lang"]] = (float(r["exact"]), float(r["f1"]))
        points[step] = (windows, epoch, scores)
    return [(s, w, e, sc) for s, (w, e, sc) in sorted(points.items())]


def gains(rows: Sequence[dict[str, str]], lang: str) -> list[float]:
    """F1 change of `lang` from each evaluation to the next (the stopping rule: two below 0.5 in a row)."""
    f1 = [sc[lang][1] for _s, _w, _e, sc in by_step(rows) if lang in sc]
    return [round(b - a, 2) for a, b in itertools.pairwise(f1)]


def markdown(rows: Sequence[dict[str, str]]) -> str:
    """A Markdown table of the curve."""
    points = by_step(rows)
    langs = sorted({lang for *_rest, sc in points for lang in sc})
    head = "| step | windows | epochs | " + " | ".join(f"{x} EM | {x} F1" for x in langs) + " |"
    rule = "|" + "---:|" * (3 + 2 * len(langs))
    lines = [head, rule]
    for step, windows, epoch, sc in points:
        cells = [f"{sc[x][0]:.1f} | {sc[x][1]:.1f}" if x in sc else " | " for x in langs]
        lines.append(f"| {step:,} | {windows:,} | {epoch:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(rows: Sequence[dict[str, str]], path: Path, title: str = "reader dev-slice F1") -> Path:
    """Dev F1 per language against epochs read, as a PNG at `path`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = by_step(rows)
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=100)
    for lang in sorted({lang for *_rest, sc in points for lang in sc}):
        xs = [e for _s, _w, e, sc in points if lang in sc]
        ys = [sc[lang][1] for *_rest, sc in points if lang in sc]
        ax.plot(xs, ys, marker="o", label=lang)
    ax.set_xlabel("epochs read (from the shipped weights)")
    ax.set_ylabel("F1")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("curve", type=Path, help="curve.csv written by train_reader --dev")
    ap.add_argument("--plot", type=Path, default=None, help="write the plot here (PNG)")
    args = ap.parse_args(argv)
    rows = read_curve(args.curve)
    print(markdown(rows))
    for lang in sorted({r["lang"] for r in rows}):
        print(f"{lang} F1 gains between evaluations: {gains(rows, lang)}")
    if args.plot is not None:
        print(plot(rows, args.plot))


if __name__ == "__main__":
    main()
