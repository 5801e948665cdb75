"""Render harness results as a Markdown table and a PNG plot.

The results object is the harness's stable JSON shape::

    {"dataset": "scifact", "split": "test", "num_queries": 300,
     "configs": {"bm25": {"metrics": {"nDCG@10": 0.66, "HitRate@5": 0.74, ...},
                          "latency_ms": {"p50": 1.2, "p95": 3.4},
                          "chunks_kept_mean": 5.0 | None, ...}, ...}}

Extra keys are ignored. A config may lack a metric, latency or chunk count; the cell then shows
a dash. Anything else that does not fit this shape raises `ReportError`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from haygraph.eval.errors import ReportError

logger = logging.getLogger(__name__)

PLOT_METRICS: tuple[str, ...] = ("nDCG@10", "HitRate@5", "MRR@10")
_DASH = "–"
_METRIC_DIGITS = 4
_LATENCY_DIGITS = 1


def _number(value: object, where: str) -> float | None:
    """Return ``value`` as a float (None stays None); raise for anything that is not a number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ReportError(f"{where} must be a number or null, got {value!r}")
    return float(value)


def _configs(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Validate the parts of ``results`` that reports use and return its configs in order."""
    if not isinstance(results, Mapping):
        raise ReportError(f"results must be a mapping, got {type(results).__name__}")
    configs = results.get("configs")
    if not isinstance(configs, Mapping) or not configs:
        raise ReportError('results must have a non-empty "configs" mapping of config name -> result')
    for name, config in configs.items():
        if not isinstance(config, Mapping):
            raise ReportError(f"config {name!r} must be a mapping, got {type(config).__name__}")
        for key in ("metrics", "latency_ms"):
            if not isinstance(config.get(key, {}), Mapping):
                raise ReportError(f'config {name!r}: "{key}" must be a mapping')
    return {str(name): config for name, config in configs.items()}


def _metric_names(configs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """List metric names in order of first appearance across configs."""
    names: list[str] = []
    for config in configs.values():
        for metric in config.get("metrics", {}):
            if metric not in names:
                names.append(str(metric))
    return names


def _value(config: Mapping[str, Any], section: str, key: str, name: str) -> float | None:
    """Read one number from ``config[section][key]`` (or ``config[key]`` when section is empty)."""
    container = config.get(section, {}) if section else config
    where = f"config {name!r}: {section + '.' if section else ''}{key}"
    value = _number(container.get(key), where)
    if value is not None and not math.isfinite(value):
        return None
    return value


def _format(value: float | None, digits: int) -> str:
    """Format as fixed-point text, or a dash for a missing value."""
    return _DASH if value is None else f"{value:.{digits}f}"


def _escape(text: str) -> str:
    """Escape characters that would break a Markdown table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def results_to_markdown(results: Mapping[str, Any]) -> str:
    """Return a Markdown heading and table: one row per config, one column per metric.

    Columns: config, every metric (in first-seen order), latency p50 and p95 in ms, mean chunks
    kept. In each metric column the best (highest) value is bold; configs that tie at the shown
    precision are all bold. Latency and chunk columns are not bolded (lower is not always better
    for chunks, and latency is reported, not ranked).

    Raises:
        ReportError: ``results`` does not have the documented shape.

    """
    configs = _configs(results)
    metrics = _metric_names(configs)
    cells: dict[str, list[str]] = {}
    for metric in metrics:
        values = {name: _value(config, "metrics", metric, name) for name, config in configs.items()}
        shown = {name: _format(value, _METRIC_DIGITS) for name, value in values.items()}
        present = [value for value in values.values() if value is not None]
        best = _format(max(present), _METRIC_DIGITS) if present else None
        cells[metric] = [f"**{text}**" if text == best else text for text in shown.values()]

    header = ["config", *metrics, "p50 ms", "p95 ms", "chunks kept"]
    lines = [_title(results, len(configs)), "", _row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    for index, (name, config) in enumerate(configs.items()):
        row = [_escape(name)]
        row += [cells[metric][index] for metric in metrics]
        row += [_format(_value(config, "latency_ms", key, name), _LATENCY_DIGITS) for key in ("p50", "p95")]
        row.append(_format(_value(config, "", "chunks_kept_mean", name), 2))
        lines.append(_row(row))
    return "\n".join(lines) + "\n"


def _title(results: Mapping[str, Any], num_configs: int) -> str:
    """Build the heading line: dataset, split and number of queries where known."""
    dataset = _escape(str(results.get("dataset", "unknown dataset")))
    details = [str(results[key]) for key in ("split",) if results.get(key) is not None]
    if results.get("num_queries") is not None:
        details.append(f"{results['num_queries']} queries")
    details.append(f"{num_configs} configs")
    return f"### Retrieval results: {dataset} ({', '.join(details)})"


def _row(cells: Sequence[str]) -> str:
    """Join cells into one Markdown table row."""
    return "| " + " | ".join(cells) + " |"


def plot_results(results: Mapping[str, Any], path: str | Path, metrics: Sequence[str] = PLOT_METRICS) -> Path:
    """Write a PNG with two panels: grouped quality bars per config, and latency p50/p95 per config.

    The left panel shows ``metrics`` (default nDCG@10, HitRate@5, MRR@10; names no config has
    are left out, and if none is present every metric found is shown); the right panel shows
    latency p50 and p95 in ms. The figure is drawn on matplotlib's Agg canvas directly, chosen
    inside this function, so no global backend is switched and no display is needed.

    Returns:
        The path written (parent folders are created).

    Raises:
        ReportError: ``results`` does not have the documented shape or the file cannot be written.

    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    configs = _configs(results)
    names = list(configs)
    shown = [m for m in metrics if any(m in c.get("metrics", {}) for c in configs.values())]
    shown = shown or _metric_names(configs)

    figure = Figure(figsize=(max(8.0, 2.2 * len(names) + 4.0), 4.8), layout="constrained")
    FigureCanvasAgg(figure)
    quality, latency = figure.subplots(1, 2, width_ratios=[3, 2])
    _grouped_bars(
        quality, names, {m: [_value(configs[n], "metrics", m, n) for n in names] for m in shown}, "%.3f"
    )
    quality.set_ylim(0, 1.1)
    quality.set_ylabel("score")
    quality.set_title("Retrieval quality")
    series = {
        f"{key} ms": [_value(configs[n], "latency_ms", key, n) for n in names] for key in ("p50", "p95")
    }
    _grouped_bars(latency, names, series, "%.1f")
    latency.set_ylabel("milliseconds")
    latency.set_title("Latency per query")
    figure.suptitle(_title(results, len(names)).removeprefix("### "))

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, format="png", dpi=100)
    except OSError as exc:
        raise ReportError(f"cannot write plot to {target}: {exc}") from exc
    logger.info("wrote plot %s", target)
    return target


def _grouped_bars(axes: Any, groups: list[str], series: Mapping[str, list[float | None]], fmt: str) -> None:
    """Draw one bar per series inside each group; missing values are left out."""
    if not series:
        axes.text(0.5, 0.5, "no data", ha="center", va="center", transform=axes.transAxes)
        axes.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
        return
    width = 0.8 / len(series)
    for index, (label, values) in enumerate(series.items()):
        positions = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        heights = [math.nan if v is None else v for v in values]
        bars = axes.bar(positions, heights, width=width, label=label)
        axes.bar_label(bars, fmt=fmt, fontsize=7, padding=1)
    axes.set_xticks(range(len(groups)), groups, rotation=20, ha="right")
    axes.legend(fontsize=8)
    axes.margins(y=0.15)
