"""Train the extractive reader: the bundled multilingual-e5-small fine-tuned for SQuAD 2.0-style QA.

    python -m benchmarks.train_reader --data FILE --out DIR [--layers 8] [--train-from 4] [--resume] ...

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
   `--train-from` are frozen too. Without a checkpoint it starts from the shipped reader's weights
   (``--init shipped``, dequantized by `benchmarks.reader_init`) or from e5's own (``--init e5``).
4. Trains with AdamW, linear warm-up and decay, cross-entropy on start and end, batches of windows of
   similar length (little padding), bfloat16 autocast only where the hardware computes it
   (``--precision auto``). The frozen layers' output of each window is computed once, stored in a
   float16 memory-mapped cache (`benchmarks.reader_cache`, ``--cache``) and read back afterwards. Every
   `--checkpoint-minutes`, and when SIGTERM or SIGINT arrives, it writes a checkpoint atomically (trained
   tensors, optimizer, batch order, position, RNG); `--resume` continues from it bit for bit, so a
   killed run loses at most that much work. With ``--dev`` it scores the dev slice every
   ``--eval-every`` windows into ``OUT/curve.csv`` (`benchmarks.reader_curve` plots it);
   ``--bench-steps`` only measures windows/s the old way and the new way.
5. Exports the trained layers and head as ONNX (outputs: start and end logits) and quantises its
   MatMuls to dynamic int8 (per channel), as the project's other ONNX encoders are
   (`haygraph.retrieval.onnx_encoder.export_model`). A reader trained from `SPLIT_LAYER` (4) up is
   exported from there (input: the shared lower graph's output, ``e5_lower_int8.onnx``); one that
   trained lower layers (``--train-from`` below 4, the 12-layer reader of an accelerator) is exported
   whole (input: the word embeddings), so the runtime reads it without the shared graph
   (``reader.json``'s ``split_layer`` says which: 4 or 0).

Progress (windows/s, loss, epoch, cached windows, ETA) is logged; nothing is downloaded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import os
import random
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.reader_cache import LowerCache, cache_key
from haygraph.retrieval.e5_vocabulary import E5Vocabulary
from haygraph.retrieval.reader.model import ReaderModel, ReaderSettings
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
    """`torch.save` to a temporary name, then rename: a killed run never leaves half a checkpoint."""
    import torch

    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(obj, tmp)
    tmp.replace(path)


def resolve_precision(precision: str, device: str) -> str:
    """``bf16`` or ``fp32`` for `precision` ``auto``: bfloat16 only where the hardware computes it.

    On a CPU without AVX-512 BF16 or AMX (the 2-core machine's AVX2 EPYC) bfloat16 autocast is emulated
    and slower than float32 (`--bench-steps` measures both).
    """
    if precision not in ("auto", "bf16", "fp32"):
        raise ValueError(f"precision must be one of auto, bf16, fp32, but got {precision!r}")
    if precision != "auto":
        return precision
    if device.startswith("cuda"):
        return "bf16"
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "fp32"
    return "bf16" if ("avx512_bf16" in flags or "amx_bf16" in flags) else "fp32"


def resolve_device(device: str) -> str:
    """``cuda`` for `device` ``auto`` when an accelerator is visible, else ``cpu``."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


class Step:
    """One training step's pieces: the frozen lower part (cached or computed), the trained upper part.

    `model` is `build_model`'s reader; the layers below `frozen` are run without gradients in eval mode
    (no dropout: they are the fixed features the cache holds), the rest in the model's mode.
    """

    def __init__(
        self, model: Any, vocab: E5Vocabulary, frozen: int, *, device: str = "cpu", precision: str = "fp32"
    ) -> None:
        from haygraph.retrieval.e5_torch import bert_part

        self.model = model
        self.vocab = vocab
        self.frozen = frozen
        self.device = device
        self.precision = precision
        layers = len(model.bert.encoder.layer)
        self.lower_part = bert_part(model.bert, 0, frozen, embed=True)
        self.upper_part = bert_part(model.bert, frozen, layers, embed=False)

    def autocast(self) -> Any:
        """The autocast context of this step's precision."""
        import torch

        kind = "cuda" if self.device.startswith("cuda") else "cpu"
        return torch.autocast(kind, dtype=torch.bfloat16, enabled=self.precision == "bf16")

    def lower(self, rows: Sequence[np.ndarray], *, dropout: bool = False) -> tuple[Any, Any]:
        """The frozen layers' float32 output (B, T, H) for id `rows`, and the mask (B, T), on the device.

        Without `dropout` they run in eval mode (what the cache holds); with it, in the model's mode, as
        the shipped run trained (its frozen layers' dropout was on in training).
        """
        import torch

        embeds, mask = embed_batch(self.vocab, rows)
        m = torch.from_numpy(mask).to(self.device)
        was = self.model.training  # the parts share the model's modules but not its mode flag
        self.lower_part.train(was and dropout)
        with torch.no_grad(), self.autocast():
            hidden = self.lower_part(torch.from_numpy(embeds).to(self.device), m).float()
        self.model.train(was)
        return hidden, m

    def lower_cached(
        self, rows: Sequence[np.ndarray], idx: np.ndarray, cache: LowerCache | None
    ) -> tuple[Any, Any]:
        """As `lower`, read from `cache` when every window of `idx` is there (and stored when not)."""
        import torch

        if cache is None:
            return self.lower(rows, dropout=True)
        width = -(-max(len(r) for r in rows) // PAD_MULTIPLE) * PAD_MULTIPLE
        if cache.have(idx).all():
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for k, r in enumerate(rows):
                mask[k, : len(r)] = 1
            hidden = torch.from_numpy(cache.get(idx, width)).to(self.device)
            return hidden, torch.from_numpy(mask).to(self.device)
        hidden, mask = self.lower(rows)
        half = hidden.to(torch.float16)
        cache.put(idx, half.cpu().numpy())
        return (
            half.float(),
            mask,
        )  # what a later read gives: a resumed run computes exactly what it would have

    def logits(self, hidden: Any, mask: Any) -> tuple[Any, Any]:
        """Start and end logits (padding at -1e4) of the upper layers and head over the lower output."""
        with self.autocast():
            out = self.model.head(self.upper_part(hidden, mask)).float()
        out = out.masked_fill(mask.unsqueeze(-1) == 0, -1e4)
        return out[..., 0], out[..., 1]


def loss_of(s_logits: Any, e_logits: Any, starts: np.ndarray, ends: np.ndarray, device: str) -> Any:
    """The mean of the start and end cross-entropies."""
    import torch

    fn = torch.nn.functional.cross_entropy
    s = torch.from_numpy(np.asarray(starts)).long().to(device)
    e = torch.from_numpy(np.asarray(ends)).long().to(device)
    return (fn(s_logits, s) + fn(e_logits, e)) / 2


def load_features(args: argparse.Namespace, out: Path, vocab: E5Vocabulary) -> tuple[Features, str]:
    """The windows of ``--data`` and the key of the settings that made them.

    Read from ``OUT/features.npz`` when it was made with the same settings and the same data files (their
    sha256 is part of the key, so a changed file is windowed again).
    """
    from haygraph.retrieval.e5_onnx import file_sha256

    feats_path = out / "features.npz"
    settings = {
        k: getattr(args, k) for k in ("data", "max_length", "stride", "negative_windows", "seed", "limit")
    }
    settings["data_sha256"] = [file_sha256(Path(p)) for p in args.data]
    key = hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]
    if feats_path.is_file() and json.loads((out / "features.json").read_text()).get("key") == key:
        z = np.load(feats_path, allow_pickle=False)
        flat, cuts = z["flat"], z["cuts"]
        feats = Features(np.split(flat, cuts[1:-1]), z["starts"], z["ends"], z["example"])
        logger.info("features read from %s: %d windows", feats_path, len(feats.ids))
        return feats, key
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
    return feats, key


def frozen_sha256(model: Any, frozen: int) -> str:
    """sha256 of the frozen part's weights (embedding LayerNorm, positions, layers below `frozen`)."""
    digest = hashlib.sha256()
    for name, p in sorted(model.bert.named_parameters()):
        embedding = name.startswith("embeddings.") and "word_embeddings" not in name
        below = name.startswith("encoder.layer.") and int(name.split(".")[2]) < frozen
        if embedding or below:
            digest.update(name.encode() + p.detach().cpu().numpy().tobytes())
    return digest.hexdigest()


def open_cache(
    args: argparse.Namespace, feats_key: str, model: Any, lengths: np.ndarray
) -> LowerCache | None:
    """The frozen-output cache of these windows under ``--cache`` (None with ``--no-cache``)."""
    if args.no_cache:
        return None
    frozen = args.train_from
    key = cache_key(feats_key, frozen, frozen_sha256(model, frozen), PAD_MULTIPLE)
    folder = Path(args.cache or Path(args.out) / "cache") / f"f{frozen}-{key}"
    cache = LowerCache(folder, lengths, model.bert.config.hidden_size)
    logger.info("frozen-output cache %s: %d of %d windows stored", folder, cache.filled, len(cache))
    return cache


def dev_cache_folder(args: argparse.Namespace, model: Any) -> Path | None:
    """Where the dev windows' frozen outputs are kept across runs (None with ``--no-cache``)."""
    from haygraph.retrieval.e5_onnx import file_sha256

    if args.no_cache or not args.dev:
        return None
    frozen = args.train_from
    key = cache_key(
        file_sha256(Path(args.dev)), args.max_length, args.stride, args.dev_limit, args.dev_max_windows,
        frozen, frozen_sha256(model, frozen),
    )  # fmt: skip
    return Path(args.cache or Path(args.out) / "cache") / f"dev-f{frozen}-{key}"


def make_plan(lengths: np.ndarray, args: argparse.Namespace) -> list[np.ndarray]:
    """The batches of every epoch in training order (cut to ``--max-steps``)."""
    plan = [
        b
        for epoch in range(args.epochs)
        for b in batches(lengths, args.batch_tokens, args.batch_size, args.seed + epoch)
    ]
    return plan[: args.max_steps] if args.max_steps else plan


class StopRequest:
    """Set by SIGTERM / SIGINT: the loop finishes its step, writes a checkpoint and returns."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __call__(self, signum: int, _frame: Any) -> None:
        """The signal handler."""
        self.signal = signum
        logger.info("signal %d: stopping at the next step's checkpoint", signum)

    def install(self) -> None:
        """Handle SIGTERM and SIGINT (main thread only)."""
        signal.signal(signal.SIGTERM, self)
        signal.signal(signal.SIGINT, self)


def train(args: argparse.Namespace, stop: StopRequest | None = None) -> Path:
    """Run the training the arguments describe; returns the output folder.

    Starts from ``OUT/checkpoint.pt`` with ``--resume`` (its weights, optimizer, batch order and position),
    else from the shipped reader's weights (``--init shipped``, dequantized from ``reader_int8.onnx``) or
    from e5's own (``--init e5``). Stops early, at a checkpoint, when `stop` is set (a signal).
    """
    import torch

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    precision = resolve_precision(args.precision, device)
    stop = stop if stop is not None else StopRequest()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vocab = E5Vocabulary.load(fast=True)  # the same ids as the runtime's tokenizer, ~5x as fast
    feats, feats_key = load_features(args, out, vocab)
    lengths = np.asarray([len(x) for x in feats.ids])
    logger.info(
        "windows: %d, no-answer labels %.1f%%, mean length %.0f tokens, %.0f%% at most 192",
        len(lengths), 100 * float((feats.starts == 0).mean()), float(lengths.mean()),
        100 * float((lengths <= 192).mean()),
    )  # fmt: skip
    model = build_model(args.layers, args.train_from)
    params = [p for p in model.parameters() if p.requires_grad]
    logger.info("trainable parameters: %d; %s on %s", sum(p.numel() for p in params), precision, device)
    decay = [p for p in params if p.ndim > 1]
    no_decay = [p for p in params if p.ndim <= 1]
    ckpt = out / "checkpoint.pt"
    state = torch.load(ckpt, weights_only=False) if args.resume and ckpt.is_file() else None
    if state is not None:
        for k in ("layers", "train_from"):
            if state.get("args", {}).get(k, getattr(args, k)) != getattr(args, k):
                raise SystemExit(f"{ckpt} was trained with --{k.replace('_', '-')} {state['args'][k]}")
        model.load_state_dict(state["model"], strict=False)
        plan = np.split(state["plan"], state["plan_cuts"][1:-1])
        init = state.get("init", "?")
        init_sha = state.get("init_sha256")
    else:
        plan = make_plan(lengths, args)
        init = args.init
        init_sha = None
        if args.init == "shipped":
            from benchmarks.reader_init import load_shipped
            from haygraph.retrieval.e5_onnx import WEIGHTS_DIR, file_sha256
            from haygraph.retrieval.reader.model import READER

            init_sha = file_sha256(WEIGHTS_DIR / READER)  # "shipped" changes when a run is shipped
            names = load_shipped(model)
            logger.info("started from the shipped reader's weights (%d tensors, dequantized)", len(names))
    model.to(device)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr
    )
    step = seen = 0
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        step, seen = int(state["step"]), int(state.get("windows", 0))
        torch.set_rng_state(state["rng"])
        logger.info("resumed at step %d of %d (%d windows read; init %s)", step, len(plan), seen, init)
    cache = open_cache(args, feats_key, model, lengths)
    runner = Step(model, vocab, args.train_from, device=device, precision=precision)
    total = len(plan)
    warm = max(1, int(total * args.warmup))
    curve = Curve(args, out, vocab, runner, stop, dev_cache_folder(args, model)) if args.dev else None
    if curve is not None:
        curve.epoch_windows = len(lengths)

    def lr_at(k: int) -> float:
        return args.lr * (k / warm if k < warm else max(0.0, (total - k) / max(1, total - warm)))

    def checkpoint(reason: str) -> None:
        if cache is not None:
            cache.flush()
        trainable = {k: v for k, v in model.state_dict().items() if _trainable(model, k)}
        cuts = np.cumsum([0] + [len(b) for b in plan])
        _save(ckpt, {
            "model": trainable, "optimizer": opt.state_dict(), "step": step, "windows": seen,
            "plan": np.concatenate(plan), "plan_cuts": cuts, "rng": torch.get_rng_state(),
            "init": init, "init_sha256": init_sha, "args": vars(args),
        })  # fmt: skip
        logger.info("checkpoint at step %d (%s)", step, reason)

    if curve is not None:
        curve.maybe(step, seen, total, force=step == 0 and not args.skip_start_eval)
    model.train()
    last_save = time.time()
    t0 = time.time()
    first, read_now = step, 0
    run_loss = 0.0
    while step < total:
        if stop.signal is not None:
            checkpoint(f"signal {stop.signal}")
            return out
        if args.stop_at_windows and seen >= args.stop_at_windows:  # checked before a step: a run resumed
            if curve is not None and curve.last_windows != seen:  # past its stop takes none; the stop
                curve.maybe(step, seen, total, force=True)  # point is always scored, once
            checkpoint(f"{seen} windows read, --stop-at-windows {args.stop_at_windows}")
            return out
        idx = plan[step]
        hidden, mask = runner.lower_cached([feats.ids[i] for i in idx], idx, cache)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        s_logits, e_logits = runner.logits(hidden, mask)
        loss = loss_of(s_logits, e_logits, feats.starts[idx], feats.ends[idx], device)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        seen += len(idx)
        read_now += len(idx)
        value = float(loss.detach())
        run_loss = 0.98 * run_loss + 0.02 * value if step > first + 1 else value
        if step % args.log_every == 0 or step == total:
            rate = read_now / (time.time() - t0)
            eta = (total - step) * (time.time() - t0) / max(1, step - first)
            logger.info(
                "step %d / %d  loss %.3f  lr %.2e  %.1f windows/s  epoch %.2f  cached %d  ETA %.0f min",
                step, total, run_loss, lr_at(step), rate, seen / len(lengths),
                cache.filled if cache is not None else 0, eta / 60,
            )  # fmt: skip
        if curve is not None and curve.maybe(step, seen, total):
            model.train()
        if time.time() - last_save > args.checkpoint_minutes * 60 or step == total:
            checkpoint("timer" if step < total else "done")
            last_save = time.time()
    trainable = {k: v for k, v in model.state_dict().items() if _trainable(model, k)}
    _save(out / "reader.pt", {"model": trainable, "layers": args.layers, "args": vars(args)})
    model.to("cpu")
    export_reader(model, out, args, args.train_from)
    return out


class Curve:
    """The learning curve: dev-slice EM / F1 per language every ``--eval-every`` windows, in ``curve.csv``.

    Read with the trained model in torch (float32, eval mode) through `ReaderModel.read`'s own span and
    margin logic, at the shipped threshold (a span when its margin >= 0), scored with the official SQuAD
    2.0 rules (`haygraph.eval.qa_metrics.qa_scores`; Chinese per character). The frozen part of each dev
    window is computed once and kept on disk beside the training cache (a ``dev-...`` folder, so a resumed
    run does not recompute it; in memory with ``--no-cache``).
    """

    FIELDS = ("step", "windows", "epoch", "lang", "n", "exact", "f1", "HasAns_f1", "NoAns_exact", "seconds")

    def __init__(
        self,
        args: argparse.Namespace,
        out: Path,
        vocab: E5Vocabulary,
        runner: Step,
        stop: StopRequest | None = None,
        disk_folder: Path | None = None,
    ) -> None:
        self.stop = stop
        self.disk_folder = disk_folder
        self._disk: LowerCache | None = None
        rows = _dev_rows(Path(args.dev))
        if args.dev_limit and args.dev_limit < len(rows):  # evenly spread: the file is grouped by source
            rows = [rows[k * len(rows) // args.dev_limit] for k in range(args.dev_limit)]
        self.rows = rows
        self.max_windows = args.dev_max_windows
        self._dev_windows: list[Window] = []
        self.every = args.eval_every
        self.path = out / "curve.csv"
        self.vocab = vocab
        self.runner = runner
        self.max_length, self.stride = args.max_length, args.stride
        self.epoch_windows = 0
        self._lower: dict[bytes, np.ndarray] = {}
        done = set()
        if self.path.is_file():
            done = {int(line.split(",")[0]) for line in self.path.read_text().splitlines()[1:] if line}
        self.done_steps = done
        self.last_windows = 0
        if self.path.is_file():
            seen = [int(line.split(",")[1]) for line in self.path.read_text().splitlines()[1:] if line]
            self.last_windows = max(seen, default=0)

    def maybe(self, step: int, windows: int, total: int, *, force: bool = False) -> bool:
        """Evaluate when the windows read cross a multiple of `every` (or `force`); True if it did.

        Multiples, not `every` after the last evaluation: a batch overshoots each mark by a few windows,
        and counting from the last evaluation carried the overshoot on, so a run stopped at 30,000
        windows (``--stop-at-windows``) had read 30,013 but only 9,994 since its evaluation at 20,019.
        """
        if step in self.done_steps:
            self.last_windows = windows
            return False
        if not force and windows // self.every <= self.last_windows // self.every and step != total:
            return False
        try:
            self.evaluate(step, windows)
        except _Interrupted:
            logger.info("dev evaluation at step %d left unfinished: stopping", step)
            return False
        self.last_windows = windows
        return True

    def _windows(self) -> list[Window]:
        """Every dev window, in length order (made once; their frozen part is computed once too).

        Examples whose passage takes more than ``--dev-max-windows`` windows are dropped from the curve.
        """
        if not self._dev_windows:
            reader = _TorchReader(lambda ws: [], self.vocab, self.max_length, self.stride)
            found = {}
            kept = []
            for row in self.rows:
                windows = reader.windows(row["question"], [row["context"]])
                if len(windows) > self.max_windows:
                    continue
                kept.append(row)
                for w in windows:
                    found[np.asarray(w.ids, dtype=np.int32).tobytes()] = w
            if len(kept) < len(self.rows):
                logger.info(
                    "learning curve: %d of %d dev examples (left out: passages of over %d windows)",
                    len(kept), len(self.rows), self.max_windows,
                )  # fmt: skip
            self.rows = kept
            self._dev_windows = sorted(found.values(), key=lambda w: len(w.ids))
        return self._dev_windows

    def all_logits(self, batch_tokens: int = 4096) -> dict[bytes, tuple[np.ndarray, np.ndarray]]:
        """Start and end logits of every dev window by its ids, in batches of similar length."""
        import torch

        windows = self._windows()
        size = self.runner.model.bert.config.hidden_size
        if self.disk_folder is not None and self._disk is None:
            self._disk = LowerCache(self.disk_folder, [len(w.ids) for w in windows], size)
        out: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        k = 0
        while k < len(windows):
            if self.stop is not None and self.stop.signal is not None:
                raise _Interrupted
            n = max(1, batch_tokens // max(PAD_MULTIPLE, len(windows[min(k + 31, len(windows) - 1)].ids)))
            group = windows[k : k + min(32, n)]
            idx = np.arange(k, k + len(group))
            k += len(group)
            rows = [np.asarray(w.ids, dtype=np.int32) for w in group]
            keys = [r.tobytes() for r in rows]
            width = -(-max(len(r) for r in rows) // PAD_MULTIPLE) * PAD_MULTIPLE
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, r in enumerate(rows):
                mask[j, : len(r)] = 1
            if self._disk is not None:
                if not self._disk.have(idx).all():
                    hidden, _ = self.runner.lower(rows)
                    self._disk.put(idx, hidden.to(torch.float16).cpu().numpy())
                hidden_np = self._disk.get(idx, width)
            else:
                missing = [j for j, key in enumerate(keys) if key not in self._lower]
                if missing:
                    hidden, _ = self.runner.lower([rows[j] for j in missing])
                    for m, j in enumerate(missing):
                        self._lower[keys[j]] = hidden[m, : len(rows[j])].to(torch.float16).cpu().numpy()
                hidden_np = np.zeros((len(rows), width, size), dtype=np.float32)
                for j, key in enumerate(keys):
                    hidden_np[j, : len(rows[j])] = self._lower[key]
            device = self.runner.device
            with torch.no_grad():
                s, e = self.runner.logits(
                    torch.from_numpy(hidden_np).to(device), torch.from_numpy(mask).to(device)
                )
            s_np, e_np = s.float().cpu().numpy(), e.float().cpu().numpy()
            for j, key in enumerate(keys):
                out[key] = (s_np[j, : len(rows[j])], e_np[j, : len(rows[j])])
        if self._disk is not None:
            self._disk.flush()
        return out

    def scores(self) -> dict[str, dict[str, float]]:
        """Dev-slice scores per language of the model as it is now."""
        from haygraph.eval.qa_metrics import qa_scores

        model = self.runner.model
        was = model.training
        model.eval()
        try:
            table = self.all_logits()
        finally:
            model.train(was)

        def lookup(ws: Sequence[Window]) -> list[tuple[np.ndarray, np.ndarray]]:
            return [table[np.asarray(w.ids, dtype=np.int32).tobytes()] for w in ws]

        reader = _TorchReader(lookup, self.vocab, self.max_length, self.stride)
        preds = []
        for row in self.rows:
            reading = reader.read(row["question"], [row["context"]])[0]
            best = reading.best
            preds.append(best.text if best is not None and reading.margin >= 0 else "")
        out = {}
        for group in sorted({r["group"] for r in self.rows}):  # a language, or a pair ("en->zh")
            pick = [k for k, r in enumerate(self.rows) if r["group"] == group]
            golds = {self.rows[k]["id"]: self.rows[k]["golds"] for k in pick}
            lang = self.rows[pick[0]]["lang"]  # the passages' language scores the answers
            out[group] = qa_scores({self.rows[k]["id"]: preds[k] for k in pick}, golds, lang)
        return out

    def evaluate(self, step: int, windows: int) -> None:
        """Score the dev slice now and append a row per language to ``curve.csv``."""
        t0 = time.time()
        scores = self.scores()
        seconds = time.time() - t0
        new = not self.path.is_file()
        with self.path.open("a", encoding="utf-8") as fh:
            if new:
                fh.write(",".join(self.FIELDS) + "\n")
            for lang, s in scores.items():
                epoch = windows / self.epoch_windows if self.epoch_windows else 0.0
                fh.write(
                    f"{step},{windows},{epoch:.3f},{lang},{int(s['total'])},{s['exact']:.2f},{s['f1']:.2f},"
                    f"{s.get('HasAns_f1', float('nan')):.2f},{s.get('NoAns_exact', float('nan')):.2f},"
                    f"{seconds:.0f}\n"
                )
                logger.info(
                    "dev %s at step %d (%d windows): EM %.1f F1 %.1f (n %d, %.0f s)",
                    lang, step, windows, s["exact"], s["f1"], s["total"], seconds,
                )  # fmt: skip
        self.done_steps.add(step)


class _Interrupted(Exception):
    """A stop was asked for during a dev evaluation (it is dropped; the next run evaluates again)."""


def _dev_rows(path: Path) -> list[dict[str, Any]]:
    from benchmarks.eval_reader import squad_rows

    return squad_rows(path)


class _TorchReader(ReaderModel):
    """`ReaderModel.read` over logits computed by a function (the model in training) instead of ONNX."""

    def __init__(self, logits: Any, vocab: E5Vocabulary, max_length: int, stride: int) -> None:
        super().__init__(check_sha256=False)
        self._logits = logits
        self._vocab = vocab
        self._session = "torch"  # warm_up has nothing to load
        self.settings = ReaderSettings(max_length=max_length, stride=stride)

    def logits(self, windows: Sequence[Window]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Start and end logits of each window."""
        return list(self._logits(windows))


def bench(args: argparse.Namespace, n: int) -> dict[str, Any]:
    """Windows/s of `n` training steps the old way and the new way, on the same batches, in one process.

    Old: word embeddings through all layers each step (the frozen ones recomputed), bfloat16 autocast as
    the shipped run trained. New: the frozen part read from the cache (filled first, timed apart), the
    upper layers in float32 and in bfloat16. The first step of each way is a warm-up, not timed.
    """
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    vocab = E5Vocabulary.load(fast=True)
    feats, feats_key = load_features(args, out, vocab)
    lengths = np.asarray([len(x) for x in feats.ids])
    plan = make_plan(lengths, args)[: n + 1]
    model = build_model(args.layers, args.train_from)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    cache = open_cache(args, feats_key, model, lengths)
    if cache is None:
        raise SystemExit("--bench-steps measures the cache: drop --no-cache")

    def timed(label: str, one: Any) -> float:
        model.train()
        one(plan[0])
        t0, windows = time.time(), 0
        for idx in plan[1:]:
            one(idx)
            windows += len(idx)
        rate = windows / (time.time() - t0)
        logger.info("%s: %.2f windows/s (%d steps, %d windows)", label, rate, len(plan) - 1, windows)
        return rate

    def update(loss: Any) -> None:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    def old(precision: str) -> Any:
        def one(idx: np.ndarray) -> None:
            embeds, mask = embed_batch(vocab, [feats.ids[i] for i in idx])
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
                s, e = model(torch.from_numpy(embeds), torch.from_numpy(mask))
            update(loss_of(s, e, feats.starts[idx], feats.ends[idx], "cpu"))

        return one

    def new(precision: str) -> Any:
        runner = Step(model, vocab, args.train_from, precision=precision)

        def one(idx: np.ndarray) -> None:
            hidden, mask = runner.lower_cached([feats.ids[i] for i in idx], idx, cache)
            s, e = runner.logits(hidden, mask)
            update(loss_of(s, e, feats.starts[idx], feats.ends[idx], "cpu"))

        return one

    result: dict[str, Any] = {"threads": torch.get_num_threads(), "steps": n, "load": os.getloadavg()}
    result["old_bf16"] = timed("old step (frozen layers recomputed), bf16 autocast", old("bf16"))
    result["old_fp32"] = timed("old step (frozen layers recomputed), fp32", old("fp32"))
    runner = Step(model, vocab, args.train_from, precision="fp32")
    t0, filled = time.time(), 0
    for idx in plan:
        if not cache.have(idx).all():
            runner.lower_cached([feats.ids[i] for i in idx], idx, cache)
            filled += len(idx)
    result["cache_fill_windows_per_s"] = filled / max(1e-9, time.time() - t0) if filled else None
    logger.info("cache filled for %d windows (%s windows/s)", filled, result["cache_fill_windows_per_s"])
    result["new_fp32"] = timed("new step (frozen layers read from the cache), fp32", new("fp32"))
    result["new_bf16"] = timed("new step (frozen layers read from the cache), bf16 autocast", new("bf16"))
    result["load_after"] = os.getloadavg()
    (out / "bench.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def write_settings(
    out: Path,
    onnx: Path,
    args: argparse.Namespace,
    progress: dict[str, Any] | None = None,
    *,
    first: int | None = None,
) -> Path:
    """``reader.json`` beside the exported model: how it reads, how it was trained, its sha256.

    `first`: the first layer the graph runs (``split_layer``; default `split_layer()`, over the shared
    lower graph; 0 for a graph exported whole). `progress` (a checkpoint's export): how far that run had
    got -- step, windows read, epochs, where it started from -- kept under ``training.progress``.
    """
    from haygraph.retrieval.e5_onnx import file_sha256

    info = {
        "file": onnx.name,
        "sha256": file_sha256(onnx),
        "max_length": args.max_length,
        "stride": args.stride,
        "layers": args.layers,
        "split_layer": split_layer() if first is None else first,
        "threshold": 0.0,
        "training": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in vars(args).items()
            if k not in ("out", "resume", "log_every", "export_checkpoint")
        },
    }
    if progress:
        info["training"]["progress"] = progress  # type: ignore[index]
    path = out / "reader.json"
    path.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return path


def export_checkpoint(args: argparse.Namespace, target: Path) -> Path:
    """Export the newest checkpoint of ``--out`` (training may still run) to `target` as a reader folder."""
    import torch

    state = torch.load(Path(args.out) / "checkpoint.pt", weights_only=False)
    run = state.get("args", {})
    layers, train_from = int(run.get("layers", args.layers)), int(run.get("train_from", args.train_from))
    model = build_model(layers, train_from)
    model.load_state_dict(state["model"], strict=False)
    target.mkdir(parents=True, exist_ok=True)
    plan_windows = int(state["plan_cuts"][-1]) if "plan_cuts" in state else 0  # every epoch's batches
    epochs = int(state.get("args", {}).get("epochs", args.epochs))
    progress = {
        "step": int(state["step"]),
        "steps": len(state["plan_cuts"]) - 1 if "plan_cuts" in state else None,
        "windows_read": int(state.get("windows", 0)),
        "epochs_read": round(int(state.get("windows", 0)) * epochs / plan_windows, 3)
        if plan_windows
        else None,
        "init": state.get("init"),
        "init_sha256": state.get("init_sha256"),
    }
    run_args = argparse.Namespace(**{**vars(args), **state.get("args", {})})  # how that run was started
    path = export_reader(model, target, run_args, train_from, progress)
    logger.info("exported the checkpoint of step %s to %s", state["step"], target)
    return path


def export_reader(
    model: Any,
    out: Path,
    args: argparse.Namespace,
    train_from: int,
    progress: dict[str, Any] | None = None,
) -> Path:
    """Export `model` to `out` as a reader folder (`export`, then `write_settings`); ``reader.json``'s path.

    The graph starts where `graph_start` says for a run that trained from layer `train_from`, and
    ``reader.json``'s ``split_layer`` says the same, so the runtime reads the graph the way it was written.
    """
    first = graph_start(train_from)
    return write_settings(out, export(model, out, first), args, progress, first=first)


def split_layer() -> int:
    """The layer the shared lower graph ends at (`haygraph.retrieval.e5_onnx.SPLIT_LAYER`)."""
    from haygraph.retrieval.e5_onnx import SPLIT_LAYER

    return SPLIT_LAYER


def graph_start(train_from: int) -> int:
    """The first layer of the exported graph for a run that trained from layer `train_from`.

    `split_layer()` when the layers below it are e5's own (frozen), so the runtime reads the reader over
    the shared lower graph; else 0: the graph whole, from the word embeddings.
    """
    return split_layer() if train_from >= split_layer() else 0


def _trainable(model: Any, key: str) -> bool:
    params = dict(model.named_parameters())
    return key in params and params[key].requires_grad


def export(model: Any, out: Path, first: int | None = None) -> Path:
    """Write ``reader_int8.onnx``: the reader's layers from `first` up and the head.

    `first` = `split_layer()` (the default): input ``lower`` (what ``e5_lower_int8.onnx`` gives: e5's own
    layers below the split, frozen in training). `first` = 0: the graph whole, input ``embeddings`` (the
    word-embedding rows, as the lower graph takes them), for a reader whose lower layers were trained.
    Both take ``attention_mask`` and give ``start_logits`` and ``end_logits`` (padding at -1e4).
    """
    import torch

    from haygraph.retrieval.e5_torch import bert_part, export_graph

    first = split_layer() if first is None else first
    if first not in (0, split_layer()):
        raise ValueError(f"a reader graph starts at layer 0 or {split_layer()}, not {first}")
    layers = len(model.bert.encoder.layer)
    part = bert_part(model.bert, first, layers, embed=first == 0)

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
    inputs = ("embeddings" if first == 0 else "lower", "attention_mask")
    int8 = export_graph(Upper(), inputs, ["start_logits", "end_logits"], hidden, out / "reader.onnx")
    (out / "reader.onnx").unlink(missing_ok=True)
    logger.info("exported %s (%.1f MB)", int8, int8.stat().st_size / 1e6)
    return int8


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's settings (``--fp32`` folded into ``--precision``)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=[], help="JSONL files of span-QA examples")
    ap.add_argument("--out", required=True, help="folder for features, checkpoints and the exported model")
    ap.add_argument("--layers", type=int, default=8, help="e5 layers the reader keeps (of 12)")
    ap.add_argument("--train-from", type=int, default=4, help="first trained layer (lower ones frozen)")
    ap.add_argument("--max-length", type=int, default=256, help="tokens per window")
    ap.add_argument("--stride", type=int, default=96, help="passage tokens two windows share")
    ap.add_argument("--negative-windows", type=float, default=0.5,
                    help=f"chance each window without the answer is kept (at most {MAX_NEGATIVE_WINDOWS} "
                    "per example; an unanswerable example keeps one)")  # fmt: skip
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many batches (0: all)")
    ap.add_argument("--limit", type=int, default=0, help="use only this many examples (0: all)")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--warmup", type=float, default=0.06, help="share of steps warming up")
    ap.add_argument("--batch-size", type=int, default=32, help="most windows per batch")
    ap.add_argument("--batch-tokens", type=int, default=6144, help="most padded tokens per batch")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads (0: torch's choice)")
    ap.add_argument(
        "--precision",
        choices=("auto", "bf16", "fp32"),
        default="auto",
        help="auto: bfloat16 only where the hardware has it (AVX512-BF16, AMX, CUDA)",
    )
    ap.add_argument("--fp32", action="store_true", help="same as --precision fp32")
    ap.add_argument("--device", default="auto", help="auto (cuda when visible, else cpu), cpu, cuda, cuda:N")
    ap.add_argument(
        "--init",
        choices=("shipped", "e5"),
        default="shipped",
        help="a run without a checkpoint starts from the shipped reader (dequantized) or e5",
    )
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="folder of the frozen layers' outputs per window (default OUT/cache)",
    )
    ap.add_argument(
        "--no-cache",
        action="store_true",
        help="recompute the frozen layers every step, with their dropout on (the shipped run's way)",
    )
    ap.add_argument("--dev", type=Path, default=None, help="dev JSONL scored for the learning curve")
    ap.add_argument("--dev-limit", type=int, default=0, help="score only this many dev examples (0: all)")
    ap.add_argument(
        "--dev-max-windows",
        type=int,
        default=4,
        help="leave out of the curve dev passages read in more windows (whole papers)",
    )
    ap.add_argument("--eval-every", type=int, default=10_000, help="windows between dev evaluations")
    ap.add_argument(
        "--bench-steps",
        type=int,
        default=0,
        help="only measure windows/s of this many steps the old and the new way",
    )
    ap.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint.pt")
    ap.add_argument("--checkpoint-minutes", type=float, default=10.0)
    ap.add_argument(
        "--skip-start-eval",
        action="store_true",
        help="no dev evaluation at step 0 (a variant starting from weights another curve has scored: "
        "--train-from below 4 with --init shipped starts with the shipped reader's weights)",
    )
    ap.add_argument(
        "--stop-at-windows",
        type=int,
        default=0,
        help="checkpoint and stop once this many windows are read (after that point's dev evaluation); "
        "the learning rate still follows --epochs' whole schedule, so a variant stopped at N windows "
        "compares with another run's curve at N (0: run to the end)",
    )
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument(
        "--export-checkpoint",
        type=Path,
        default=None,
        help="only export OUT/checkpoint.pt as a reader folder here (training may be running)",
    )
    args = ap.parse_args(argv)
    if args.fp32:
        args.precision = "fp32"
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("onnxruntime").setLevel(logging.ERROR)
    if args.export_checkpoint is not None:
        export_checkpoint(args, args.export_checkpoint)
        return
    if args.bench_steps:
        bench(args, args.bench_steps)
        return
    stop = StopRequest()
    stop.install()
    train(args, stop)


def _iter_lines(path: Path) -> Iterator[str]:
    yield from path.read_text(encoding="utf-8").splitlines()


if __name__ == "__main__":
    main()
    _ = math
