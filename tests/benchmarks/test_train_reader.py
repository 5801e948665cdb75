"""`benchmarks.train_reader`: a run stopped by a signal resumes where it stopped, to the same weights."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.train_reader import Curve, export_checkpoint, parse_args, resolve_precision, train
from haygraph.retrieval.e5_onnx import WEIGHTS_DIR, file_sha256
from haygraph.retrieval.reader.model import READER
from tests.benchmarks.test_reader_init import LEAVE_PASSAGES, LEAVE_QUESTION

FACTS = [
    ("The library opens at 9 am and closes at 6 pm on weekdays.", "When does the library open?", "9 am"),
    ("Parking on level B2 costs 90 EUR a month.", "How much is parking on level B2?", "90 EUR"),
    ("全职员工每年享有25天带薪年假。", "全职员工有多少天年假？", "25天"),
    ("The museum was founded in 1852 by Prince Albert.", "Who founded the museum?", "Prince Albert"),
    (
        "Trains to the airport leave every 15 minutes.",
        "How often do airport trains leave?",
        "every 15 minutes",
    ),
    ("会议室在三楼，可容纳二十人。", "会议室在几楼？", "三楼"),
]


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "train.jsonl"
    rows = []
    for k, (context, question, answer) in enumerate(FACTS):
        rows.append({
            "id": f"q{k}", "source": "toy", "lang": "zh" if "楼" in context or "年假" in context else "en",
            "title": "", "context": context, "question": question,
            "answers": [{"text": answer, "start": context.index(answer)}], "is_impossible": False,
        })  # fmt: skip
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


class StopAfter:
    """A stop request that fires once `n` steps have been started (what SIGTERM sets mid-run)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.asked = 0

    @property
    def signal(self) -> int | None:
        self.asked += 1
        return 15 if self.asked > self.n else None


def _small(data: Path, out: Path, *more: str) -> Any:
    """A tiny run's settings: batches of 2 windows, one thread, float32, resumable; `more` on top."""
    return parse_args([
        "--data", str(data), "--out", str(out), "--batch-size", "2", "--threads", "1",
        "--precision", "fp32", "--resume", *more,
    ])  # fmt: skip


def _args(data: Path, out: Path) -> Any:
    return _small(data, out, "--max-steps", "3", "--log-every", "1", "--eval-every", "4")


def test_precision_auto_is_float32_on_a_cpu_without_bfloat16_units():
    with pytest.raises(ValueError, match="one of auto, bf16, fp32, but got 'fp16'"):
        resolve_precision("fp16", "cpu")
    assert resolve_precision("bf16", "cpu") == "bf16"
    assert resolve_precision("auto", "cuda") == "bf16"
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
    expected = "bf16" if "avx512_bf16" in flags or "amx_bf16" in flags else "fp32"
    assert resolve_precision("auto", "cpu") == expected


@pytest.mark.integration
def test_a_stopped_run_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path):
    import torch

    data = _data(tmp_path)
    whole = tmp_path / "whole"
    train(_args(data, whole))
    split = tmp_path / "split"
    train(_args(data, split), StopAfter(1))  # type: ignore[arg-type]
    stopped = torch.load(split / "checkpoint.pt", weights_only=False)
    assert stopped["step"] == 1 and not (split / "reader_int8.onnx").exists()
    export_checkpoint(_args(data, split), tmp_path / "step1")  # what a running training can ship
    progress = json.loads((tmp_path / "step1" / "reader.json").read_text(encoding="utf-8"))["training"][
        "progress"
    ]
    assert progress["step"] == 1 and progress["steps"] == 3 and progress["init"] == "shipped"
    assert progress["init_sha256"] == file_sha256(WEIGHTS_DIR / READER)  # which "shipped" it started from
    assert 0 < progress["windows_read"] < int(stopped["plan_cuts"][-1]) and 0 < progress["epochs_read"] < 1
    train(_args(data, split))
    a = torch.load(whole / "checkpoint.pt", weights_only=False)
    b = torch.load(split / "checkpoint.pt", weights_only=False)
    assert a["step"] == b["step"] == 3 and a["init"] == b["init"] == "shipped"
    assert a["model"].keys() == b["model"].keys()
    for name, value in a["model"].items():
        assert torch.equal(value, b["model"][name]), name
    assert (split / "reader_int8.onnx").is_file()


@pytest.mark.integration
def test_the_frozen_part_runs_without_dropout_and_leaves_the_models_mode_alone():
    import numpy as np
    import torch

    from benchmarks.train_reader import Step, build_model
    from haygraph.retrieval.e5_vocabulary import E5Vocabulary

    vocab = E5Vocabulary.load()
    model = build_model(5, 4)
    step = Step(model, vocab, 4)
    rows = [
        np.asarray(w.ids, dtype=np.int32)
        for w in vocab.tokens.windows("Who?", ["Prince Albert."], max_length=64, stride=16)
    ]
    for mode in (True, False):
        model.train(mode)
        a, _ = step.lower(rows)
        b, _ = step.lower(rows)
        assert torch.equal(a, b)  # no dropout: the cache's fixed features
        assert model.training is mode and all(m.training is mode for m in model.modules())
    model.train()
    a, _ = step.lower(rows, dropout=True)
    b, _ = step.lower(rows, dropout=True)
    assert not torch.equal(a, b) and model.training  # --no-cache: the shipped run's dropout


@pytest.mark.integration
def test_sigterm_stops_a_running_training_at_a_checkpoint(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    import torch

    data = _data(tmp_path)
    out = tmp_path / "run"
    log = tmp_path / "log.txt"
    cmd = [
        sys.executable, "-m", "benchmarks.train_reader", "--data", str(data), "--out", str(out),
        "--batch-size", "1", "--epochs", "50", "--threads", "1", "--precision", "fp32", "--resume",
        "--log-every", "1",
    ]  # fmt: skip
    root = Path(__file__).resolve().parents[2]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=root, stdout=fh, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        deadline = time.time() + 120
        while "step 1 / " not in log.read_text() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert proc.poll() is None, log.read_text()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert 1 <= state["step"] < 300  # 6 windows x 50 epochs, one a step: stopped long before the end
    assert "checkpoint at step" in log.read_text() and "signal 15" in log.read_text()
    assert not (out / "reader_int8.onnx").exists()


def _curve(out: Path) -> list[list[str]]:
    """The rows of a run's ``curve.csv`` (step, windows, epoch, lang, ...), header left out."""
    return [line.split(",") for line in (out / "curve.csv").read_text().splitlines()[1:]]


@pytest.mark.integration
def test_a_stop_during_a_dev_evaluation_leaves_it_for_the_resumed_run(tmp_path):
    import torch

    data = _data(tmp_path)
    out = tmp_path / "run"
    args = _small(data, out, "--max-steps", "2", "--dev", str(data), "--eval-every", "100")
    train(args, StopAfter(0))  # type: ignore[arg-type]
    assert torch.load(out / "checkpoint.pt", weights_only=False)["step"] == 0
    assert not (out / "curve.csv").exists()
    train(args)
    steps = [row[0] for row in _curve(out)]
    assert steps == ["0", "0", "2", "2"]  # en and zh at the start and at the end
    (dev_cache,) = (out / "cache").glob("dev-f4-*")  # the dev windows' frozen part, kept for the next run
    assert (dev_cache / "done.u8").read_bytes() == b"\x01" * 6  # 6 one-window examples


def test_the_curve_scores_each_multiple_of_eval_every_however_far_batches_overshoot_it():
    curve = Curve.__new__(Curve)  # only the bookkeeping of `maybe`; the scoring is recorded
    curve.every, curve.done_steps, curve.last_windows = 10_000, set(), 0
    scored: list[int] = []
    curve.evaluate = lambda step, windows: scored.append(windows)  # type: ignore[method-assign]
    for step, windows in enumerate([9_990, 10_004, 19_990, 20_019, 29_995, 30_013, 39_999], start=1):
        curve.maybe(step, windows, total=100)
    assert scored == [10_004, 20_019, 30_013]  # 30,013 is 9,994 after 20,019: once left out


@pytest.mark.integration
def test_a_stop_between_evaluations_is_scored_before_it_stops(tmp_path):
    import torch

    data = _data(tmp_path)
    out = tmp_path / "run"
    args = _small(
        data, out, "--epochs", "3", "--stop-at-windows", "3", "--dev", str(data), "--eval-every", "100",
        "--skip-start-eval",
    )  # fmt: skip
    train(args)
    assert [(r[0], r[1]) for r in _curve(out)] == [("2", "4"), ("2", "4")]  # en and zh at the stop, 4 windows
    train(args)  # resumed already past its stop: no step taken, nothing scored twice
    assert torch.load(out / "checkpoint.pt", weights_only=False)["windows"] == 4
    assert len(_curve(out)) == 2


@pytest.mark.integration
def test_a_variant_training_lower_layers_stops_at_its_windows_and_is_exported_whole(tmp_path):
    import numpy as np
    import torch

    from benchmarks.reader_init import shipped_state
    from haygraph.retrieval.reader.model import ReaderModel

    data = _data(tmp_path)
    out = tmp_path / "run"
    args = _small(
        data, out, "--epochs", "3", "--train-from", "3", "--stop-at-windows", "3", "--dev", str(data),
        "--eval-every", "3", "--skip-start-eval",
    )  # fmt: skip
    train(args)
    steps = [row[0] for row in _curve(out)]
    assert steps == ["2", "2"]  # no start point; en and zh where it stopped, before stopping
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert state["step"] == 2 and state["windows"] == 4  # two batches of two, not the three epochs
    assert any(k.startswith("bert.encoder.layer.3.") for k in state["model"])  # layer 3 was trained
    assert not (out / "reader_int8.onnx").exists()
    target = export_checkpoint(args, tmp_path / "export").parent
    info = json.loads((target / "reader.json").read_text(encoding="utf-8"))
    assert info["split_layer"] == 0 and info["training"]["train_from"] == 3  # one graph, from the embeddings
    graph = shipped_state(target / READER)  # its weights read back, dequantized
    assert {int(k.split(".")[3]) for k in graph if k.startswith("bert.encoder.layer.")} == set(range(8))
    trained = state["model"]["bert.encoder.layer.3.output.dense.weight"].numpy()
    step = np.abs(trained).max(axis=1, keepdims=True) / 127  # one int8 step per output channel
    assert (np.abs(graph["bert.encoder.layer.3.output.dense.weight"] - trained) <= step).all()
    (reading,) = ReaderModel(target, threads=1).read(FACTS[0][1], [FACTS[0][0]])
    assert reading.windows == 1 and reading.spans  # the runtime reads it without the shared lower graph


@pytest.mark.integration
def test_a_reader_exported_whole_reads_as_over_the_shared_lower_graph(tmp_path):
    """The shipped weights exported both ways: over ``e5_lower_int8.onnx`` and as one graph from the
    word embeddings (what a run that trained its lower layers ships). The runtime's two paths agree to
    the int8 activations' rounding: the same best spans and margins (equal on this machine)."""
    from benchmarks.reader_init import load_shipped
    from benchmarks.train_reader import build_model, export, write_settings
    from haygraph.retrieval.reader.model import ReaderModel

    model = build_model(8, 4)
    load_shipped(model)
    args = parse_args(["--out", str(tmp_path)])
    readers = {}
    for first in (4, 0):
        folder = tmp_path / f"from{first}"
        folder.mkdir()
        write_settings(folder, export(model, folder, first), args, first=first)
        readers[first] = ReaderModel(folder, threads=1)
    split, whole = (readers[k].read(LEAVE_QUESTION, LEAVE_PASSAGES) for k in (4, 0))
    assert readers[0]._whole and not readers[4]._whole
    for a, b in zip(split, whole, strict=True):
        assert a.spans[0].text == b.spans[0].text
        assert abs(a.margin - b.margin) < 0.01, (a.margin, b.margin)  # equal here, to the digit
