"""The reader's learning curve: ``curve.csv`` of `benchmarks.train_reader --dev` as a table and a plot.

    python -m benchmarks.reader_curve RUN/curve.csv [OTHER/curve.csv ...] [--labels a b] [--plot curve.png]

Prints a Markdown table per run (one row per evaluation: windows read, epochs, and per language EM, F1,
HasAns F1 and NoAns exact; a score the file leaves empty, as in the curves rebuilt from the model card's
published figures in ``docs/reader-curves/``, is an empty cell) and, with ``--plot``, draws dev F1 and
HasAns F1 per language against the windows read, every run on the same axes (variants compared at the
same windows). `gains` says what the issue's stopping rule reads: the F1 change between successive
evaluations.

F1 alone can mislead: it also counts "no answer" said to the unanswerable third of the slice, and a
reader that says it more often gains F1 while finding fewer answers (the first candidate shipped from
this run did; the model card). HasAns F1 is the answers found; NoAns exact, the refusals.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple


class Scores(NamedTuple):
    """One language's scores at one evaluation."""

    exact: float
    f1: float
    has_ans_f1: float
    no_ans_exact: float


def read_curve(path: Path) -> list[dict[str, str]]:
    """The rows of `path`, in file order."""
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _float(value: str | None) -> float:
    return float(value) if value else math.nan


def _cell(value: float) -> str:
    return "" if math.isnan(value) else f"{value:.1f}"


def by_step(rows: Sequence[dict[str, str]]) -> list[tuple[int, int, float, dict[str, Scores]]]:
    """(step, windows, epoch, {lang: Scores}) per evaluation, by step."""
    points: dict[int, tuple[int, float, dict[str, Scores]]] = {}
    for r in rows:
        step = int(r["step"])
        windows, epoch, scores = points.get(step, (int(r["windows"]), float(r["epoch"]), {}))
        scores[r["lang"]] = Scores(
            _float(r.get("exact")), float(r["f1"]), _float(r.get("HasAns_f1")), _float(r.get("NoAns_exact"))
        )
        points[step] = (windows, epoch, scores)
    return [(s, w, e, sc) for s, (w, e, sc) in sorted(points.items())]


def gains(rows: Sequence[dict[str, str]], lang: str) -> list[float]:
    """F1 change of `lang` from each evaluation to the next (the stopping rule: two below 0.5 in a row)."""
    f1 = [sc[lang].f1 for _s, _w, _e, sc in by_step(rows) if lang in sc]
    return [round(b - a, 2) for a, b in itertools.pairwise(f1)]


def markdown(rows: Sequence[dict[str, str]]) -> str:
    """A Markdown table of the curve."""
    points = by_step(rows)
    langs = sorted({lang for *_rest, sc in points for lang in sc})
    head = (
        "| step | windows | epochs | "
        + " | ".join(f"{x} EM | {x} F1 | {x} HasAns F1 | {x} NoAns" for x in langs)
        + " |"
    )
    rule = "|" + "---:|" * (3 + 4 * len(langs))
    lines = [head, rule]
    for step, windows, epoch, sc in points:
        cells = [
            " | ".join(_cell(v) for v in (sc[x].exact, sc[x].f1, sc[x].has_ans_f1, sc[x].no_ans_exact))
            if x in sc
            else " |  |  | "
            for x in langs
        ]
        lines.append(f"| {step:,} | {windows:,} | {epoch:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def group_colors(runs: Sequence[Sequence[dict[str, str]]]) -> dict[str, str]:
    """One matplotlib colour per language or pair over all `runs`, so a group looks the same in each."""
    groups = sorted({x for rows in runs for *_r, scores in by_step(rows) for x in scores})
    return {lang: f"C{n % 10}" for n, lang in enumerate(groups)}


def plot(
    runs: Sequence[Sequence[dict[str, str]]] | Sequence[dict[str, str]],
    path: Path,
    labels: Sequence[str] = (),
    title: str = "reader dev slice",
) -> Path:
    """Dev F1 and HasAns F1 per language against windows read, every run on the same axes, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    many: list[Sequence[dict[str, str]]] = (
        [runs] if runs and isinstance(runs[0], dict) else list(runs)  # type: ignore[list-item,arg-type]
    )  # one run's rows, or several runs
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), dpi=100, sharex=True)
    markers = "osD^v"
    colors = group_colors(many)
    for k, rows in enumerate(many):
        points = by_step(rows)
        label = labels[k] if k < len(labels) else f"run {k + 1}"
        for lang in sorted({x for *_r, sc in points for x in sc}):
            color = colors[lang]
            xs = [w for _s, w, _e, sc in points if lang in sc]
            for ax, field in zip(axes, ("f1", "has_ans_f1"), strict=True):
                ys = [getattr(sc[lang], field) for *_r, sc in points if lang in sc]
                ax.plot(
                    xs, ys, marker=markers[k % len(markers)], color=color,
                    linestyle="-" if k == 0 else "--", label=f"{label} {lang}",
                )  # fmt: skip
    for ax, name in zip(axes, ("F1", "HasAns F1 (answers found)"), strict=True):
        ax.set_xlabel("windows read (from the shipped weights)")
        ax.xaxis.set_major_formatter(lambda x, _pos: f"{x / 1000:g}k" if x else "0")  # 70k, not 70000
        ax.set_ylabel(name)
        ax.set_title(f"{title}: {name}")
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # beside the plots
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("curve", type=Path, nargs="+", help="curve.csv files written by train_reader --dev")
    ap.add_argument("--labels", nargs="*", default=[], help="a name per curve (default: run 1, run 2, ...)")
    ap.add_argument("--plot", type=Path, default=None, help="write the plot here (PNG)")
    args = ap.parse_args(argv)
    runs = [read_curve(path) for path in args.curve]
    for k, rows in enumerate(runs):
        if len(runs) > 1:
            print(f"\n{args.labels[k] if k < len(args.labels) else f'run {k + 1}'} ({args.curve[k]})")
        print(markdown(rows))
        for lang in sorted({r["lang"] for r in rows}):
            print(f"{lang} F1 gains between evaluations: {gains(rows, lang)}")
    if args.plot is not None:
        print(plot(runs, args.plot, args.labels))


if __name__ == "__main__":
    main()
