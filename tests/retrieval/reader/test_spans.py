import math

import numpy as np

from haygraph.retrieval.reader.spans import null_score, sigmoid, softmax, window_spans


class TestWindowSpans:
    def test_best_span_is_max_start_plus_end_within_context(self):
        start = np.array([9.0, 0.0, 1.0, 5.0, 0.0])
        end = np.array([9.0, 0.0, 0.0, 1.0, 4.0])
        # context rows 1..4: best is start 3 (5) + end 4 (4) = 9; position 0 (no answer) never a span
        spans = window_spans(start, end, (1, 5), top_n=2)
        assert (spans[0].start, spans[0].end, spans[0].score) == (3, 4, 9.0)
        # second: start 3 + end 3 = 6
        assert (spans[1].start, spans[1].end, spans[1].score) == (3, 3, 6.0)

    def test_end_before_start_is_never_a_span(self):
        start = np.array([0.0, 0.0, 10.0])
        end = np.array([0.0, 10.0, 0.0])
        spans = window_spans(start, end, (1, 3), top_n=1)
        # (2, 1) would score 20 but ends before it starts; best legal: (1, 1) = 10 or (2, 2) = 10
        assert spans[0].score == 10.0 and spans[0].start <= spans[0].end

    def test_max_tokens_bounds_the_length(self):
        start = np.array([0.0, 5.0, 0.0, 0.0, 0.0])
        end = np.array([0.0, 0.0, 0.0, 0.0, 5.0])
        spans = window_spans(start, end, (1, 5), top_n=1, max_tokens=2)
        assert spans[0].end - spans[0].start < 2

    def test_empty_context(self):
        assert window_spans(np.zeros(3), np.zeros(3), (2, 2)) == []


def test_null_score_is_first_token():
    assert null_score(np.array([1.5, 9.0]), np.array([2.0, 9.0])) == 3.5


def test_softmax_and_sigmoid():
    p = softmax(np.array([0.0, math.log(3.0)]))
    assert np.allclose(p, [0.25, 0.75])
    assert sigmoid(0.0) == 0.5
    assert sigmoid(-1000.0) == 0.0 and sigmoid(1000.0) == 1.0
