"""`benchmarks.reader_data`: the cross-language sources join without changing the rest, split by question."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.eval_reader import squad_rows
from benchmarks.reader_data import CROSS, INCLUDED, assemble


def _row(source: str, qid: str, lang: str, context: str, question: str, answer: str, title: str) -> dict:
    return {
        "id": f"{source}:{qid}", "source": source, "lang": lang, "title": title, "context": context,
        "question": question, "answers": [{"text": answer, "start": context.index(answer)}],
        "is_impossible": False,
    }  # fmt: skip


def _sources(folder: Path) -> Path:
    folder.mkdir()
    for stem in INCLUDED:
        rows = [
            _row(
                stem,
                f"q{k}",
                "en",
                f"Paragraph {k} of {stem}: the hall opens at {k + 7} am.",
                "When?",
                f"{k + 7} am",
                "T",
            )
            for k in range(4)
        ]
        (folder / f"{stem}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    for stem, (pair, _licence) in CROSS.items():
        zh_passage = pair == "en->zh"
        rows = [
            _row(
                stem, f"mlqa{k}", "zh" if zh_passage else "en",
                f"第{k}段：大厅早上{k + 7}点开门。" if zh_passage else f"Part {k}: it opens at {k + 7} am.",
                "When does the hall open?" if zh_passage else "大厅几点开门？",
                f"{k + 7}点" if zh_passage else f"{k + 7} am", f"Hall {k}",
            )
            for k in range(40)
        ]  # fmt: skip
        (folder / f"{stem}.jsonl").write_text(
            "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
        )
    return folder


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_cross_sources_add_a_dev_split_by_question_and_leave_the_same_language_set_alone(tmp_path):
    sources = _sources(tmp_path / "sources")
    assemble(sources, tmp_path / "plain")
    counts = assemble(sources, tmp_path / "cross", cross=True)
    plain, cross = (
        {name: _read(tmp_path / run / f"{name}.jsonl") for name in ("train", "dev")}
        for run in ("plain", "cross")
    )
    for name in ("train", "dev"):
        same_language = sorted(json.dumps(r, sort_keys=True) for r in cross[name] if "pair" not in r)
        assert same_language == sorted(json.dumps(r, sort_keys=True) for r in plain[name])
    assert set(counts) == {*INCLUDED, *CROSS}

    def question_ids(rows: list[dict], pair: str) -> set[str]:
        return {r["id"].split(":", 1)[1].split(":no-")[0] for r in rows if r.get("pair") == pair}

    for pair in ("en->zh", "zh->en"):
        dev, train = question_ids(cross["dev"], pair), question_ids(cross["train"], pair)
        assert dev and train and not dev & train
    # one question is held out in both directions or in neither
    assert question_ids(cross["dev"], "en->zh") == question_ids(cross["dev"], "zh->en")


def test_dev_rows_are_grouped_by_pair_and_scored_in_the_passages_language(tmp_path):
    sources = _sources(tmp_path / "sources")
    assemble(sources, tmp_path / "cross", cross=True)
    rows = squad_rows(tmp_path / "cross" / "dev.jsonl")
    groups = {(r["group"], r["lang"]) for r in rows}
    assert ("en->zh", "zh") in groups and ("zh->en", "en") in groups and ("en", "en") in groups
