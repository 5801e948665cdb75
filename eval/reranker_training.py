"""`haygraph train-reranker`: fine-tune an offline cross-encoder from the bundled all-MiniLM-L6-v2 weights.

No cross-encoder can be downloaded here, so one is trained: the bundled MiniLM encoder with a fresh
one-logit head, as a sentence-transformers `CrossEncoder` trained by its `CrossEncoderTrainer`
(binary cross-entropy, AdamW with linear warm-up and decay, on CPU). Steps:

1. **Mine** (`haygraph.eval.reranker_data`): the split's positives, and hard negatives from our own
   hybrid retrieval; a seeded fraction of the split's queries is held out as a dev set (never test).
2. **Train**, evaluating on the dev queries' retrieved candidates (`CrossEncoderRerankingEvaluator`,
   nDCG@10) every ``eval_steps``; the best checkpoint is kept.
3. **Blend**: on the same dev queries, choose the weight of the retrieval score in
   ``w * fused + (1 - w) * reranker`` (both min-max normalized over the reranked candidates) that
   maximizes nDCG@10, and record it in ``OUT/haygraph_reranker.json``; ``reranker.retrieval_weight``
   uses it unless set.

Everything a rerun needs is in ``OUT/work`` (mined pairs, dev candidates, trainer checkpoints), so an
interrupted run continues where it stopped; a finished run is not repeated. ``OUT`` itself becomes the
model directory that ``reranker.model`` and ``haygraph eval --reranker OUT`` accept.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from haygraph.eval.errors import EvalError
from haygraph.eval.reranker_blend import BLEND_FILE, DevQuery, tune_blend
from haygraph.eval.reranker_data import (
    Pair,
    load_training_split,
    mine_candidates,
    split_dev,
    training_pairs,
)

logger = logging.getLogger(__name__)

WORK_DIR = "work"
"""Subfolder of ``--out`` holding the resumable state (pairs, dev candidates, checkpoints)."""
PAIRS_FILE = "pairs.jsonl"
DEV_FILE = "dev.json"
RUN_FILE = "run.json"
"""The settings the mined data belongs to: a rerun with other data settings mines again."""


@dataclass(frozen=True)
class TrainSettings:
    """Settings of one training run (the ``train-reranker`` flags).

    Attributes:
        split: the training split (never ``test``).
        negatives: hard negatives per query.
        depth: retrieval depth for mining (negatives are the top non-relevant ones of this list).
        dev_fraction: share of the split's queries held out to choose the checkpoint and the blend.
        rerank_depth: candidates reranked per dev query (the pipeline's ``reranker.top_k_in``).
        epochs: passes over the training pairs.
        batch_size: pairs per step.
        learning_rate: peak AdamW learning rate.
        max_length: tokens per (query, document) pair.
        eval_steps: steps between dev evaluations (and checkpoints).
        max_queries: use only the first N queries of the split (smoke runs).
        max_minutes: stop training after this many minutes of this run (evaluating and saving first);
            the best checkpoint so far is used. None: no limit.
        seed: seed for the dev split, the pair order and the trainer.
        threads: torch CPU threads (None: torch's default).

    """

    split: str = "train"
    negatives: int = 6
    depth: int = 30
    dev_fraction: float = 0.1
    rerank_depth: int = 10
    epochs: float = 1.0
    batch_size: int = 16
    learning_rate: float = 5e-5
    max_length: int = 256
    eval_steps: int = 100
    max_queries: int | None = None
    max_minutes: float | None = None
    seed: int = 13
    threads: int | None = None

    def data_key(self) -> dict[str, Any]:
        """The settings the mined data depends on."""
        keys = ("split", "negatives", "depth", "dev_fraction", "rerank_depth", "max_queries", "seed")
        return {k: getattr(self, k) for k in keys}


def check_settings(settings: TrainSettings) -> None:
    """Raise `EvalError` naming the flag for a setting out of range."""
    checks = [
        ("--negatives", settings.negatives >= 1, settings.negatives, ">= 1"),
        ("--depth", settings.depth > settings.negatives, settings.depth, "> --negatives"),
        ("--dev-fraction", 0 <= settings.dev_fraction <= 0.5, settings.dev_fraction, "in [0, 0.5]"),
        ("--epochs", settings.epochs > 0, settings.epochs, "> 0"),
        ("--batch-size", settings.batch_size >= 1, settings.batch_size, ">= 1"),
        ("--learning-rate", 0 < settings.learning_rate < 1, settings.learning_rate, "in (0, 1)"),
        ("--max-length", 16 <= settings.max_length <= 512, settings.max_length, "in [16, 512]"),
        ("--eval-steps", settings.eval_steps >= 1, settings.eval_steps, ">= 1"),
        ("--threads", settings.threads is None or settings.threads >= 1, settings.threads, ">= 1"),
    ]
    if settings.max_minutes is not None:
        checks.append(("--max-minutes", settings.max_minutes > 0, settings.max_minutes, "> 0"))
    if settings.max_queries is not None:
        checks.append(("--max-queries", settings.max_queries >= 2, settings.max_queries, ">= 2"))
    for flag, ok, value, rule in checks:
        if not ok:
            raise EvalError(f"{flag} must be {rule}, but got {value}")


def check_output_dir(out: Path) -> None:
    """Raise `EvalError` when ``--out`` cannot hold the model: a file, or a foreign non-empty folder."""
    if out.exists() and not out.is_dir():
        raise EvalError(f"--out {out} is a file; give a directory (new or empty) for the model")
    if (
        out.is_dir()
        and any(out.iterdir())
        and not (out / WORK_DIR).is_dir()
        and not (out / BLEND_FILE).is_file()
    ):
        raise EvalError(
            f"--out {out} is a non-empty directory that holds no train-reranker run; "
            "give a new or empty directory (or the --out of an earlier run to resume it)"
        )


def train_reranker(
    dataset_dir: Path,
    out: Path,
    settings: TrainSettings,
    *,
    store_dir: str | Path | None = None,
    progress: bool = False,
    on_stage: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Mine, train and blend (see the module docstring); returns the summary also written to the blend file.

    Raises:
        EvalError: bad settings or ``out`` (named by flag), a test split, a dataset without the split, a
            split without judgments (`DatasetError`).

    """
    stage = on_stage or (lambda text: logger.info("%s", text))
    check_settings(settings)
    check_output_dir(out)
    data = load_training_split(dataset_dir, settings.split)  # read before writing anything
    if (out / BLEND_FILE).is_file() and not (out / WORK_DIR / RUN_FILE).is_file():
        stage(f"{out} already holds a trained reranker; nothing to do")
        return dict(json.loads((out / BLEND_FILE).read_text(encoding="utf-8")))
    work = out / WORK_DIR
    work.mkdir(parents=True, exist_ok=True)
    pairs, dev = _mined(data, dataset_dir, work, settings, store_dir, progress, stage)
    start = time.perf_counter()
    _set_threads(settings.threads)
    stage(
        f"training on {len(pairs)} pairs ({sum(p.label > 0 for p in pairs)} positive), {len(dev)} dev queries"
    )
    model, dev_scores = _train(pairs, dev, out, work, settings, progress)
    stage(f"trained in {time.perf_counter() - start:.0f} s; choosing the retrieval blend on the dev queries")
    summary: dict[str, Any] = tune_blend(model, dev, batch_size=32) if dev else {"retrieval_weight": 0.0}
    summary.update(
        dataset=data.name,
        split=settings.split,
        train_queries=len({p.query for p in pairs}),
        dev_queries=len(dev),
        pairs=len(pairs),
        train_seconds=round(time.perf_counter() - start, 1),
        dev_checkpoint_scores=dev_scores,
        settings=asdict(settings),
    )
    model.save_pretrained(str(out))
    (out / BLEND_FILE).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    shutil.rmtree(work / "checkpoints", ignore_errors=True)
    (work / RUN_FILE).unlink(missing_ok=True)
    stage(f"saved the reranker to {out}")
    return summary


def _mined(
    data: Any,
    dataset_dir: Path,
    work: Path,
    settings: TrainSettings,
    store_dir: str | Path | None,
    progress: bool,
    stage: Callable[[str], None],
) -> tuple[list[Pair], list[DevQuery]]:
    """Mined pairs and dev queries: from ``work`` when mined with the same settings, else mined now."""
    run_file = work / RUN_FILE
    if (
        run_file.is_file()
        and json.loads(run_file.read_text(encoding="utf-8")).get("data") == settings.data_key()
    ):
        pairs = [Pair(**json.loads(line)) for line in (work / PAIRS_FILE).read_text("utf-8").splitlines()]
        dev = [DevQuery.from_dict(d) for d in json.loads((work / DEV_FILE).read_text("utf-8"))]
        stage(f"resuming: {len(pairs)} mined pairs and {len(dev)} dev queries from {work}")
        return pairs, dev
    shutil.rmtree(work / "checkpoints", ignore_errors=True)  # other data: earlier checkpoints do not apply
    queries = dict(list(data.queries.items())[: settings.max_queries])
    train_ids, dev_ids = split_dev(list(queries), settings.dev_fraction, settings.seed)
    stage(f"mining hard negatives for {len(queries)} {data.name}/{settings.split} queries")
    start = time.perf_counter()
    candidates = mine_candidates(dataset_dir, queries, settings.depth, store_dir=store_dir, progress=progress)
    stage(f"mined in {time.perf_counter() - start:.1f} s ({len(dev_ids)} queries held out as dev)")
    corpus = {d: (doc.content or "").strip() for d, doc in data.corpus.items()}
    pairs = training_pairs(
        {q: queries[q] for q in train_ids}, data.qrels, corpus, candidates, settings.negatives, settings.seed
    )
    dev = [
        DevQuery.build(queries[q], data.qrels[q], candidates[q][: settings.rerank_depth], corpus)
        for q in dev_ids
    ]
    with (work / PAIRS_FILE).open("w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(asdict(p), ensure_ascii=False) + "\n" for p in pairs)
    (work / DEV_FILE).write_text(json.dumps([d.to_dict() for d in dev], ensure_ascii=False), "utf-8")
    run_file.write_text(json.dumps({"data": settings.data_key()}), encoding="utf-8")
    return pairs, dev


def _set_threads(threads: int | None) -> None:
    if threads is not None:
        import torch

        torch.set_num_threads(threads)


def _time_budget(minutes: float) -> Any:
    """A `TrainerCallback` that ends training (evaluating and saving that step) after ``minutes``."""
    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):  # type: ignore[misc]
        def __init__(self) -> None:
            self.start = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if time.monotonic() - self.start > minutes * 60 and not control.should_training_stop:
                logger.warning(
                    "time budget of %s min reached at step %d: stopping", minutes, state.global_step
                )
                control.should_training_stop = True
                control.should_evaluate = args.eval_strategy != "no"
                control.should_save = True
            return control

    return TimeBudget()


def _train(
    pairs: list[Pair], dev: list[DevQuery], out: Path, work: Path, settings: TrainSettings, progress: bool
) -> tuple[Any, dict[str, float]]:
    """Train with `CrossEncoderTrainer`, resuming from the last checkpoint in ``work``; return the best."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import (
        CrossEncoder,
        CrossEncoderTrainer,
        CrossEncoderTrainingArguments,
    )
    from sentence_transformers.cross_encoder.evaluation import CrossEncoderRerankingEvaluator
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers.trainer_utils import get_last_checkpoint

    from haygraph.retrieval.model_paths import bundled_model_path

    model = CrossEncoder(bundled_model_path(), num_labels=1, max_length=settings.max_length, device="cpu")
    train_set = Dataset.from_dict(
        {
            "query": [p.query for p in pairs],
            "document": [p.document for p in pairs],
            "label": [p.label for p in pairs],
        }
    )
    evaluator = None
    if dev:
        samples: list[dict[str, str | list[str]]] = [
            {"query": d.query, "positive": list(d.positives), "documents": list(d.documents)} for d in dev
        ]
        evaluator = CrossEncoderRerankingEvaluator(
            samples, at_k=10, always_rerank_positives=False, name="dev", batch_size=32, write_csv=False
        )
    checkpoints = work / "checkpoints"
    args = CrossEncoderTrainingArguments(
        output_dir=str(checkpoints),
        num_train_epochs=settings.epochs,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        warmup_steps=0.1,
        weight_decay=0.01,
        seed=settings.seed,
        use_cpu=True,
        eval_strategy="steps" if dev else "no",
        eval_steps=settings.eval_steps,
        save_strategy="steps",
        save_steps=settings.eval_steps,
        save_total_limit=2,
        load_best_model_at_end=bool(dev),
        metric_for_best_model="eval_dev_ndcg@10" if dev else None,
        greater_is_better=True,
        logging_steps=max(1, settings.eval_steps // 4),
        report_to="none",
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )
    trainer = CrossEncoderTrainer(
        model=model,
        args=args,
        train_dataset=train_set,
        loss=BinaryCrossEntropyLoss(model),
        evaluator=evaluator,
        callbacks=[_time_budget(settings.max_minutes)] if settings.max_minutes else None,
    )
    last = get_last_checkpoint(str(checkpoints)) if checkpoints.is_dir() else None
    if last:
        logger.info("resuming training from %s", last)
    trainer.train(resume_from_checkpoint=last)
    scores = {
        str(entry["step"]): round(float(entry["eval_dev_ndcg@10"]), 4)
        for entry in trainer.state.log_history
        if "eval_dev_ndcg@10" in entry
    }
    return trainer.model, scores
