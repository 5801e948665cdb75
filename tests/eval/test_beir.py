"""Tests of eval.beir: the real shared datasets (counts from their README) and malformed files."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

from haygraph.eval.beir import BeirDataset, load_beir
from haygraph.eval.errors import DatasetError, EvalError
from haygraph.eval.index_prep import datasets_root
from haygraph.retrieval.converters import read_beir_corpus

DATASETS = datasets_root()

# name, split -> (docs, queries, judgments, grades): /work/shared/datasets/README.md and scifact/README.md
EXPECTED = {
    ("scifact", "test"): (5183, 300, 339, {1}),
    ("scifact", "train"): (5183, 809, 919, {1}),
    ("cmrc2018", "test"): (848, 3219, 3219, {1}),
    ("cranfield", "test"): (1400, 225, 1612, {1, 2, 3, 4}),
    ("cisi", "test"): (1460, 76, 3114, {1}),
    ("cacm", "test"): (3204, 52, 796, {1}),
    ("med", "test"): (1033, 30, 696, {1}),
}


def _shared(name: str) -> Path:
    folder = DATASETS / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"dataset {name!r} not found at {folder} (set HAYGRAPH_DATASETS to the datasets folder)")
    return folder


def _write_dataset(
    root: Path,
    corpus: list[str] | None = None,
    queries: list[str] | None = None,
    qrels: list[str] | None = None,
    split: str = "test",
) -> Path:
    """Write a small BEIR folder; each list holds raw lines so tests can corrupt any of them."""
    if corpus is None:
        corpus = [
            json.dumps({"_id": "d1", "title": "Cats", "text": "Cats purr."}),
            json.dumps({"_id": "d2", "title": "", "text": "Dogs bark."}),
            json.dumps({"_id": "d3", "title": "Only a title", "text": ""}),
        ]
    if queries is None:
        queries = [
            json.dumps({"_id": "q1", "text": "what purrs"}),
            json.dumps({"_id": "q2", "text": "what barks"}),
            json.dumps({"_id": "q3", "text": "unjudged"}),
        ]
    if qrels is None:
        qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t2", "q1\td2\t0", "q2\td2\t1"]
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / f"{split}.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return root


class TestLoadBeirSharedDatasets:
    @pytest.mark.parametrize(("name", "split"), list(EXPECTED))
    def test_counts_match_readme(self, name, split):
        docs, queries, judgments, grades = EXPECTED[(name, split)]
        dataset = load_beir(_shared(name), split)
        assert (dataset.name, dataset.split) == (name, split)
        assert len(dataset.corpus) == docs
        assert len(dataset.queries) == queries
        assert dataset.num_judgments == judgments
        assert {g for docs_ in dataset.qrels.values() for g in docs_.values()} == grades
        assert set(dataset.qrels) == set(dataset.queries)

    def test_scifact_train_differs_from_test(self):
        folder = _shared("scifact")
        test, train = load_beir(folder, "test"), load_beir(folder, "train")
        assert train.queries["0"].startswith("0-dimensional biomaterials lack")
        assert "0" not in test.queries and "1" in test.queries

    def test_split_subfolder_itself_loads_with_its_split(self):
        dataset = load_beir(_shared("scifact") / "train", split="train")
        assert (dataset.name, len(dataset.queries), dataset.num_judgments) == ("scifact", 809, 919)

    def test_split_subfolder_with_other_split_explains(self):
        with pytest.raises(DatasetError, match=r"split='train'"):
            load_beir(_shared("scifact") / "train")

    def test_scifact_loads_fast(self):
        folder = _shared("scifact")
        start = time.perf_counter()
        load_beir(folder)
        assert time.perf_counter() - start < 2.0

    def test_cmrc2018_keeps_chinese_text(self):
        dataset = load_beir(_shared("cmrc2018"))
        assert dataset.queries["DEV_0_QUERY_0"] == "《战国无双3》是由哪两个公司合作开发的？"
        assert dataset.qrels["DEV_0_QUERY_0"] == {"DEV_0": 1}


class TestLoadBeirRules:
    def test_header_skipped_grade_zero_dropped_unjudged_query_dropped(self, tmp_path):
        dataset = load_beir(_write_dataset(tmp_path / "toy"))
        assert isinstance(dataset, BeirDataset)
        assert dataset.name == "toy"
        assert dataset.qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}  # q1/d2 grade 0 dropped
        assert dataset.queries == {"q1": "what purrs", "q2": "what barks"}  # q3 had no judgment
        assert dataset.corpus["d1"].content == "Cats\n\nCats purr."
        assert dataset.corpus["d1"].meta == {"source_id": "d1", "source": "d1", "title": "Cats"}

    def test_query_whose_only_judgments_are_zero_is_dropped(self, tmp_path):
        folder = _write_dataset(
            tmp_path / "t", qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", "q2\td2\t0"]
        )
        dataset = load_beir(folder)
        assert list(dataset.queries) == ["q1"] and "q2" not in dataset.qrels

    def test_headerless_qrels_keeps_first_line(self, tmp_path):
        dataset = load_beir(_write_dataset(tmp_path / "t", qrels=["q1\td1\t1", "q2\td2\t1"]))
        assert dataset.num_judgments == 2

    def test_integer_ids_and_null_title_accepted(self, tmp_path):
        folder = _write_dataset(
            tmp_path / "t",
            corpus=[json.dumps({"_id": 7, "title": None, "text": "seven"})],
            queries=[json.dumps({"_id": 1, "text": "which"})],
            qrels=["query-id\tcorpus-id\tscore", "1\t7\t1"],
        )
        dataset = load_beir(folder)
        assert [(i, d.content) for i, d in dataset.corpus.items()] == [("7", "seven")]
        assert dataset.qrels == {"1": {"7": 1}}

    def test_byte_order_mark_and_crlf_tolerated(self, tmp_path):
        folder = _write_dataset(tmp_path / "t")
        (folder / "qrels" / "test.tsv").write_bytes(
            b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\nq1\td1\t1\r\n"
        )
        assert load_beir(folder).qrels == {"q1": {"d1": 1}}

    def test_corpus_is_read_as_the_index_reads_it(self, tmp_path):
        # one reader for indexing and evaluation: title and text joined by a blank line
        folder = _write_dataset(tmp_path / "t")
        texts = {i: d.content for i, d in load_beir(folder).corpus.items()}
        assert texts == {"d1": "Cats\n\nCats purr.", "d2": "Dogs bark.", "d3": "Only a title"}
        indexed = {d.meta["source_id"]: d.content for d in read_beir_corpus(folder / "corpus.jsonl")}
        assert indexed == texts

    def test_split_subfolder_layout(self, tmp_path):
        folder = _write_dataset(tmp_path / "t")
        (folder / "dev").mkdir()
        (folder / "dev" / "queries.jsonl").write_text(json.dumps({"_id": "qd", "text": "dev query"}) + "\n")
        (folder / "dev" / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nqd\td3\t1\n")
        dataset = load_beir(folder, "dev")
        assert dataset.queries == {"qd": "dev query"} and dataset.qrels == {"qd": {"d3": 1}}


class TestLoadBeirErrors:
    def test_bad_json_line_names_file_and_line(self, tmp_path):
        corpus = [json.dumps({"_id": "d1", "text": "ok"}), "", '{"_id": "d2", "text": ']
        folder = _write_dataset(tmp_path / "t", corpus=corpus)
        with pytest.raises(DatasetError) as info:
            load_beir(folder)
        assert info.value.line == 3  # the blank line still counts
        assert info.value.path == folder / "corpus.jsonl"
        assert str(info.value).startswith(f"{folder / 'corpus.jsonl'}:3: malformed JSON")
        assert isinstance(info.value, EvalError)

    def test_duplicate_document_names_line(self, tmp_path):
        corpus = [json.dumps({"_id": "d1", "text": "a"}), json.dumps({"_id": "d1", "text": "b"})]
        with pytest.raises(DatasetError, match="duplicate document id 'd1'") as info:
            load_beir(_write_dataset(tmp_path / "t", corpus=corpus, qrels=["q1\td1\t1"]))
        assert (info.value.path.name, info.value.line) == ("corpus.jsonl", 2)

    @pytest.mark.parametrize(
        ("line", "message"),
        [
            ("q1\td1", "expected 3 tab-separated columns"),
            ("q1\td1\t1\textra", "got 4"),
            ("q1\td1\t1.5", "score must be an integer"),
            ("q1\td1\thigh", "score must be an integer"),
            ("q1\td1\t2", "conflicting grades"),
        ],
    )
    def test_bad_qrels_line_names_line(self, tmp_path, line, message):
        folder = _write_dataset(tmp_path / "t", qrels=["query-id\tcorpus-id\tscore", "q1\td1\t1", line])
        with pytest.raises(DatasetError, match=message) as info:
            load_beir(folder)
        assert info.value.line == 3 and "test.tsv:3: " in str(info.value)

    @pytest.mark.parametrize(
        ("record", "message"),
        [
            ({"text": "no id"}, '"_id"'),
            ({"_id": "q9"}, 'field "text" must be a string'),
            ({"_id": "q9", "text": 5}, 'field "text" must be a string'),
            (["not", "an", "object"], "expected a JSON object"),
            ({"_id": "q1", "text": "again"}, "duplicate query id"),
        ],
    )
    def test_bad_query_record_names_line(self, tmp_path, record, message):
        queries = [json.dumps({"_id": "q1", "text": "a"}), json.dumps({"_id": "q2", "text": "b"})]
        folder = _write_dataset(tmp_path / "t", queries=[*queries, json.dumps(record)])
        with pytest.raises(DatasetError, match=message) as info:
            load_beir(folder)
        assert info.value.line == 3

    def test_invalid_utf8_names_line(self, tmp_path):
        folder = _write_dataset(tmp_path / "t")
        (folder / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "\xff"}\n')
        with pytest.raises(DatasetError, match="UTF-8") as info:
            load_beir(folder)
        assert info.value.line == 2

    def test_unknown_ids_raise_when_strict(self, tmp_path):
        qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\tghost\t1", "nobody\td1\t1"]
        folder = _write_dataset(tmp_path / "t", qrels=qrels)
        with pytest.raises(DatasetError, match=r"1 unknown query ids \('nobody'\).*1 unknown document ids"):
            load_beir(folder)

    def test_unknown_ids_dropped_with_warning_when_lenient(self, tmp_path, caplog):
        qrels = ["query-id\tcorpus-id\tscore", "q1\td1\t1", "q1\tghost\t1", "nobody\td1\t1", "q2\tghost\t1"]
        folder = _write_dataset(tmp_path / "t", qrels=qrels)
        with caplog.at_level(logging.WARNING, logger="haygraph.eval.beir"):
            dataset = load_beir(folder, strict=False)
        assert dataset.qrels == {"q1": {"d1": 1}}
        assert list(dataset.queries) == ["q1"]  # q2 lost its only judgment
        assert "dropping judgments" in caplog.text

    def test_missing_folder_lists_expected_files(self, tmp_path):
        with pytest.raises(
            DatasetError, match=r"not found.*corpus\.jsonl, queries\.jsonl and qrels/test\.tsv"
        ):
            load_beir(tmp_path / "absent")

    def test_missing_split_lists_available_splits(self, tmp_path):
        folder = _write_dataset(tmp_path / "t")
        with pytest.raises(DatasetError, match=r"qrels/dev\.tsv.*splits found in .*: test"):
            load_beir(folder, "dev")

    def test_missing_corpus_named(self, tmp_path):
        folder = _write_dataset(tmp_path / "t")
        (folder / "corpus.jsonl").unlink()
        with pytest.raises(DatasetError, match=r"missing .*corpus\.jsonl"):
            load_beir(folder)

    @pytest.mark.parametrize("split", ["", "../x"])
    def test_invalid_split_name(self, tmp_path, split):
        with pytest.raises(DatasetError, match="invalid split"):
            load_beir(_write_dataset(tmp_path / "t"), split)
