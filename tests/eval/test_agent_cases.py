"""Tests for the answerability protocols: deterministic splits and samples, gold removal, handbook set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.eval.agent_cases import (
    cmrc_protocol,
    handbook_paraphrase_protocol,
    handbook_protocol,
    passage_part,
    scifact_protocol,
)
from haygraph.eval.errors import EvalError
from haygraph.retrieval import sample_handbook_path


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


@pytest.fixture
def cmrc(tmp_path: Path) -> Path:
    passages = [f"P{i}" for i in range(40)]
    _write(tmp_path / "corpus.jsonl", [{"_id": p, "title": p, "text": f"第{p}段的内容。"} for p in passages])
    queries = [{"_id": f"{p}_Q{k}", "text": f"{p}问题{k}？"} for p in passages for k in range(2)]
    _write(tmp_path / "queries.jsonl", queries)
    _write(tmp_path / "answers.jsonl", [{"_id": q["_id"], "answers": [f"答案{q['_id']}"]} for q in queries])
    (tmp_path / "qrels").mkdir()
    lines = ["query-id\tcorpus-id\tscore"] + [
        f"{q['_id']}\t{str(q['_id']).split('_')[0]}\t1" for q in queries
    ]
    (tmp_path / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tmp_path


class TestCmrc:
    def test_parts_are_disjoint_and_deterministic(self, cmrc: Path) -> None:
        tune = cmrc_protocol(cmrc, "tune", n=6)
        test = cmrc_protocol(cmrc, "test", n=6)
        tune_gold = {c.gold_sources[0] for c in tune.cases}
        test_gold = {c.gold_sources[0] for c in test.cases}
        assert not tune_gold & test_gold
        assert all(passage_part(g) == "tune" for g in tune_gold)
        assert cmrc_protocol(cmrc, "tune", n=6).cases == tune.cases

    def test_half_absent_and_their_gold_removed_from_the_store(self, cmrc: Path) -> None:
        protocol = cmrc_protocol(cmrc, "test", n=8)
        stored = {d.meta["source_id"] for d in protocol.documents or []}
        absent = [c for c in protocol.cases if c.absent]
        assert len(absent) == len(protocol.cases) // 2
        assert all(c.gold_sources[0] not in stored for c in absent)
        assert all(c.gold_sources[0] in stored for c in protocol.cases if not c.absent)
        assert all(passage_part(s) == "test" for s in stored)  # distractors come from the same part
        assert all(c.answers == (f"答案{c.id}",) for c in protocol.cases)

    def test_bad_n_and_missing_files_are_eval_errors(self, cmrc: Path, tmp_path: Path) -> None:
        with pytest.raises(EvalError, match="--n must be >= 2"):
            cmrc_protocol(cmrc, "test", n=1)
        with pytest.raises(EvalError, match="not found"):
            cmrc_protocol(tmp_path / "nowhere", "test", n=4)


class TestScifact:
    def test_absent_claims_lose_their_gold_documents(self, tmp_path: Path) -> None:
        docs = [{"_id": f"d{i}", "title": "", "text": f"abstract {i}"} for i in range(30)]
        _write(tmp_path / "corpus.jsonl", docs)
        _write(tmp_path / "queries.jsonl", [{"_id": f"q{i}", "text": f"claim {i}"} for i in range(10)])
        (tmp_path / "qrels").mkdir()
        rows = ["query-id\tcorpus-id\tscore"] + [f"q{i}\td{i}\t1" for i in range(10)]
        (tmp_path / "qrels" / "test.tsv").write_text("\n".join(rows) + "\n")
        protocol = scifact_protocol(tmp_path, "test", n=10, distractors=5)
        stored = {d.meta["source_id"] for d in protocol.documents or []}
        for case in protocol.cases:
            assert (case.gold_sources[0] in stored) is (not case.absent)
        assert len(stored) == 5 + 5  # five present golds and five distractors


class TestHandbook:
    def test_at_least_60_labelled_with_20_near_misses(self) -> None:
        protocol = handbook_protocol(sample_handbook_path(), "all")
        assert len(protocol.cases) >= 60
        assert sum(c.absent for c in protocol.cases) >= 20
        assert all(c.answers and c.gold_sources for c in protocol.cases if not c.absent)
        assert protocol.paths == [sample_handbook_path()]
        test = handbook_protocol(sample_handbook_path(), "test")
        assert 0 < len(test.cases) < len(protocol.cases)


class TestHandbookParaphrase:
    def test_parts_split_the_set_over_the_handbook(self) -> None:
        whole = handbook_paraphrase_protocol(sample_handbook_path(), "all")
        tune = handbook_paraphrase_protocol(sample_handbook_path(), "tune")
        test = handbook_paraphrase_protocol(sample_handbook_path(), "test")
        assert whole.name == "handbook-paraphrase" and whole.paths == [sample_handbook_path()]
        assert {c.id for c in tune.cases} | {c.id for c in test.cases} == {c.id for c in whole.cases}
        assert not {c.id for c in tune.cases} & {c.id for c in test.cases}
        assert all(c.absent == (not c.gold_sources) for c in whole.cases)
        assert {c.lang for c in test.cases} == {"en", "zh"}


def test_cmrc_distractor_cap_keeps_present_golds(cmrc: Path) -> None:
    protocol = cmrc_protocol(cmrc, "test", n=6, distractors=2)
    stored = {d.meta["source_id"] for d in protocol.documents or []}
    present = {c.gold_sources[0] for c in protocol.cases if not c.absent}
    assert present <= stored and len(stored) == len(present) + 2
