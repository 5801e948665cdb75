"""Hand-computed checks of eval.metrics; the working is in the comments."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from haygraph.eval.errors import EvalError, MetricError
from haygraph.eval.metrics import (
    average_precision_per_query,
    evaluate,
    evaluate_per_query,
    hit_rate,
    hit_rate_per_query,
    map_at_k,
    mrr,
    ndcg,
    ndcg_per_query,
    parse_metric,
    precision,
    precision_per_query,
    rank_documents,
    recall,
    recall_per_query,
    reciprocal_rank_per_query,
)

# q1 has graded judgments; d9 is judged non-relevant (grade 0).
# q2 has one relevant document, found at rank 3.
QRELS = {
    "q1": {"d1": 3, "d2": 2, "d3": 1, "d9": 0},
    "q2": {"x": 1},
}
# q1 ranking: d4 (0), d1 (3), d3 (1), d5 (0), d2 (2)  -> relevant at ranks 2, 3, 5
# q2 ranking: y, z, x                                  -> relevant at rank 3
RUN = {
    "q1": {"d2": 0.5, "d1": 0.8, "d4": 0.9, "d5": 0.6, "d3": 0.7},
    "q2": {"x": 0.7, "y": 0.9, "z": 0.8},
}
LOG2 = math.log2


class TestRankDocuments:
    def test_sorts_by_score_descending(self):
        assert rank_documents(RUN["q1"]) == ["d4", "d1", "d3", "d5", "d2"]

    def test_ties_broken_by_doc_id_descending_as_trec_eval(self):
        # trec_eval sorts equal scores by docno descending: "c" > "b" > "a"
        assert rank_documents({"a": 1.0, "c": 1.0, "b": 1.0, "z": 0.5}) == ["c", "b", "a", "z"]

    def test_accepts_numpy_scores_and_rejects_nan(self):
        assert rank_documents({"a": np.float32(0.1), "b": np.float32(0.2)}) == ["b", "a"]
        with pytest.raises(MetricError, match="finite"):
            rank_documents({"a": float("nan")})


class TestNdcg:
    def test_graded_ndcg_hand_computed(self):
        # DCG@5  = 0/log2(2) + 3/log2(3) + 1/log2(4) + 0/log2(5) + 2/log2(6)
        #        = 1.892789 + 0.5 + 0.773706 = 3.166495
        # IDCG@5 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.261860 + 0.5 = 4.761860 (grade 0 ignored)
        # nDCG@5 = 3.166495 / 4.761860 = 0.664970
        expected = (3 / LOG2(3) + 1 / LOG2(4) + 2 / LOG2(6)) / (3 + 2 / LOG2(3) + 1 / LOG2(4))
        assert expected == pytest.approx(0.6649702433)
        assert ndcg_per_query(QRELS, RUN, 5)["q1"] == pytest.approx(expected, abs=1e-12)

    def test_gain_is_linear_not_exponential(self):
        # Cut at 3: DCG = 3/log2(3) + 1/log2(4) = 2.392789; IDCG@3 = 4.761860 -> 0.502491.
        # With exponential gains (2^g - 1) it would be (7/log2(3) + 1/2) / (7 + 3/log2(3) + 1/2) = 0.5234.
        assert ndcg_per_query(QRELS, RUN, 3)["q1"] == pytest.approx(0.5024905202, abs=1e-9)

    def test_mean_over_queries(self):
        # q2 at k=5: DCG = 1/log2(4) = 0.5, IDCG = 1 -> 0.5; mean = (0.664970 + 0.5) / 2 = 0.582485
        assert ndcg(QRELS, RUN, 5) == pytest.approx((0.6649702433 + 0.5) / 2, abs=1e-9)

    def test_k_larger_than_list_equals_full_list(self):
        # Only 5 documents are ranked and 3 are relevant: @10 and @5 are the same.
        assert ndcg_per_query(QRELS, RUN, 10)["q1"] == pytest.approx(0.6649702433, abs=1e-9)

    def test_top_rank_irrelevant_scores_zero_at_one(self):
        assert ndcg_per_query(QRELS, RUN, 1)["q1"] == 0.0


class TestMrr:
    def test_hand_computed(self):
        # q1: first relevant at rank 2 -> 1/2; q2: rank 3 -> 1/3; MRR@10 = (0.5 + 0.3333) / 2 = 0.416667
        assert reciprocal_rank_per_query(QRELS, RUN, 10) == pytest.approx({"q1": 0.5, "q2": 1 / 3})
        assert mrr(QRELS, RUN, 10) == pytest.approx(5 / 12)

    def test_cutoff_excludes_later_ranks(self):
        # @2: q1 still 1/2, q2's hit at rank 3 is cut -> 0; mean 0.25
        assert mrr(QRELS, RUN, 2) == pytest.approx(0.25)


class TestMapAtK:
    def test_hand_computed(self):
        # q1 relevant at ranks 2, 3, 5: P@2 = 1/2, P@3 = 2/3, P@5 = 3/5
        # AP@5 = (0.5 + 0.666667 + 0.6) / 3 relevant = 0.588889
        # q2 relevant at rank 3: AP@5 = (1/3) / 1 = 0.333333; MAP@5 = 0.461111
        assert average_precision_per_query(QRELS, RUN, 5) == pytest.approx({"q1": 0.5888888889, "q2": 1 / 3})
        assert map_at_k(QRELS, RUN, 5) == pytest.approx((0.5888888889 + 1 / 3) / 2)

    def test_divides_by_all_relevant_not_by_found(self):
        # @3: (P@2 + P@3) / 3 relevant = (0.5 + 0.666667) / 3 = 0.388889, not / 2 found = 0.583333
        assert average_precision_per_query(QRELS, RUN, 3)["q1"] == pytest.approx(0.3888888889)


class TestRecall:
    def test_hand_computed(self):
        # q1 @3: d1, d3 of {d1, d2, d3} -> 2/3; q2 @3: x found -> 1; mean 0.833333
        assert recall_per_query(QRELS, RUN, 3) == pytest.approx({"q1": 2 / 3, "q2": 1.0})
        assert recall(QRELS, RUN, 3) == pytest.approx(5 / 6)
        # @2: q1 1/3, q2 0 -> 1/6
        assert recall(QRELS, RUN, 2) == pytest.approx(1 / 6)


class TestHitRate:
    def test_hand_computed(self):
        # @1: neither top document is relevant; @2: q1 hits (d1), q2 not; @3: both hit
        assert hit_rate(QRELS, RUN, 1) == 0.0
        assert hit_rate_per_query(QRELS, RUN, 2) == {"q1": 1.0, "q2": 0.0}
        assert hit_rate(QRELS, RUN, 3) == 1.0


class TestPrecision:
    def test_hand_computed(self):
        # q1 @5: 3 relevant of 5 -> 0.6; q2 @5: 1 relevant, only 3 retrieved, still / 5 -> 0.2
        assert precision_per_query(QRELS, RUN, 5) == pytest.approx({"q1": 0.6, "q2": 0.2})
        assert precision(QRELS, RUN, 5) == pytest.approx(0.4)

    def test_k_larger_than_list_divides_by_k(self):
        # trec_eval P_10 on 5 retrieved with 3 relevant: 3 / 10
        assert precision_per_query(QRELS, RUN, 10)["q1"] == pytest.approx(0.3)


class TestEdgeCases:
    @pytest.mark.parametrize("fn", [hit_rate, mrr, ndcg, recall, precision, map_at_k])
    def test_empty_run_scores_zero(self, fn):
        assert fn(QRELS, {}, 10) == 0.0

    def test_query_missing_from_run_scores_zero_and_counts_in_mean(self):
        run = {"q1": RUN["q1"]}  # q2 missing
        assert mrr(QRELS, run, 10) == pytest.approx(0.25)  # (0.5 + 0) / 2
        assert ndcg_per_query(QRELS, run, 10)["q2"] == 0.0

    def test_query_without_relevant_judgment_scores_zero(self):
        qrels = {"q": {"a": 0}}
        run = {"q": {"a": 1.0}}
        scores = evaluate(qrels, run, ["nDCG@10", "Recall@10", "MAP@10", "MRR@10", "HitRate@10", "P@1"])
        assert set(scores.values()) == {0.0}

    def test_run_documents_outside_qrels_are_ignored_for_queries(self):
        run = {**RUN, "other": {"d1": 1.0}}
        assert mrr(QRELS, run, 10) == pytest.approx(5 / 12)

    def test_inputs_not_mutated(self):
        qrels, run = copy.deepcopy(QRELS), copy.deepcopy(RUN)
        evaluate(qrels, run, ["nDCG@10", "MAP@100", "P@5"])
        ndcg(qrels, run, 3)
        assert qrels == QRELS and run == RUN
        assert list(run["q1"]) == list(RUN["q1"])  # not even reordered

    @pytest.mark.parametrize("k", [0, -1, 2.5, True, "5"])
    def test_invalid_k_raises(self, k):
        with pytest.raises(MetricError, match="k must be a positive integer"):
            ndcg(QRELS, RUN, k)

    def test_empty_qrels_raises(self):
        with pytest.raises(MetricError, match="nothing to average"):
            mrr({}, RUN, 10)


class TestEvaluate:
    def test_parses_names_and_matches_functions(self):
        names = ["nDCG@10", "HitRate@5", "MRR@10", "Recall@100", "MAP@100", "P@5"]
        scores = evaluate(QRELS, RUN, names)
        assert list(scores) == names
        assert scores["nDCG@10"] == ndcg(QRELS, RUN, 10)
        assert scores["HitRate@5"] == hit_rate(QRELS, RUN, 5)
        assert scores["MRR@10"] == mrr(QRELS, RUN, 10)
        assert scores["Recall@100"] == recall(QRELS, RUN, 100)
        assert scores["MAP@100"] == map_at_k(QRELS, RUN, 100)
        assert scores["P@5"] == precision(QRELS, RUN, 5)
        assert all(isinstance(value, float) for value in scores.values())

    def test_keys_are_canonical_whatever_the_case(self):
        assert list(evaluate(QRELS, RUN, ["ndcg@3", "hit_rate@2", "map@5", "precision@5", "r@3"])) == [
            "nDCG@3",
            "HitRate@2",
            "MAP@5",
            "P@5",
            "Recall@3",
        ]

    def test_per_query_variant(self):
        per_query = evaluate_per_query(QRELS, RUN, ["MRR@10"])
        assert per_query == {"MRR@10": pytest.approx({"q1": 0.5, "q2": 1 / 3})}

    @pytest.mark.parametrize("name", ["BLEU@4", "nDCG", "nDCG@", "nDCG@x", "nDCG@0", ""])
    def test_unknown_or_malformed_name_raises_listing_valid(self, name):
        with pytest.raises(MetricError) as info:
            evaluate(QRELS, RUN, [name])
        assert isinstance(info.value, ValueError) and isinstance(info.value, EvalError)
        if name != "nDCG@0":
            assert "nDCG@k" in str(info.value) and "HitRate@k" in str(info.value)

    def test_single_string_is_rejected(self):
        with pytest.raises(MetricError, match="sequence"):
            evaluate(QRELS, RUN, "nDCG@10")

    def test_parse_metric(self):
        spec = parse_metric(" MRR@10 ")
        assert (spec.name, spec.family, spec.k) == ("MRR@10", "mrr", 10)
