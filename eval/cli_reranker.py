"""The ``haygraph train-reranker`` sub-command (registered by ``adapters/cli/main.py``).

Registering imports nothing heavy: torch, sentence-transformers and `datasets` (the ``train`` extra) are
imported when the command runs. Bad input is raised as `EvalError` for the CLI's one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from haygraph.eval.errors import EvalError


def register(subparsers: Any) -> None:
    """Add the ``train-reranker`` sub-command to an argparse sub-parser collection."""
    p = subparsers.add_parser(
        "train-reranker",
        help="fine-tune an offline cross-encoder reranker from the bundled MiniLM on a BEIR train split",
    )
    p.add_argument(
        "--dataset", required=True, help="BEIR folder, or a dataset name in the shared datasets folder"
    )
    p.add_argument("--split", default="train", help="training split (default: train; test is refused)")
    p.add_argument(
        "--out", required=True, help="output model directory (rerun with the same --out to resume)"
    )
    p.add_argument("--store", help="keep/reuse the dataset's index here (for mining hard negatives)")
    p.add_argument("--epochs", type=float, default=1.0, help="passes over the training pairs (default: 1)")
    p.add_argument("--negatives", type=int, default=6, help="hard negatives per query (default: 6)")
    p.add_argument("--depth", type=int, default=30, help="retrieval depth for mining negatives (default: 30)")
    p.add_argument(
        "--dev-fraction",
        type=float,
        default=0.1,
        help="share of the split's queries held out to pick the checkpoint and the blend (default: 0.1)",
    )
    p.add_argument("--batch-size", type=int, default=16, help="pairs per step (default: 16)")
    p.add_argument("--learning-rate", type=float, default=5e-5, help="peak learning rate (default: 5e-5)")
    p.add_argument(
        "--max-length", type=int, default=256, help="tokens per query+document pair (default: 256)"
    )
    p.add_argument("--eval-steps", type=int, default=100, help="steps between dev evaluations/checkpoints")
    p.add_argument("--max-queries", type=int, help="train on the first N queries only (smoke runs)")
    p.add_argument(
        "--max-minutes",
        type=float,
        help="stop training after N minutes (evaluating and checkpointing first); the best checkpoint wins",
    )
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's choice)")
    p.add_argument("--seed", type=int, default=13, help="seed of the dev split, pair order and trainer")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.set_defaults(func=cmd_train_reranker)


def cmd_train_reranker(args: argparse.Namespace) -> int:
    """Handle ``haygraph train-reranker``: mine, train, blend; print the model folder and dev figures."""
    from haygraph.eval.index_prep import resolve_dataset

    dataset_dir = resolve_dataset(args.dataset)
    settings = _settings(args)
    _check_train_extra()
    from haygraph.eval.reranker_training import train_reranker

    def stage(text: str) -> None:
        sys.stderr.write(f"train-reranker: {text}\n")
        sys.stderr.flush()

    summary = train_reranker(
        dataset_dir,
        Path(args.out).expanduser(),
        settings,
        store_dir=args.store,
        progress=not args.no_progress,
        on_stage=stage,
    )
    dev = summary.get("dev_ndcg@10") or {}
    figures = "  ".join(f"{k} {v:.4f}" for k, v in dev.items())
    sys.stdout.write(
        f"{args.out}: retrieval_weight {summary['retrieval_weight']}"
        + (f"  dev nDCG@10: {figures}" if figures else "")
        + "\n"
    )
    return 0


def _settings(args: argparse.Namespace) -> Any:
    from haygraph.eval.reranker_training import TrainSettings, check_settings

    settings = TrainSettings(
        split=args.split,
        negatives=args.negatives,
        depth=args.depth,
        dev_fraction=args.dev_fraction,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        max_length=args.max_length,
        eval_steps=args.eval_steps,
        max_queries=args.max_queries,
        max_minutes=args.max_minutes,
        seed=args.seed,
        threads=args.threads,
    )
    check_settings(settings)
    return settings


def _check_train_extra() -> None:
    """Raise `EvalError` with the install command when the ``train`` extra is missing."""
    import importlib.util

    missing = [m for m in ("datasets", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise EvalError(
            f"train-reranker needs {' and '.join(missing)} (sentence-transformers' CrossEncoderTrainer): "
            "pip install 'haygraph[train]'"
        )
