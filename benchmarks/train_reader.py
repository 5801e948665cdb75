"""Train the extractive reader: the bundled multilingual-e5-small fine-tuned for SQuAD 2.0-style QA.

    python -m benchmarks.train_reader --data DIR --out DIR [--layers 8] [--train-from 0] ...

What it does, end to end (the shipped weights are reproduced by the command in the model card,
``retrieval/reader/MODEL_CARD.md``):

1. Reads span-QA examples (JSONL, one object per line: ``id, source, lang, title, context,
   question, answers: [{text, start}], is_impossible``) from the files given, as built by
   `benchmarks.reader_data`.
2. Cuts each (question, context) into the reader's windows (`haygraph.retrieval.reader.tokens`, the
   same code the runtime reads with) and labels each window with the answer's first and last token, or
   with position 0 ("no answer") when the example has none or the window does not hold it whole.
3. Builds the model: the packed e5 weights rebuilt as a PyTorch BERT (`haygraph.retrieval.e5_torch`)
   cut to its first `--layers` layers, plus a linear head (384 -> 2: start and end logits). The
   word-embedding table stays frozen (it is the bundled table the runtime reads); layers below
   `--train-from` are frozen too.
4. Trains with AdamW, linear warm-up and decay, cross-entropy on start and end, bfloat16 autocast on
   the CPU (fp32 master weights), batches of windows of similar length (little padding). Every
   `--checkpoint-minutes` it writes a checkpoint atomically; `--resume` continues from it bit for bit
   (same order of batches), so a killed run loses at most that much work.
5. Exports the trained layers and head as ONNX (input: word embeddings and the attention mask;
   outputs: start and end logits) and quantises its MatMuls to dynamic int8 (per channel), as the
   project's other ONNX encoders are (`haygraph.retrieval.onnx_encoder.export_model`).

Progress (examples/s, loss, ETA) is logged; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.e5_vocabulary import E5Vocabulary
from haygraph.retrieval.reader.tokens import Window

logger = logging.getLogger("train_reader")

MAX_NEGATIVE_WINDOWS = 1
"""Most no-answer windows kept per example (see `featurize`)."""


@dataclass
class Example:
    """One span-QA example (the JSONL row)."""

    id: str
    lang: str
    context: str
    question: str
    answers: list[tuple[str, int]]
    impossible: bool
    source: str = ""


def read_examples(paths: Sequence[Path]) -> list[Example]:
    """Every example of the JSONL files `paths` (answers checked against their context)."""
    out: list[Example] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            answers = [(str(a["text"]), int(a["start"])) for a in row.get("answers") or []]
            context = str(row["context"])
            for text, start in answers:
                if context[start : start + len(text)] != text:
                    raise ValueError(f"{path}: example {row['id']}: answer {text!r} is not at {start}")
            impossible = bool(row.get("is_impossible")) or not answers
            out.append(
                Example(
                    str(row["id"]), str(row.get("lang", "")), context, str(row["question"]),
                    answers, impossible, str(row.get("source", path.stem)),
                )
            )  # fmt: skip
    return out


def label(window: Window, answer: tuple[str, int] | None) -> tuple[int, int]:
    """Row positions of the answer's first and last token in `window`; (0, 0) when it is not whole there."""
    if answer is None:
        return 0, 0
    raw, a = answer
    text = raw.strip()
    a += len(raw) - len(raw.lstrip())
    b = a + len(text)
    first = last = -1
    for k, (s, e) in enumerate(window.offsets):
        if e <= s:
            continue
        if first < 0 and s <= a < e:
            first = k
        elif first < 0 and s > a:
            first = k  # the answer starts in whitespace before this token
        if s < b:
            last = k
    if first < 0 or last < first:
        return 0, 0
    s0, _ = window.offsets[first]
    _, e1 = window.offsets[last]
    if text[: max(0, s0 - a)].strip() or e1 < b:
        return 0, 0  # the window does not hold the answer whole
    return window.context_start + first, window.context_start + last


@dataclass
class Features:
    """Windows as padded-free id lists, with labels."""

    ids: list[np.ndarray]
    starts: np.ndarray
    ends: np.ndarray
    example: np.ndarray


def featurize(
    examples: Sequence[Example],
    vocab: E5Vocabulary,
    *,
    max_length: int,
    stride: int,
    negative_windows: float,
    seed: int,
) -> Features:
    """Windows of every example with their labels.

    Of an example's windows that do not hold an answer, each is kept with probability `negative_windows`
    and at most `MAX_NEGATIVE_WINDOWS` are (the no-answer label of a window is what the runtime also sees
    for windows beside the answer; a whole paper's 90 windows would otherwise swamp the rest). An
    unanswerable example always keeps at least one window.
    """
    rng = random.Random(seed)
    ids: list[np.ndarray] = []
    starts: list[int] = []
    ends: list[int] = []
    owner: list[int] = []
    t0 = time.time()
    for n, ex in enumerate(examples):
        windows = vocab.tokens.windows(ex.question, [ex.context], max_length=max_length, stride=stride)
        answer = None if ex.impossible else ex.answers[0]
        labelled = [(w, *label(w, answer)) for w in windows]
        negatives = [x for x in labelled if x[1] == 0]
        rng.shuffle(negatives)
        kept = [x for x in negatives if rng.random() < negative_windows][:MAX_NEGATIVE_WINDOWS]
        if answer is None and not kept:
            kept = negatives[:1]
        for w, s, e in [x for x in labelled if x[1] != 0] + kept:
            ids.append(np.asarray(w.ids, dtype=np.int32))
            starts.append(s)
            ends.append(e)
            owner.append(n)
        if (n + 1) % 5000 == 0:
            logger.info(
                "featurized %d / %d examples (%.0f/s)", n + 1, len(examples), (n + 1) / (time.time() - t0)
            )
    return Features(ids, np.asarray(starts), np.asarray(ends), np.asarray(owner))


def batches(lengths: np.ndarray, tokens_per_batch: int, most: int, seed: int) -> list[np.ndarray]:
    """Index batches of windows of similar length: shuffled, sorted in pools of 100 batches, cut by tokens."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(lengths))
    pool = most * 100
    out: list[np.ndarray] = []
    for p in range(0, len(order), pool):
        chunk = order[p : p + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        current: list[int] = []
        width = 0
        for i in chunk:
            w = max(width, int(lengths[i]))
            if current and (len(current) >= most or w * (len(current) + 1) > tokens_per_batch):
                out.append(np.asarray(current))
                current, w = [], int(lengths[i])
            current.append(int(i))
            width = w
        if current:
            out.append(np.asarray(current))
    rng.shuffle(out)  # type: ignore[arg-type]
    return out


def build_model(layers: int, train_from: int) -> Any:
    """The rebuilt e5 BERT cut to `layers` layers with a start/end head; frozen below `train_from`."""
    import torch

    from haygraph.retrieval.e5_torch import PackedE5, build_model, packed_model_path

    packed = PackedE5.read(packed_model_path())
    bert = build_model(packed, compact_vocabulary=True)
    if not 1 <= layers <= len(bert.encoder.layer):
        raise ValueError(f"--layers must be 1..{len(bert.encoder.layer)}, got {layers}")
    bert.encoder.layer = bert.encoder.layer[:layers]
    bert.config.num_hidden_layers = layers
    bert.config._attn_implementation = "eager"

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = bert
            self.head = torch.nn.Linear(bert.config.hidden_size, 2)
            torch.nn.init.normal_(self.head.weight, std=0.02)
            torch.nn.init.zeros_(self.head.bias)

        def forward(self, embeds: Any, mask: Any) -> tuple[Any, Any]:
            hidden = self.bert(inputs_embeds=embeds, attention_mask=mask).last_hidden_state
            logits = self.head(hidden).float()
            logits = logits.masked_fill(mask.unsqueeze(-1) == 0, -1e4)
            return logits[..., 0], logits[..., 1]

    model = Reader()
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in model.bert.encoder.layer[train_from:]:
        for p in layer.parameters():
            p.requires_grad_(True)
    for p in model.head.parameters():
        p.requires_grad_(True)
    if train_from == 0:
        for p in model.bert.embeddings.LayerNorm.parameters():
            p.requires_grad_(True)
    return model


PAD_MULTIPLE = 32
"""Batches are padded to a multiple of this many tokens: few distinct shapes, so the CPU kernels' caches
(oneDNN keeps one primitive per shape) stop growing; the memory of a run grew ~1 GB an hour without it."""


def embed_batch(vocab: E5Vocabulary, rows: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Word embeddings (B, T, H) and the attention mask (B, T) of id rows, padded past the longest."""
    width = -(-max(len(r) for r in rows) // PAD_MULTIPLE) * PAD_MULTIPLE
    ids = np.full((len(rows), width), vocab.pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for k, r in enumerate(rows):
        ids[k, : len(r)] = r
        mask[k, : len(r)] = 1
    return vocab.embed(ids), mask


def _save(path: Path, obj: Any) -> None:
    import torch

    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(obj, tmp)
    tmp.replace(path)


def train(args: argparse.Namespace) -> Path:
    """Run the training the arguments describe; returns the output folder."""
    import torch

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vocab = E5Vocabulary.load(fast=True)  # the same ids as the runtime's tokenizer, ~5x as fast
    feats_path = out / "features.npz"
    settings = {
        k: getattr(args, k) for k in ("data", "max_length", "stride", "negative_windows", "seed", "limit")
    }
    key = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    if feats_path.is_file() and json.loads((out / "features.json").read_text()).get("key") == key:
        z = np.load(feats_path, allow_pickle=False)
        flat, cuts = z["flat"], z["cuts"]
        feats = Features(np.split(flat, cuts[1:-1]), z["starts"], z["ends"], z["example"])
        logger.info("features read from %s: %d windows", feats_path, len(feats.ids))
    else:
        examples = read_examples([Path(p) for p in args.data])
        random.Random(args.seed).shuffle(examples)
        if args.limit:
            examples = examples[: args.limit]
        counts: dict[str, int] = {}
        for ex in examples:
            counts[ex.source] = counts.get(ex.source, 0) + 1
        logger.info("examples: %d %s", len(examples), counts)
        feats = featurize(
            examples, vocab, max_length=args.max_length, stride=args.stride,
            negative_windows=args.negative_windows, seed=args.seed,
        )  # fmt: skip
        cuts = np.cumsum([0] + [len(x) for x in feats.ids])
        tmp = out / f"features.tmp{os.getpid()}.npz"
        np.savez(tmp, flat=np.concatenate(feats.ids), cuts=cuts, starts=feats.starts, ends=feats.ends,
                 example=feats.example)  # fmt: skip
        tmp.replace(feats_path)
        (out / "features.json").write_text(json.dumps({"key": key, "settings": settings, "sources": counts}))
    lengths = np.asarray([len(x) for x in feats.ids])
    logger.info(
        "windows: %d, no-answer labels %.1f%%, mean length %.0f tokens",
        len(lengths), 100 * float((feats.starts == 0).mean()), float(lengths.mean()),
    )  # fmt: skip
    plan = [
        b
        for epoch in range(args.epochs)
        for b in batches(lengths, args.batch_tokens, args.batch_size, args.seed + epoch)
    ]
    if args.max_steps:
        plan = plan[: args.max_steps]
    model = build_model(args.layers, args.train_from)
    params = [p for p in model.parameters() if p.requires_grad]
    logger.info("trainable parameters: %d", sum(p.numel() for p in params))
    decay = [p for p in params if p.ndim > 1]
    no_decay = [p for p in params if p.ndim <= 1]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr
    )
    total = len(plan)
    warm = max(1, int(total * args.warmup))

    def lr_at(step: int) -> float:
        return args.lr * (step / warm if step < warm else max(0.0, (total - step) / max(1, total - warm)))

    step = 0
    first = 0
    ckpt = out / "checkpoint.pt"
    if args.resume and ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        model.load_state_dict(state["model"], strict=False)
        opt.load_state_dict(state["optimizer"])
        step = first = int(state["step"])
        logger.info("resumed at step %d of %d", step, total)
    model.train()
    loss_fn = torch.nn.CrossEntropyLoss()
    last_save = time.time()
    t0 = time.time()
    seen = 0
    run_loss = 0.0
    while step < total:
        idx = plan[step]
        embeds, mask = embed_batch(vocab, [feats.ids[i] for i in idx])
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=not args.fp32):
            s_logits, e_logits = model(torch.from_numpy(embeds), torch.from_numpy(mask))
        loss = (
            loss_fn(s_logits, torch.from_numpy(feats.starts[idx]).long())
            + loss_fn(e_logits, torch.from_numpy(feats.ends[idx]).long())
        ) / 2
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += len(idx)
        run_loss = 0.98 * run_loss + 0.02 * float(loss.detach()) if step > first + 1 else float(loss.detach())
        if step % args.log_every == 0 or step == total:
            rate = seen / (time.time() - t0)
            eta = (total - step) * (time.time() - t0) / max(1, step - first)
            logger.info(
                "step %d / %d  loss %.3f  lr %.2e  %.1f windows/s  ETA %.0f min",
                step, total, run_loss, lr_at(step), rate, eta / 60,
            )  # fmt: skip
        if time.time() - last_save > args.checkpoint_minutes * 60 or step == total:
            trainable = {k: v for k, v in model.state_dict().items() if _trainable(model, k)}
            _save(ckpt, {"model": trainable, "optimizer": opt.state_dict(), "step": step})
            last_save = time.time()
    trainable = {k: v for k, v in model.state_dict().items() if _trainable(model, k)}
    _save(out / "reader.pt", {"model": trainable, "layers": args.layers, "args": vars(args)})
    write_settings(out, export(model, out), args)
    return out


def write_settings(out: Path, onnx: Path, args: argparse.Namespace) -> Path:
    """``reader.json`` beside the exported model: how it reads, how it was trained, its sha256."""
    from haygraph.retrieval.e5_onnx import file_sha256

    info = {
        "file": onnx.name,
        "sha256": file_sha256(onnx),
        "max_length": args.max_length,
        "stride": args.stride,
        "layers": args.layers,
        "split_layer": split_layer(),
        "threshold": 0.0,
        "training": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in vars(args).items()
            if k not in ("out", "resume", "log_every", "export_checkpoint")
        },
    }
    path = out / "reader.json"
    path.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return path


def export_checkpoint(args: argparse.Namespace, target: Path) -> Path:
    """Export the newest checkpoint of ``--out`` (training may still run) to `target` as a reader folder."""
    import torch

    state = torch.load(Path(args.out) / "checkpoint.pt", weights_only=False)
    model = build_model(args.layers, args.train_from)
    model.load_state_dict(state["model"], strict=False)
    target.mkdir(parents=True, exist_ok=True)
    path = write_settings(target, export(model, target), args)
    logger.info("exported the checkpoint of step %s to %s", state["step"], target)
    return path


def split_layer() -> int:
    """The layer the shared lower graph ends at (`haygraph.retrieval.e5_onnx.SPLIT_LAYER`)."""
    from haygraph.retrieval.e5_onnx import SPLIT_LAYER

    return SPLIT_LAYER


def _trainable(model: Any, key: str) -> bool:
    params = dict(model.named_parameters())
    return key in params and params[key].requires_grad


def export(model: Any, out: Path) -> Path:
    """Write ``reader_int8.onnx``: the layers from `SPLIT_LAYER` up and the head, over the shared lower graph.

    Input ``lower`` (what ``e5_lower_int8.onnx`` gives: e5's own layers below the split, frozen in
    training) and ``attention_mask``; outputs ``start_logits`` and ``end_logits`` (padding at -1e4).
    """
    import torch

    from haygraph.retrieval.e5_onnx import SPLIT_LAYER
    from haygraph.retrieval.e5_torch import bert_part, export_graph

    layers = len(model.bert.encoder.layer)
    part = bert_part(model.bert, SPLIT_LAYER, layers, embed=False)

    class Upper(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.part = part
            self.head = model.head

        def forward(self, lower: Any, mask: Any) -> tuple[Any, Any]:
            logits = self.head(self.part(lower, mask)).float()
            logits = logits.masked_fill(mask.unsqueeze(-1) == 0, -1e4)
            return logits[..., 0], logits[..., 1]

    model.eval()
    hidden = model.bert.config.hidden_size
    int8 = export_graph(
        Upper(), ("lower", "attention_mask"), ["start_logits", "end_logits"], hidden, out / "reader.onnx"
    )
    (out / "reader.onnx").unlink(missing_ok=True)
    logger.info("exported %s (%.1f MB)", int8, int8.stat().st_size / 1e6)
    return int8


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[], help="JSONL files of span-QA examples")
    ap.add_argument("--out", required=True, help="folder for features, checkpoints and the exported model")
    ap.add_argument("--layers", type=int, default=8, help="e5 layers the reader keeps (of 12)")
    ap.add_argument("--train-from", type=int, default=4, help="first trained layer (lower ones frozen)")
    ap.add_argument("--max-length", type=int, default=256, help="tokens per window")
    ap.add_argument("--stride", type=int, default=96, help="passage tokens two windows share")
    ap.add_argument("--negative-windows", type=float, default=0.5,
                    help="share kept of an answerable example's windows that miss the answer")  # fmt: skip
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many batches (0: all)")
    ap.add_argument("--limit", type=int, default=0, help="use only this many examples (0: all)")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=float, default=0.06, help="share of steps warming up")
    ap.add_argument("--batch-size", type=int, default=32, help="most windows per batch")
    ap.add_argument("--batch-tokens", type=int, default=6144, help="most padded tokens per batch")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--fp32", action="store_true", help="no bfloat16 autocast")
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    ap.add_argument("--checkpoint-minutes", type=float, default=10.0)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument(
        "--export-checkpoint",
        type=Path,
        default=None,
        help="only export OUT/checkpoint.pt as a reader folder here (training may be running)",
    )
    args = ap.parse_args(argv)
    if args.train_from < split_layer():
        ap.error(f"--train-from must be >= {split_layer()}: the layers below are the shared e5 lower graph")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    if args.export_checkpoint is not None:
        export_checkpoint(args, args.export_checkpoint)
        return
    train(args)


def _iter_lines(path: Path) -> Iterator[str]:
    yield from path.read_text(encoding="utf-8").splitlines()


if __name__ == "__main__":
    main()
    _ = math
