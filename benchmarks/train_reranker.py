"""Fine-tune an offline cross-encoder reranker from the bundled all-MiniLM-L6-v2 weights.

Run (from the repo root)::

    python -m benchmarks.train_reranker --dataset scifact --split train --out ~/.cache/haygraph/reranker

No cross-encoder can be downloaded here, so this trains one: the bundled MiniLM encoder with a fresh
one-logit classification head, trained as a sentence-transformers `CrossEncoder` with binary
cross-entropy on CPU. Positives are the split's qrels; hard negatives are the top non-relevant documents
of our own hybrid retrieval (min-max fusion over BM25 and dense) for the same query. The mined pairs
and the training state are kept in ``OUT`` (``training_pairs.jsonl``, ``checkpoint.pt`` every
``--save-steps`` steps), so a rerun resumes where it stopped; the final model is saved to ``OUT``
itself, a directory that ``reranker.model`` (and ``haygraph eval --reranker OUT``) accepts. Only the
given split is read, never test; a dataset without that split, or a split without relevance judgments,
is a one-line error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import time
from dataclasses import replace
from pathlib import Path

from haygraph.eval.beir import BeirDataset, load_beir
from haygraph.eval.errors import DatasetError, EvalError
from haygraph.eval.harness import source_ranking
from haygraph.eval.index_prep import prepare_index, resolve_dataset, whole_document_config
from haygraph.retrieval.model_paths import bundled_model_path

logger = logging.getLogger(__name__)


def training_pairs(
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    corpus_text: dict[str, str],
    ranked: dict[str, list[str]],
    negatives: int,
    seed: int = 13,
) -> list[tuple[str, str, float]]:
    """(query, document, label) pairs: every judged positive, and `negatives` hard negatives per query.

    Hard negatives are the highest-ranked documents in `ranked[qid]` that are not judged relevant.
    Queries without a relevant judgment are skipped; the pairs are shuffled with `seed`.
    """
    pairs: list[tuple[str, str, float]] = []
    for qid, text in queries.items():
        relevant = {d for d, grade in qrels.get(qid, {}).items() if grade > 0}
        if not relevant:
            continue
        pairs.extend((text, corpus_text[d], 1.0) for d in sorted(relevant) if d in corpus_text)
        hard = [d for d in ranked.get(qid, []) if d not in relevant][:negatives]
        pairs.extend((text, corpus_text[d], 0.0) for d in hard)
    random.Random(seed).shuffle(pairs)
    return pairs


def mine(
    dataset_dir: Path, split: str, depth: int, store: str | None, max_queries: int | None = None
) -> tuple[BeirDataset, dict[str, list[str]]]:
    """Load `split` and rank its queries (the first `max_queries`) with hybrid min-max retrieval.

    Raises:
        DatasetError: the dataset has no such split, or the split has no relevance judgments.

    """
    data = load_beir(dataset_dir, split)
    if not data.qrels or not data.queries:
        raise DatasetError(f"split {split!r} of {dataset_dir} has no relevance judgments (qrels)")
    if max_queries is not None:
        data = replace(data, queries=dict(list(data.queries.items())[:max_queries]))
    config = whole_document_config()
    kb, _ = prepare_index(dataset_dir, config, store_dir=store, need_embeddings=True, progress=True)
    query = config.with_overrides(
        query={"mode": "hybrid", "fusion": {"method": "minmax"}, "cut": {"enabled": False}}
    ).query
    runner = kb.runner(query)
    ranked = {}
    for i, (qid, text) in enumerate(data.queries.items(), start=1):
        ranked[qid] = source_ranking(runner.run(text, top_k=depth))
        if i % 100 == 0:
            logger.info("mined %d/%d queries", i, len(data.queries))
    return data, ranked


def main(argv: list[str] | None = None) -> int:
    """Mine hard negatives, train, save; print a one-line error (exit 2) on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="BEIR folder or shared dataset name")
    parser.add_argument("--split", default="train", help="training split (never test); default train")
    parser.add_argument("--out", required=True, help="output model directory")
    parser.add_argument("--store", help="keep/reuse the dataset index here (for mining)")
    parser.add_argument("--negatives", type=int, default=4, help="hard negatives per query")
    parser.add_argument("--depth", type=int, default=20, help="retrieval depth for mining")
    parser.add_argument("--max-queries", type=int, help="use only the first N queries of the split")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--save-steps", type=int, default=50)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    out = Path(args.out).expanduser()
    try:
        if args.split == "test":
            raise EvalError("refusing to train on the test split; use train (or another tuning split)")
        pairs = _load_pairs(out / PAIRS_FILE)
        if pairs is None:
            dataset_dir = resolve_dataset(args.dataset)
            data, ranked = mine(dataset_dir, args.split, args.depth, args.store, args.max_queries)
            corpus_text = {d: (doc.content or "").strip() for d, doc in data.corpus.items()}
            pairs = training_pairs(data.queries, data.qrels, corpus_text, ranked, args.negatives)
            _save_pairs(out / PAIRS_FILE, pairs)
    except (DatasetError, EvalError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    logger.info("%d training pairs (%d positive)", len(pairs), sum(1 for p in pairs if p[2] > 0))
    train(pairs, out, args)
    return 0


PAIRS_FILE = "training_pairs.jsonl"
"""The mined pairs, kept next to the checkpoint so that a resumed run does not mine again."""


def _save_pairs(path: Path, pairs: list[tuple[str, str, float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for query, doc, label in pairs:
            fh.write(json.dumps({"query": query, "document": doc, "label": label}, ensure_ascii=False) + "\n")


def _load_pairs(path: Path) -> list[tuple[str, str, float]] | None:
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["query"], r["document"], float(r["label"])) for r in rows]


def train(pairs: list[tuple[str, str, float]], out: Path, args: argparse.Namespace) -> None:
    """Fine-tune the bundled MiniLM as a one-logit cross-encoder on `pairs`; save it to `out`.

    A plain PyTorch loop over sentence-transformers' `CrossEncoder` (its model, tokenizer and
    `save_pretrained`): `CrossEncoderTrainer` needs the `datasets` and `accelerate` packages, which are not
    dependencies of haygraph. Binary cross-entropy on the logit, AdamW, linear warm-up then decay. The
    state is checkpointed to ``OUT/checkpoint.pt`` every ``--save-steps`` steps; a rerun resumes there.
    """
    import torch
    from sentence_transformers.cross_encoder import CrossEncoder

    torch.manual_seed(13)
    model = CrossEncoder(bundled_model_path(), num_labels=1, max_length=args.max_length, device="cpu")
    net, tokenizer = model.model, model.tokenizer
    batches = [pairs[i : i + args.batch_size] for i in range(0, len(pairs), args.batch_size)]
    total = max(1, int(len(batches) * args.epochs))
    optimizer = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))
    )
    out.mkdir(parents=True, exist_ok=True)
    checkpoint = out / "checkpoint.pt"
    step = 0
    if checkpoint.is_file():
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        net.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = int(state["step"])
        logger.info("resuming from %s at step %d of %d", checkpoint, step, total)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    net.train()
    start = time.perf_counter()
    running = 0.0
    while step < total:
        batch = batches[step % len(batches)]
        features = tokenizer(
            [p[0] for p in batch],
            [p[1] for p in batch],
            padding=True,
            truncation="longest_first",
            max_length=args.max_length,
            return_tensors="pt",
        )
        labels = torch.tensor([p[2] for p in batch], dtype=torch.float32)
        logits = net(**features).logits.view(-1)
        loss = loss_fn(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        running += float(loss)
        if step % 10 == 0 or step == total:
            elapsed = time.perf_counter() - start
            logger.info("step %d/%d  loss %.4f  %.0f s", step, total, running / 10, elapsed)
            running = 0.0
        if step % args.save_steps == 0 and step < total:
            state = {"model": net.state_dict(), "optimizer": optimizer.state_dict()}
            state.update(scheduler=scheduler.state_dict(), step=step)
            torch.save(state, checkpoint)
    net.eval()
    model.save_pretrained(str(out))
    checkpoint.unlink(missing_ok=True)
    logger.info("saved the reranker to %s after %.0f s", out, time.perf_counter() - start)


if __name__ == "__main__":
    sys.exit(main())
