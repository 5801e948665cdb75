"""Generate ``benchmarks/RESULTS.md``: the harness on every shared dataset beside the published references.

Run ``python -m benchmarks.results_page`` (add ``--stores-root DIR`` to keep and reuse the indexes). For
SciFact the hybrid weights and the cut are first tuned on ``scifact/train`` and the tuned configs are
then reported once on test. Reference numbers are parsed from the datasets' README files, not typed in.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from haygraph.eval.harness import run_harness
from haygraph.eval.index_prep import datasets_root
from haygraph.eval.tuning import run_tuning, tuned_from_dict

logger = logging.getLogger(__name__)

DATASETS: tuple[str, ...] = ("scifact", "cmrc2018", "cranfield", "cisi", "cacm", "med")
TUNED_ON = {"scifact": "train"}
COLUMNS: tuple[str, ...] = ("nDCG@10", "HitRate@5", "MRR@10", "Recall@100", "MAP@100")
_REFERENCE_COLUMNS = {"hit@5": "HitRate@5", "MRR@10": "MRR@10", "nDCG@10": "nDCG@10", "R@10": "Recall@10",
                      "R@100": "Recall@100", "MAP": "MAP"}  # fmt: skip
COMMAND = "python -m benchmarks.results_page --stores-root /tmp/evalstores --json-dir /tmp/eval-results"


def _cells(line: str) -> list[str]:
    """Split one Markdown table row into stripped cells."""
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_reference_table(text: str) -> dict[str, dict[str, float]]:
    """Parse the stdlib BM25 reference table of the datasets README: name -> {metric -> value}.

    The table is the one whose header starts with ``| name | hit@5``; column names map to ours
    (``hit@5`` -> ``HitRate@5``, ``R@100`` -> ``Recall@100``; ``MAP`` stays uncut MAP).
    """
    rows: dict[str, dict[str, float]] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.strip().startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if cells[:2] == ["name", "hit@5"]:
            header = cells
        elif header is not None and not set(cells[0]) <= set("-: "):
            rows[cells[0]] = {
                _REFERENCE_COLUMNS.get(col, col): float(value)
                for col, value in zip(header[1:], cells[1:], strict=False)
                if re.fullmatch(r"\d+(\.\d+)?", value)
            }
    return rows


def parse_scifact_baselines(text: str) -> dict[str, float]:
    """Parse the published baselines table of the SciFact README: system -> nDCG@10."""
    found: dict[str, float] = {}
    in_table = False
    for line in text.splitlines():
        if line.strip().startswith("| system | nDCG@10"):
            in_table = True
            continue
        if in_table and not line.strip().startswith("|"):
            break
        if in_table:
            cells = _cells(line)
            if len(cells) > 1 and re.fullmatch(r"\d+\.\d+", cells[1]):
                found[cells[0]] = float(cells[1])
    return found


def best_hybrid(results: Mapping[str, Any]) -> tuple[str, float] | None:
    """Return the uncut hybrid config with the highest nDCG@10 (None when none ran)."""
    scores = [
        (name, float(cfg["metrics"]["nDCG@10"]))
        for name, cfg in results["configs"].items()
        if name.startswith("hybrid") and not name.endswith("+cut") and "nDCG@10" in cfg.get("metrics", {})
    ]
    return max(scores, key=lambda item: item[1]) if scores else None


def verdict(results: Mapping[str, Any]) -> str:
    """One sentence: is the best hybrid at least as good as ``bm25`` on nDCG@10, and if not, why."""
    configs = results["configs"]
    best = best_hybrid(results)
    if best is None or "nDCG@10" not in configs.get("bm25", {}).get("metrics", {}):
        return "No comparison: bm25 or every hybrid config is missing."
    bm25 = configs["bm25"]["metrics"]["nDCG@10"]
    name, score = best
    if score >= bm25:
        return f"Yes: best hybrid `{name}` {score:.4f} ≥ `bm25` {bm25:.4f} (nDCG@10, {score - bm25:+.4f})."
    dense = configs.get("dense", {}).get("metrics", {}).get("nDCG@10")
    reason = ""
    if dense is not None:
        reason = (
            f" Dense retrieval alone scores {dense:.4f}, {bm25 - dense:.4f} below BM25, so fusing it in "
            "pulls in dense-only candidates that push BM25's relevant documents down; the untuned "
            "preset weights (0.5/0.5) give it too much say on this collection."
        )
    return f"No: best hybrid `{name}` {score:.4f} < `bm25` {bm25:.4f} (nDCG@10, {score - bm25:+.4f}).{reason}"


def _fmt(value: Any, digits: int = 4) -> str:
    """Fixed-point text, or a dash."""
    return "–" if value is None else f"{float(value):.{digits}f}"


def dataset_section(
    results: Mapping[str, Any], reference: Mapping[str, float] | None, extra: Sequence[str]
) -> str:
    """Markdown for one dataset: results table, reference rows, kept-set comparison and verdict."""
    head = ["config", *COLUMNS, "p50 ms", "p95 ms", "chunks kept", "kept P / R", "fixed top-5 P / R"]
    lines = [
        f"## {results['dataset']} ({results['split']}, {results['num_queries']} queries, "
        f"{results['index']['documents']} documents)",
        "",
        "| " + " | ".join(head) + " |",
        "|---" + "|---:" * (len(head) - 1) + "|",
    ]
    for name, cfg in results["configs"].items():
        if cfg.get("skipped"):
            lines.append(f"| {name} | skipped: {cfg['skipped']} |" + " |" * (len(head) - 2))
            continue
        metrics, latency = cfg["metrics"], cfg.get("latency_ms") or {}
        kept, fixed = cfg.get("kept_set"), cfg.get("fixed_top5")
        row = [
            name,
            *(_fmt(metrics.get(m)) for m in COLUMNS),
            _fmt(latency.get("p50"), 1),
            _fmt(latency.get("p95"), 1),
        ]
        row.append(_fmt(cfg.get("chunks_kept_mean"), 2))
        row.append(f"{kept['precision']:.3f} / {kept['recall']:.3f}" if kept else "–")
        row.append(f"{fixed['precision']:.3f} / {fixed['recall']:.3f}" if fixed else "–")
        lines.append("| " + " | ".join(row) + " |")
    if reference:
        values = {**reference, "MAP@100": reference.get("MAP@100", reference.get("MAP"))}
        ref = ["reference BM25 (stdlib, README)¹", *(_fmt(values.get(m)) for m in COLUMNS)]
        lines.append("| " + " | ".join(ref) + " |" + " – |" * (len(head) - len(ref)))
    lines += ["", *extra, f"**Best hybrid vs bm25:** {verdict(results)}", ""]
    return "\n".join(lines)


def acceptance(all_results: Mapping[str, Mapping[str, Any]], scifact_refs: Mapping[str, float]) -> list[str]:
    """Markdown bullet lines checking the issue's acceptance figures against the measured ones."""
    lines = []
    sci = all_results.get("scifact")
    if sci is not None:
        metrics = {n: c.get("metrics", {}).get("nDCG@10") for n, c in sci["configs"].items()}
        anserini = next((v for k, v in scifact_refs.items() if "Anserini" in k), 0.6789)
        minilm = next((v for k, v in scifact_refs.items() if "MiniLM" in k), 0.645)
        checks = [
            ("`bm25` nDCG@10 within 0.015 of Anserini", metrics.get("bm25"), anserini, 0.015),
            ("`dense` nDCG@10 within 0.01 of MiniLM (MTEB)", metrics.get("dense"), minilm, 0.01),
        ]
        for label, value, target, tol in checks:
            ok = value is not None and abs(value - target) <= tol
            lines.append(f"- SciFact {label} {target}: {_fmt(value)} — {'pass' if ok else 'FAIL'}")
        best = best_hybrid(sci)
        if best is not None:
            lines.append(
                f"- SciFact best hybrid ≥ 0.72: `{best[0]}` {best[1]:.4f} — "
                f"{'pass' if best[1] >= 0.72 else 'FAIL'}"
            )
    for name, results in all_results.items():
        lines.extend(default_check(name, results))
    cmrc = all_results.get("cmrc2018")
    if cmrc is not None:
        hit = cmrc["configs"].get("bm25", {}).get("metrics", {}).get("HitRate@5")
        ok = hit is not None and hit >= 0.99
        lines.append(f"- cmrc2018 `bm25` HitRate@5 ≥ 0.99: {_fmt(hit)} — {'pass' if ok else 'FAIL'}")
    return lines


def default_check(name: str, results: Mapping[str, Any]) -> list[str]:
    """The issue-14 check for one dataset: `default` nDCG@10 ≥ max(`bm25`, `dense`) − 0.005 (or nothing)."""
    scores = {n: c.get("metrics", {}).get("nDCG@10") for n, c in results["configs"].items()}
    default, singles = scores.get("default"), [scores.get("bm25"), scores.get("dense")]
    if default is None or any(v is None for v in singles):
        return []
    best = max(float(v) for v in singles if v is not None)
    ok = default >= best - 0.005
    return [
        f"- {name} `default` nDCG@10 ≥ max(`bm25`, `dense`) − 0.005: {default:.4f} vs {best:.4f} — "
        f"{'pass' if ok else 'FAIL'}"
    ]


def build_page(
    datasets: Sequence[str] = DATASETS,
    *,
    stores_root: str | Path | None = None,
    progress: bool = False,
    on_dataset: Callable[[str, dict[str, Any]], None] | None = None,
    saved: Mapping[str, dict[str, Any]] | None = None,
    configs: str | None = None,
    reranker: str | None = None,
    tune: bool = True,
    command: str = COMMAND,
) -> tuple[str, dict[str, dict[str, Any]]]:
    """Run the harness (and SciFact tuning) on ``datasets``; return (Markdown page, results per dataset).

    ``saved`` maps dataset names to results of an earlier run (the ``--json-dir`` files); those
    datasets are shown from them instead of being run again. ``configs`` (comma-separated names; default
    all) and ``reranker`` (a cross-encoder directory for the ``+rerank`` configs) go to the harness;
    without ``tune`` SciFact is not tuned (no ``hybrid-tuned`` rows). ``command`` is the regeneration
    command shown on the page.
    """
    root = datasets_root()
    references = parse_reference_table(_read(root / "README.md"))
    scifact_refs = parse_scifact_baselines(_read(root / "scifact" / "README.md"))
    sections, all_results = [], {}
    for name in datasets:
        store = Path(stores_root) / name if stores_root else None
        extra: list[str] = []
        tuned = None
        if saved and name in saved:
            results = saved[name]
            if results.get("tuning"):
                extra.append(_tuning_note(results["tuning"]))
        elif name in TUNED_ON and tune:
            tuning = run_tuning(name, split=TUNED_ON[name], store_dir=store, progress=progress)
            tuned = tuned_from_dict(tuning)
            extra.append(_tuning_note(tuning))
        if not (saved and name in saved):
            names = configs
            if names is not None and tuned is not None:
                names = f"{names},hybrid-tuned,hybrid-tuned+cut"
            results = run_harness(
                name, store_dir=store, tuned=tuned, progress=progress, configs=names, reranker_model=reranker
            )
        if tuned is not None:
            results["tuning"] = {k: v for k, v in tuning.items() if k != "grid"}
        if name == "scifact" and scifact_refs:
            extra.append(
                "Published SciFact baselines (nDCG@10, from `scifact/README.md`): "
                + "; ".join(f"{k} **{v}**" for k, v in scifact_refs.items())
                + "."
            )
        all_results[name] = results
        sections.append(dataset_section(results, references.get(name), extra))
        if on_dataset is not None:
            on_dataset(name, results)
    missing = [name for name in DATASETS if name not in all_results]
    return _page(sections, acceptance(all_results, scifact_refs), missing, command), all_results


def _tuning_note(tuning: Mapping[str, Any]) -> str:
    """One paragraph saying what was tuned on which split and what was chosen."""
    fusion, cut = tuning["fusion"], tuning["cut"]
    return (
        f"Tuned on `{tuning['dataset']}/{tuning['split']}` ({tuning['num_queries']} queries; never on test): "
        f"fusion `{fusion['method']}` with weights (bm25, dense) = {tuple(fusion['weights'])} "
        f"(train nDCG@10 {fusion['value']:.4f}); cut drop_ratio {cut['drop_ratio']}, max_keep "
        f"{cut['max_keep']} (objective: {cut['objective']}, train {cut['value']:.4f} with "
        f"{cut['chunks_mean']:.2f} chunks kept on average)."
    )


def _page(
    sections: Sequence[str], checks: Sequence[str], missing: Sequence[str] = (), command: str = COMMAND
) -> str:
    """Assemble the whole page; ``missing`` datasets are named as not generated yet."""
    if missing:
        checks = [
            *checks,
            f"- Not generated in this run: {', '.join(missing)} (rerun the command above with them).",
        ]
    intro = f"""# Retrieval evaluation results

Generated by the evaluation harness — do not edit by hand. Regenerate with:

```
{command}
```

(`--stores-root` keeps/reuses one index per dataset; without it the indexes live in memory. Document
embeddings come from the on-disk cache keyed by model + text.) One dataset at a time:
`haygraph eval --dataset scifact --out scifact.json --markdown scifact.md --plot scifact.png`.

Every configuration runs on the same index (whole documents, one chunk per document, bundled
all-MiniLM-L6-v2 embeddings, bm25s BM25 lucene k1=1.2 b=0.75 with stemming + stop words, jieba for
Chinese). Uncut configs return a fixed top-100 (hybrid: top-100 from each retriever, fused). `+cut`
configs end with the score-cliff cut (drop_ratio 0.5, max_keep 5 unless tuned); their metrics are
computed on what the cut passes on, so their nDCG@10 / Recall@100 are bounded by at most 5 documents.
"kept P / R" is the precision / recall of the documents the cut keeps, "fixed top-5 P / R" that of a
fixed top-5 of the same config without the cut. Latency is per query, in-process, excluding the query
embedding (queries are embedded in one batch first), on a shared 2-core machine. `default` is the
shipped query configuration (weighted RRF, language-aware: the bundled
English-only embedder gets no say on Chinese text), uncut; `default+cut` adds the shipped cut, which
runs on the calibrated relevance. The `+rerank` configs need a cross-encoder: `--reranker DIR` (one
trained by `haygraph train-reranker`); without one they are reported as skipped.

¹ The reference row is the stdlib BM25 of `shared/datasets/README.md` (no stemming, k1=0.9, b=0.4;
its MAP column is uncut MAP, shown under MAP@100).

## Acceptance checks

"""
    if not checks:
        checks = ["- (no dataset with an acceptance figure was run)"]
    return intro + "\n".join(checks) + "\n\n" + "\n".join(sections)


def _read(path: Path) -> str:
    """Read a README, or return "" (with a warning) when it is missing."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        logger.warning("cannot read %s: %s", path, exc)
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: write ``benchmarks/RESULTS.md`` (and optionally the JSON results)."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.results_page", description=__doc__)
    parser.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated dataset names")
    parser.add_argument("--stores-root", help="keep/reuse one index per dataset under this folder")
    parser.add_argument("--out", default=str(Path(__file__).with_name("RESULTS.md")), help="page to write")
    parser.add_argument("--json-dir", help="also write <dataset>.json results here")
    parser.add_argument(
        "--reuse-json",
        action="store_true",
        help="show datasets whose <dataset>.json exists in --json-dir from it",
    )
    parser.add_argument("--configs", help="comma-separated config names (default: all)")
    parser.add_argument("--reranker", help="cross-encoder directory for the +rerank configs")
    parser.add_argument("--no-tune", action="store_true", help="skip the SciFact tuning (hybrid-tuned)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]

    def report(name: str, results: dict[str, Any]) -> None:
        sys.stdout.write(f"{name}: done ({results['num_queries']} queries)\n")
        if args.json_dir:
            target = Path(args.json_dir) / f"{name}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    saved = {}
    if args.reuse_json and args.json_dir:
        for name in names:
            file = Path(args.json_dir) / f"{name}.json"
            if file.is_file():
                saved[name] = json.loads(file.read_text(encoding="utf-8"))
    page, _ = build_page(
        names,
        stores_root=args.stores_root,
        progress=not args.no_progress,
        on_dataset=report,
        saved=saved,
        configs=args.configs,
        reranker=args.reranker,
        tune=not args.no_tune,
        command=" ".join(
            ["python -m benchmarks.results_page", *(argv if argv is not None else sys.argv[1:])]
        ),
    )
    Path(args.out).write_text(page, encoding="utf-8")
    sys.stdout.write(f"wrote {args.out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
