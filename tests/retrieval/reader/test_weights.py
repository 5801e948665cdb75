"""The shipped reader: its checksum, the loader's refusals, and real reading in both languages."""

import hashlib
import json
import shutil

import pytest
from haystack import Document

from haygraph.retrieval.e5_onnx import WEIGHTS_DIR
from haygraph.retrieval.errors import ModelUnavailableError
from haygraph.retrieval.reader.component import E5ExtractiveReader
from haygraph.retrieval.reader.model import READER, ReaderModel

EXPECTED_SHA256 = "b06d99352c16e9b3dddcc4694b80749046da87452dcb316243a66f7cdad83a46"
"""The graph `python -m benchmarks.train_reader` exported (pinned here, in reader.json and weights.json)."""

MB = 1_000_000


def test_checksum_and_size():
    path = WEIGHTS_DIR / READER
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    settings = json.loads((WEIGHTS_DIR / "reader.json").read_text(encoding="utf-8"))
    manifest = json.loads((WEIGHTS_DIR / "weights.json").read_text(encoding="utf-8"))
    assert digest == EXPECTED_SHA256 == settings["sha256"] == manifest["files"][READER]["sha256"]
    assert path.stat().st_size <= 30 * MB  # the reader's own layers; the e5 lower graph is shared


def test_a_damaged_reader_is_refused_with_the_fix(tmp_path):
    shutil.copy(WEIGHTS_DIR / "reader.json", tmp_path / "reader.json")
    shutil.copy(WEIGHTS_DIR / READER, tmp_path / READER)
    with (tmp_path / READER).open("r+b") as fh:
        fh.seek(2048)
        fh.write(b"\x00" * 16)
    with pytest.raises(ModelUnavailableError, match=r"damaged.*train_reader"):
        ReaderModel(tmp_path).warm_up()


def test_a_missing_reader_names_the_fix(tmp_path):
    with pytest.raises(ModelUnavailableError, match=r"missing.*query\.reader\.model"):
        ReaderModel(tmp_path).warm_up()


LEAVE = (
    "Annual leave. Full-time employees receive 25 days of paid annual leave per calendar year. "
    "Up to 5 unused days may be carried over to the next year."
)
LEAVE_ZH = "年假。全职员工每个日历年享有25天带薪年假。未使用的年假最多可结转5天到下一年。"
PARKING = "Parking. Staff park in the underground garage; the monthly fee on level B2 is 90 EUR."


@pytest.mark.integration
class TestReading:
    @pytest.fixture(scope="class")
    def reader(self):
        model = ReaderModel()
        model.warm_up()
        return model

    @pytest.mark.parametrize(
        ("question", "passage", "answer"),
        [
            ("How many days of paid annual leave do full-time employees get?", LEAVE, "25"),
            ("全职员工每年有多少天带薪年假？", LEAVE_ZH, "25"),
            ("全职员工每年有多少天带薪年假？", LEAVE, "25"),  # a Chinese question over English text
            ("How many days of paid annual leave do full-time employees get?", LEAVE_ZH, "25"),
        ],
    )
    def test_the_span_holds_the_answer(self, reader, question, passage, answer):
        (reading,) = reader.read(question, [passage])
        assert reading.best is not None and answer in reading.best.text
        assert passage[reading.best.start : reading.best.end] == reading.best.text
        assert reading.margin > 0

    def test_the_passage_that_holds_it_reads_above_one_that_does_not(self, reader):
        question = "How many days of paid annual leave do full-time employees get?"
        leave, parking = reader.read(question, [LEAVE, PARKING])
        assert leave.margin > parking.margin

    def test_the_component_in_a_pipeline_shape(self):
        reader = E5ExtractiveReader(top_k=2)
        docs = [Document(content=PARKING, id="p"), Document(content=LEAVE, id="l")]
        answers = reader.run(query="What is the monthly parking fee on level B2?", documents=docs)["answers"]
        best = answers[0]
        assert best.document is not None and best.document.id == "p" and "90" in (best.data or "")
        assert best.document_offset is not None
        assert PARKING[best.document_offset.start : best.document_offset.end] == best.data
        assert answers[-1].data is None and 0.0 <= answers[-1].score <= 1.0
