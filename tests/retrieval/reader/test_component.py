import pytest
from haystack import Document

from haygraph.retrieval.reader.component import E5ExtractiveReader

TYPE = "haygraph.retrieval.reader.component.E5ExtractiveReader"


class TestE5ExtractiveReader:
    def test_to_dict(self):
        reader = E5ExtractiveReader(top_k=5, score_threshold=0.2, answers_per_document=2, no_answer=False)
        assert reader.to_dict() == {
            "type": TYPE,
            "init_parameters": {
                "model": "bundled",
                "top_k": 5,
                "score_threshold": 0.2,
                "answers_per_document": 2,
                "no_answer": False,
                "threads": 0,
            },
        }

    def test_round_trip(self):
        reader = E5ExtractiveReader(model="/models/r1", top_k=3)
        again = E5ExtractiveReader.from_dict(reader.to_dict())
        assert again.to_dict() == reader.to_dict()

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"top_k": 0}, "top_k must be > 0"),
            ({"score_threshold": 1.5}, "score_threshold must be in"),
            ({"answers_per_document": 0}, "answers_per_document must be > 0"),
            ({"threads": -1}, "threads must be >= 0"),
        ],
    )
    def test_bad_settings_name_the_value(self, kwargs, message):
        with pytest.raises(ValueError, match=message):
            E5ExtractiveReader(**kwargs)

    def test_no_documents_no_answers_and_no_model_loaded(self):
        reader = E5ExtractiveReader()
        assert reader.run(query="anything?", documents=[]) == {"answers": []}
        assert reader.run(query="anything?", documents=[Document(content="  ")]) == {"answers": []}
        assert reader._reader is None
