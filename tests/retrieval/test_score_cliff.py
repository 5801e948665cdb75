import copy
import math

import pytest
from haystack import Document

from haygraph.retrieval.errors import ScoreScaleError
from haygraph.retrieval.score_cliff import ScoreCliffCutter, cliff_cut, validate_scores


class TestCliffCut:
    def test_stops_at_first_cliff(self):
        # 0.9 >= 1.0 * 0.5 keeps; 0.4 < 0.9 * 0.5 = 0.45 is the cliff -> keep 2
        assert cliff_cut([1.0, 0.9, 0.4, 0.3]) == 2

    def test_compares_with_previous_not_first(self):
        # 0.6 >= 0.5; 0.35 >= 0.3; 0.2 >= 0.175: a slow decay never forms a cliff
        assert cliff_cut([1.0, 0.6, 0.35, 0.2], max_keep=10) == 4

    def test_ties_never_cut(self):
        assert cliff_cut([0.8, 0.8, 0.8]) == 3

    def test_zero_after_positive_is_a_cliff(self):
        assert cliff_cut([0.6, 0.0, 0.0]) == 1

    def test_all_zero_scores_kept_up_to_max(self):
        # 0 < 0 * 0.5 is false: zeros after zeros are ties
        assert cliff_cut([0.0, 0.0, 0.0], max_keep=2) == 2

    def test_single_item(self):
        assert cliff_cut([0.3]) == 1

    def test_empty(self):
        assert cliff_cut([]) == 0

    def test_max_keep(self):
        assert cliff_cut([1.0] * 7) == 5
        assert cliff_cut([1.0] * 7, max_keep=2) == 2

    def test_min_keep_overrides_cliff(self):
        # keep 2 regardless; then 0.01 < 0.1 * 0.5 = 0.05 is a cliff
        assert cliff_cut([1.0, 0.1, 0.01], min_keep=2) == 2
        assert cliff_cut([1.0, 0.1, 0.01], min_keep=1) == 1

    def test_min_keep_larger_than_list(self):
        assert cliff_cut([1.0, 0.01], min_keep=5) == 2

    def test_drop_exactly_at_boundary_is_kept(self):
        # 0.5 is not below 1.0 * (1 - 0.5) = 0.5
        assert cliff_cut([1.0, 0.5]) == 2
        assert cliff_cut([1.0, 0.4999]) == 1
        # 0.8 * 0.75 evaluates to 0.6000000000000001 in floating point: still a drop of exactly 25%
        assert cliff_cut([0.8, 0.6], drop_ratio=0.25) == 2
        assert cliff_cut([0.8, 0.59], drop_ratio=0.25) == 1

    @pytest.mark.parametrize(
        "scores",
        [[0.5, -0.1], [None, 0.2], [0.9, math.nan], [math.inf, 1.0], [0.2, 0.5], ["0.4"]],
    )
    def test_refuses_bad_scales(self, scores):
        with pytest.raises(ScoreScaleError):
            cliff_cut(scores)

    def test_refusal_names_the_item(self):
        with pytest.raises(ScoreScaleError, match="item 1"):
            validate_scores([0.5, -0.1])

    @pytest.mark.parametrize(
        "kwargs", [{"drop_ratio": 0}, {"drop_ratio": 1}, {"max_keep": 0}, {"min_keep": 0}]
    )
    def test_bad_settings(self, kwargs):
        with pytest.raises(ValueError):
            cliff_cut([1.0], **kwargs)


class TestScoreCliffCutter:
    def _docs(self, scores):
        return [Document(id=f"d{i}", content=f"text {i}", score=s) for i, s in enumerate(scores)]

    def test_run_cuts(self):
        docs = self._docs([0.9, 0.8, 0.2, 0.1])
        out = ScoreCliffCutter().run(documents=docs)["documents"]
        assert [d.id for d in out] == ["d0", "d1"]

    def test_runtime_overrides(self):
        docs = self._docs([0.9, 0.8, 0.2, 0.1])
        # drop_ratio 0.9: cliff below 10% of previous; 0.2 >= 0.08, 0.1 >= 0.02
        assert len(ScoreCliffCutter().run(documents=docs, drop_ratio=0.9)["documents"]) == 4
        assert len(ScoreCliffCutter().run(documents=docs, drop_ratio=0.9, max_keep=3)["documents"]) == 3

    def test_empty_input(self):
        assert ScoreCliffCutter().run(documents=[]) == {"documents": []}

    def test_input_not_mutated(self):
        docs = self._docs([0.9, 0.1])
        before = copy.deepcopy(docs)
        ScoreCliffCutter().run(documents=docs)
        assert docs == before

    def test_raw_cosine_refused(self):
        with pytest.raises(ScoreScaleError):
            ScoreCliffCutter().run(documents=self._docs([0.3, -0.2]))

    def test_to_dict_exact(self):
        assert ScoreCliffCutter(drop_ratio=0.3, max_keep=4, min_keep=2).to_dict() == {
            "type": "haygraph.retrieval.score_cliff.ScoreCliffCutter",
            "init_parameters": {
                "drop_ratio": 0.3,
                "max_keep": 4,
                "min_keep": 2,
                "score_field": None,
                "min_score": 0.0,
            },
        }

    def test_round_trip(self):
        cutter = ScoreCliffCutter.from_dict(
            ScoreCliffCutter(drop_ratio=0.3, max_keep=4, min_keep=2).to_dict()
        )
        assert (cutter.drop_ratio, cutter.max_keep, cutter.min_keep) == (0.3, 4, 2)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"drop_ratio": 1.5},
            {"max_keep": 0},
            {"min_keep": -1},
            {"min_score": -0.1},
            {"min_score": math.nan},
        ],
    )
    def test_init_validation(self, kwargs):
        with pytest.raises(ValueError):
            ScoreCliffCutter(**kwargs)


class TestCutOnMetaScore:
    def _docs(self, relevances, rank_scores=None):
        rank_scores = rank_scores or [0.016 - 0.0001 * i for i in range(len(relevances))]  # RRF-like
        return [
            Document(id=f"d{i}", content=f"text {i}", score=s, meta={"relevance": r})
            for i, (s, r) in enumerate(zip(rank_scores, relevances, strict=True))
        ]

    def test_rrf_scores_never_cut_but_relevance_does(self):
        docs = self._docs([0.9, 0.8, 0.3, 0.2, 0.1])
        assert len(ScoreCliffCutter().run(documents=docs)["documents"]) == 5  # RRF: no cliff
        # on relevance: 0.3 < 0.8 * 0.5 -> cliff after 2
        out = ScoreCliffCutter(score_field="relevance").run(documents=docs)["documents"]
        assert [d.id for d in out] == ["d0", "d1"]

    def test_relevance_may_rise_in_rank_order(self):
        # 0.6 -> 0.9 rises (allowed on a meta score); 0.2 < 0.9 * 0.5 is the cliff
        docs = self._docs([0.6, 0.9, 0.2, 0.15])
        assert len(ScoreCliffCutter(score_field="relevance").run(documents=docs)["documents"]) == 2

    def test_floor_keeps_one_for_a_no_match_query(self):
        # all low and flat: no cliff, but every one is below the floor -> keep min_keep = 1
        docs = self._docs([0.08, 0.07, 0.07, 0.06, 0.06])
        cutter = ScoreCliffCutter(score_field="relevance", min_score=0.2)
        assert [d.id for d in cutter.run(documents=docs)["documents"]] == ["d0"]
        assert cliff_cut([0.9, 0.5, 0.19], min_score=0.2, max_keep=5) == 2

    def test_missing_meta_score_refused(self):
        docs = [Document(id="x", content="x", score=1.0, meta={}), Document(id="y", content="y", score=0.5)]
        with pytest.raises(ScoreScaleError, match="item 0"):
            ScoreCliffCutter(score_field="relevance").run(documents=docs)
