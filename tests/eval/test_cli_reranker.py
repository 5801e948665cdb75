"""Tests for eval.cli_reranker: `haygraph train-reranker` flags and its one-line errors (exit 2).

Every bad input here is refused before any model is loaded or anything is written.
"""

from __future__ import annotations

import json

import pytest

from haygraph.adapters.cli.main import main
from tests.eval.test_reranker_data import tiny_beir


def _run(capsys, *argv):
    code = main(["train-reranker", *argv])
    err = capsys.readouterr().err
    return code, err


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


class TestParser:
    def test_defaults(self):
        from haygraph.adapters.cli.main import build_parser

        args = build_parser().parse_args(["train-reranker", "--dataset", "scifact", "--out", "m"])
        assert (args.split, args.epochs, args.negatives, args.depth, args.dev_fraction) == (
            "train",
            1.0,
            6,
            30,
            0.1,
        )
        assert args.max_minutes is None and args.threads is None

    def test_flag_defaults_are_the_settings_defaults(self):
        # the flags repeat TrainSettings' defaults (registering imports nothing heavy): they must agree
        from haygraph.adapters.cli.main import build_parser
        from haygraph.eval.cli_reranker import _settings
        from haygraph.eval.reranker_training import TrainSettings

        args = build_parser().parse_args(["train-reranker", "--dataset", "scifact", "--out", "m"])
        assert _settings(args) == TrainSettings()

    def test_out_is_required(self, capsys):
        with pytest.raises(SystemExit):
            main(["train-reranker", "--dataset", "scifact"])
        assert "--out" in capsys.readouterr().err


class TestBadInput:
    def test_dataset_without_a_train_split(self, tmp_path, capsys):
        ds = tiny_beir(tmp_path / "ds", {"test": "q1\td1\t1\n"})
        code, err = _run(capsys, "--dataset", str(ds), "--out", str(tmp_path / "out"))
        line = _one_error_line(err)
        assert code == 2 and "train.tsv" in line and "test" in line
        assert not (tmp_path / "out").exists()

    def test_split_without_qrels(self, tmp_path, capsys):
        ds = tiny_beir(tmp_path / "ds", {"train": ""})
        code, err = _run(capsys, "--dataset", str(ds), "--out", str(tmp_path / "out"))
        assert code == 2 and "has no relevance judgments" in _one_error_line(err)
        assert not (tmp_path / "out").exists()

    def test_test_split_refused(self, tmp_path, capsys):
        ds = tiny_beir(tmp_path / "ds", {"test": "q1\td1\t1\n"})
        code, err = _run(capsys, "--dataset", str(ds), "--split", "test", "--out", str(tmp_path / "out"))
        assert code == 2 and "never trained on the test split" in _one_error_line(err)

    def test_out_is_a_file(self, tmp_path, capsys):
        ds = tiny_beir(tmp_path / "ds", {"train": "q1\td1\t1\n"})
        (tmp_path / "model").write_text("not a folder")
        code, err = _run(capsys, "--dataset", str(ds), "--out", str(tmp_path / "model"))
        assert code == 2 and "--out" in (line := _one_error_line(err)) and "is a file" in line
        assert (tmp_path / "model").read_text() == "not a folder"

    def test_out_is_someone_elses_folder(self, tmp_path, capsys):
        ds = tiny_beir(tmp_path / "ds", {"train": "q1\td1\t1\n"})
        (tmp_path / "docs").mkdir()
        (tmp_path / "docs" / "notes.txt").write_text("mine")
        code, err = _run(capsys, "--dataset", str(ds), "--out", str(tmp_path / "docs"))
        assert code == 2 and "holds no train-reranker run" in _one_error_line(err)
        assert [p.name for p in (tmp_path / "docs").iterdir()] == ["notes.txt"]

    @pytest.mark.parametrize(
        ("flag", "value", "message"),
        [
            ("--negatives", "0", "--negatives must be >= 1, but got 0"),
            ("--dev-fraction", "0.7", "--dev-fraction must be in [0, 0.5], but got 0.7"),
            ("--epochs", "0", "--epochs must be > 0, but got 0.0"),
            ("--max-length", "4096", "--max-length must be in [16, 512], but got 4096"),
            ("--max-minutes", "-1", "--max-minutes must be > 0, but got -1.0"),
        ],
    )
    def test_bad_settings_name_the_flag(self, tmp_path, capsys, flag, value, message):
        ds = tiny_beir(tmp_path / "ds", {"train": "q1\td1\t1\n"})
        code, err = _run(capsys, "--dataset", str(ds), "--out", str(tmp_path / "out"), flag, value)
        assert code == 2 and message in _one_error_line(err)

    def test_missing_dataset(self, tmp_path, capsys):
        code, err = _run(capsys, "--dataset", str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
        assert code == 2 and "dataset not found" in _one_error_line(err)


class TestRerankerFlagOfEval:
    def test_a_directory_that_is_not_a_cross_encoder(self, tmp_path, capsys):
        (tmp_path / "emb").mkdir()
        (tmp_path / "emb" / "config.json").write_text(json.dumps({"architectures": ["BertModel"]}))
        code = main(
            [
                "eval",
                "--dataset",
                "med",
                "--configs",
                "hybrid-minmax+rerank",
                "--reranker",
                str(tmp_path / "emb"),
            ]
        )
        line = _one_error_line(capsys.readouterr().err)
        assert code == 2 and "--reranker" in line and "not a cross-encoder" in line
        assert "haygraph train-reranker" in line
