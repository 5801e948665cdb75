from haygraph.eval.qa_metrics import (
    answer_tokens,
    best_score,
    contains_gold,
    exact_match,
    normalize_answer,
    qa_scores,
    token_f1,
)


class TestNormalize:
    def test_squad_rules(self):
        # lower case, punctuation and articles gone, whitespace collapsed (evaluate-v2.0.py)
        assert normalize_answer("The  Denver Broncos!") == "denver broncos"
        assert normalize_answer("an apple, a pear") == "apple pear"

    def test_chinese_keeps_characters_drops_full_width_punctuation(self):
        assert normalize_answer("《战国无双3》，", "zh") == "战国无双3"

    def test_chinese_tokens_are_characters(self):
        # MLQA's mixed segmentation: each CJK character a token, Latin runs by whitespace
        assert answer_tokens("光荣和ω-force", "zh") == ["光", "荣", "和", "ωforce"]


class TestScores:
    def test_f1_worked_example(self):
        # pred "denver broncos team" vs gold "denver broncos": common 2, P 2/3, R 1 -> F1 0.8
        assert round(token_f1("Denver Broncos team", "the Denver Broncos"), 6) == 0.8

    def test_chinese_f1_by_character(self):
        # pred 村雨城 vs gold 谜之村雨城: common 3, P 1, R 3/5 -> F1 0.75
        assert round(token_f1("村雨城", "谜之村雨城", "zh"), 6) == 0.75

    def test_exact_match(self):
        assert exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
        assert exact_match("Eiffel", "eiffel tower") == 0.0

    def test_unanswerable_scores_only_an_empty_prediction(self):
        assert best_score("", []) == (1.0, 1.0)
        assert best_score(".", []) == (1.0, 1.0)  # normalises to empty, as the official script does
        assert best_score("Paris", []) == (0.0, 0.0)

    def test_best_over_golds(self):
        assert best_score("Paris", ["London", "Paris"]) == (1.0, 1.0)

    def test_totals_split_has_and_no_answer(self):
        golds = {"a": ["Paris"], "b": [], "c": ["blue sky"]}
        preds = {"a": "Paris", "b": "something", "c": "sky"}
        out = qa_scores(preds, golds)
        assert out["total"] == 3
        assert out["HasAns_total"] == 2 and out["NoAns_total"] == 1
        # a: 1/1, c: EM 0, F1 2*(1*0.5)/(1.5)=0.6667, b: 0
        assert round(out["f1"], 4) == round(100 * (1 + 2 / 3) / 3, 4)
        assert out["NoAns_exact"] == 0.0
        assert out["HasAns_exact"] == 50.0

    def test_missing_prediction_is_empty(self):
        assert qa_scores({}, {"b": []})["exact"] == 100.0

    def test_contains_gold(self):
        assert contains_gold("The fee is 90 EUR per month.", ["90 EUR"])
        assert not contains_gold("The fee is 120 EUR.", ["90 EUR"])
        assert contains_gold("婚假 13 天。", ["13 天"], "zh")
