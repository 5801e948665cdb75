import copy

import pytest
from haystack import Document

from haygraph.retrieval.fusion import FusionMethod, HybridFusion, minmax_scores, rrf_scores, served_share


def _doc(doc_id, score, **meta):
    return Document(id=doc_id, content=f"content of {doc_id}", score=score, meta=meta)


class TestRrfScores:
    def test_hand_computed(self):
        # bm25 ranks a=1 b=2 c=3; dense ranks b=1 d=2; weights 0.3 / 0.7; k = 60
        # a = 0.3/61                = 0.004918032786885246
        # b = 0.3/62 + 0.7/61       = 0.004838709677419355 + 0.011475409836065573 = 0.016314119513484928
        # c = 0.3/63                = 0.004761904761904762
        # d = 0.7/62                = 0.011290322580645161
        fused = rrf_scores([["a", "b", "c"], ["b", "d"]], [0.3, 0.7], k=60)
        assert fused == pytest.approx(
            {
                "a": 0.004918032786885246,
                "b": 0.016314119513484928,
                "c": 0.004761904761904762,
                "d": 0.011290322580645161,
            }
        )

    def test_weight_count_mismatch(self):
        with pytest.raises(ValueError, match="one weight per list"):
            rrf_scores([["a"], ["b"]], [1.0])

    def test_negative_weight(self):
        with pytest.raises(ValueError, match="non-negative"):
            rrf_scores([["a"], ["b"]], [1.0, -0.5])


class TestMinmaxScores:
    def test_hand_computed(self):
        # bm25: a=10 b=6 c=2 -> (s-2)/8: a=1, b=0.5, c=0
        # dense: b=0.9 d=0.5 -> (s-0.5)/0.4: b=1, d=0
        # weights 0.5/0.5: a=0.5, b=0.25+0.5=0.75, c=0, d=0
        fused = minmax_scores([{"a": 10.0, "b": 6.0, "c": 2.0}, {"b": 0.9, "d": 0.5}], [0.5, 0.5])
        assert fused == pytest.approx({"a": 0.5, "b": 0.75, "c": 0.0, "d": 0.0})

    def test_equal_scores_map_to_one(self):
        # span 0 -> every document of that list gets 1.0 * weight
        assert minmax_scores([{"x": 0.7, "y": 0.7}, {}], [0.4, 0.6]) == pytest.approx({"x": 0.4, "y": 0.4})

    def test_negative_cosines_are_fine(self):
        # dense: -0.2 -> 0, 0.6 -> 1
        assert minmax_scores([{}, {"p": -0.2, "q": 0.6}], [0.5, 0.5]) == pytest.approx({"p": 0.0, "q": 0.5})


class TestHybridFusion:
    def test_rrf_ranking_and_scores(self):
        bm25 = [
            _doc("a", 9.0, bm25_score=9.0),
            _doc("b", 5.0, bm25_score=5.0),
            _doc("c", 1.0, bm25_score=1.0),
        ]
        dense = [_doc("b", 0.8, dense_score=0.8), _doc("d", 0.7, dense_score=0.7)]
        out = HybridFusion(weights=(0.3, 0.7)).run(bm25_documents=bm25, dense_documents=dense)["documents"]
        assert [d.id for d in out] == ["b", "d", "a", "c"]
        assert out[0].score == pytest.approx(0.3 / 62 + 0.7 / 61)
        assert out[0].meta["fusion_score"] == out[0].score

    def test_missing_from_one_list_keeps_known_scores(self):
        bm25 = [_doc("a", 9.0, bm25_score=9.0), _doc("b", 5.0, bm25_score=5.0)]
        dense = [_doc("b", 0.8, dense_score=0.8), _doc("d", 0.7, dense_score=0.7)]
        out = {d.id: d for d in HybridFusion().run(bm25_documents=bm25, dense_documents=dense)["documents"]}
        assert out["b"].meta["bm25_score"] == 9.0 - 4.0 and out["b"].meta["dense_score"] == 0.8
        assert "dense_score" not in out["a"].meta and out["a"].meta["bm25_score"] == 9.0
        assert "bm25_score" not in out["d"].meta and out["d"].meta["dense_score"] == 0.7

    def test_minmax_method(self):
        bm25 = [_doc("a", 10.0), _doc("b", 6.0), _doc("c", 2.0)]
        dense = [_doc("b", 0.9), _doc("d", 0.5)]
        out = HybridFusion(method="minmax").run(bm25_documents=bm25, dense_documents=dense)["documents"]
        assert [(d.id, round(d.score, 6)) for d in out] == [("b", 0.75), ("a", 0.5), ("c", 0.0), ("d", 0.0)]

    def test_content_hash_dedup_never_crosses_tenants(self):
        fusion = HybridFusion(method="rrf")
        a = [_doc("a", 5.0, content_hash="h1", tenant="A"), _doc("b", 4.0, content_hash="h1", tenant="B")]
        out = fusion.run(bm25_documents=a, dense_documents=[])["documents"]
        assert [d.id for d in out] == ["a", "b"]

    def test_content_hash_dedup(self):
        # "b2" has the same normalized content as "b" (overlapping split): only the better-ranked one stays
        bm25 = [
            _doc("b", 5.0, content_hash="h1"),
            _doc("b2", 4.0, content_hash="h1"),
            _doc("c", 1.0, content_hash="h2"),
        ]
        out = HybridFusion().run(bm25_documents=bm25, dense_documents=[])["documents"]
        assert [d.id for d in out] == ["b", "c"]

    def test_top_k(self):
        bm25 = [_doc(x, 1.0) for x in "abcde"]
        assert len(HybridFusion(top_k=2).run(bm25_documents=bm25, dense_documents=[])["documents"]) == 2
        assert (
            len(HybridFusion(top_k=2).run(bm25_documents=bm25, dense_documents=[], top_k=4)["documents"]) == 4
        )

    def test_empty(self):
        assert HybridFusion().run(bm25_documents=[], dense_documents=[]) == {"documents": []}

    def test_inputs_not_mutated(self):
        bm25 = [_doc("a", 9.0, bm25_score=9.0)]
        dense = [_doc("a", 0.8, dense_score=0.8)]
        before = copy.deepcopy((bm25, dense))
        HybridFusion().run(bm25_documents=bm25, dense_documents=dense)
        assert (bm25, dense) == before

    def test_to_dict_exact_and_round_trip(self):
        fusion = HybridFusion(method="minmax", weights=(0.7, 0.3), rrf_k=10, top_k=8)
        data = fusion.to_dict()
        assert data == {
            "type": "haygraph.retrieval.fusion.HybridFusion",
            "init_parameters": {
                "method": "minmax",
                "weights": [0.7, 0.3],
                "rrf_k": 10,
                "top_k": 8,
                "dense_languages": None,
            },
        }
        loaded = HybridFusion.from_dict(data)
        assert (loaded.method, loaded.weights, loaded.rrf_k, loaded.top_k) == ("minmax", (0.7, 0.3), 10, 8)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"method": "borda"},
            {"weights": (0.0, 0.0)},
            {"weights": (1.0,)},
            {"rrf_k": 0},
            {"top_k": 0},
            {"dense_languages": []},
            {"dense_languages": ["fr"]},
        ],
    )
    def test_init_validation(self, kwargs):
        with pytest.raises(ValueError):
            HybridFusion(**kwargs)

    def test_method_from_str_lists_valid(self):
        with pytest.raises(ValueError, match="rrf, minmax"):
            FusionMethod.from_str("sum")


class TestServedShare:
    def test_by_script(self):
        assert served_share("protein folding", ["en"]) == 1.0
        assert served_share("蛋白质折叠", ["en"]) == 0.0
        assert served_share("蛋白质折叠", ["en", "zh"]) == 1.0
        # 2 CJK ideographs, 2 Latin letters -> half Chinese
        assert served_share("ab蛋白", ["en"]) == pytest.approx(0.5)
        assert served_share("12345", ["zh"]) == 0.0  # neither script counts as en


class TestLanguageAwareFusion:
    def _lists(self, content_b="dense only b"):
        bm25 = [Document(id="a", content="keyword hit a", score=9.0)]
        dense = [
            Document(id="b", content=content_b, score=0.9),
            Document(id="a", content="keyword hit a", score=0.1),
        ]
        return bm25, dense

    def test_unserved_query_language_drops_dense(self):
        # English-only embedder, Chinese query: dense weight 0, so only BM25 counts.
        # min-max: a = 0.5 * 1 (bm25) + 0 * 0 (dense min) = 0.5; b = 0 * 1 (dense max) = 0
        bm25, dense = self._lists()
        aware = HybridFusion(method="minmax", dense_languages=["en"])
        out = aware.run(bm25_documents=bm25, dense_documents=dense, query="蛋白质是什么")["documents"]
        assert [(d.id, d.score) for d in out] == [("a", pytest.approx(0.5)), ("b", pytest.approx(0.0))]

    def test_served_query_keeps_dense(self):
        bm25, dense = self._lists()
        aware = HybridFusion(method="minmax", dense_languages=["en"])
        out = aware.run(bm25_documents=bm25, dense_documents=dense, query="what is a protein")["documents"]
        # a: bm25 1 * 0.5 + dense 0 = 0.5; b: dense 1 * 0.5 = 0.5 -> tie broken by id
        assert {d.id: d.score for d in out} == pytest.approx({"a": 0.5, "b": 0.5})

    def test_unserved_chunk_language_drops_its_dense_contribution(self):
        bm25, dense = self._lists(content_b="这是中文段落")
        aware = HybridFusion(method="rrf", dense_languages=["en"])
        out = aware.run(bm25_documents=bm25, dense_documents=dense, query="what is a protein")["documents"]
        # b is Chinese: its dense rank-1 contribution 0.5/61 is multiplied by 0
        assert {d.id: d.score for d in out} == pytest.approx({"a": 0.5 / 61 + 0.5 / 62, "b": 0.0})

    def test_not_aware_by_default(self):
        bm25, dense = self._lists()
        out = HybridFusion(method="minmax").run(bm25_documents=bm25, dense_documents=dense, query="蛋白质")
        assert {d.id: d.score for d in out["documents"]} == pytest.approx({"a": 0.5, "b": 0.5})

    def test_dense_only_fusion_keeps_dense(self):
        bm25, dense = self._lists()
        fusion = HybridFusion(method="minmax", weights=(0.0, 1.0), dense_languages=["en"])
        out = fusion.run(bm25_documents=bm25, dense_documents=dense, query="蛋白质")["documents"]
        assert out[0].id == "b"

    def test_round_trip_keeps_languages(self):
        fusion = HybridFusion(dense_languages=["en", "zh"])
        assert HybridFusion.from_dict(fusion.to_dict()).dense_languages == ["en", "zh"]
