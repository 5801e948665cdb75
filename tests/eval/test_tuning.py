"""Tests for eval.tuning on tiny synthetic candidate lists (no model, no index)."""

from __future__ import annotations

import json

import pytest
from haystack import Document

from haygraph.eval.errors import EvalError
from haygraph.eval.index_prep import datasets_root
from haygraph.eval.tuning import Candidates, fuse, load_tuned, tune, tune_cut, tune_fusion, tuned_from_dict
from haygraph.retrieval.fusion import HybridFusion


def _cands(bm25, dense):
    ids = {i for i, _ in bm25} | {i for i, _ in dense}
    return Candidates(bm25=list(bm25), dense=list(dense), source={i: i.split("::")[0] for i in ids})


# BM25 puts the relevant doc "r" third; dense puts it first.
CANDS = {
    "q1": _cands(
        [("a::1", 9.0), ("b::1", 8.0), ("r::1", 7.5)], [("r::1", 0.9), ("c::1", 0.5), ("a::1", 0.2)]
    ),
    "q2": _cands([("d::1", 5.0), ("s::1", 4.9)], [("s::1", 0.8), ("e::1", 0.1)]),
}
QRELS = {"q1": {"r": 1}, "q2": {"s": 1}}


class TestFuse:
    @pytest.mark.parametrize("method", ["rrf", "minmax"])
    def test_matches_the_pipeline_fusion_component(self, method):
        cands = CANDS["q1"]
        docs = [[Document(id=i, content=i, score=s) for i, s in lst] for lst in (cands.bm25, cands.dense)]
        expected = HybridFusion(method=method, weights=(0.3, 0.7)).run(docs[0], docs[1])["documents"]
        got = fuse(cands, method, (0.3, 0.7))
        assert [i for i, _ in got] == [d.id for d in expected]
        assert [s for _, s in got] == pytest.approx([d.score for d in expected])

    def test_unknown_method(self):
        with pytest.raises(EvalError, match="valid: rrf, minmax"):
            fuse(CANDS["q1"], "borda", (0.5, 0.5))


class TestTuneFusion:
    def test_finds_weights_that_favour_the_better_retriever(self):
        best, grid = tune_fusion(CANDS, QRELS)
        assert len(grid) == 22  # 2 methods x 11 weights
        assert best["nDCG@10"] == 1.0  # relevant doc first for both queries
        assert best["weights"][1] > best["weights"][0]  # dense weight dominates
        bm25_only = next(p for p in grid if p["method"] == "rrf" and p["weights"] == (1.0, 0.0))
        assert bm25_only["nDCG@10"] < 1.0


class TestTuneCut:
    def test_cliff_after_the_relevant_doc_gives_f1_one(self):
        # min-max with dense only: q1 dense scores 0.9,0.5,0.2 -> 1, 0.571, 0 ; q2 -> 1, 0
        best, grid = tune_cut(CANDS, QRELS, "minmax", (0.0, 1.0))
        assert best["f1"] == 1.0 and best["chunks_mean"] == 1.0
        assert len(grid) == 9 * 7
        keep_all = next(p for p in grid if p["drop_ratio"] == 0.9 and p["max_keep"] == 10)
        assert keep_all["precision"] < 1.0


class TestTune:
    def test_refuses_the_test_split(self):
        with pytest.raises(EvalError, match="test split"):
            tune(CANDS, QRELS, dataset="x", split="test")

    def test_result_round_trips_through_json(self, tmp_path):
        result = tune(CANDS, QRELS, dataset="x", split="train", depth=100)
        path = tmp_path / "tuned.json"
        path.write_text(json.dumps(result))
        params = load_tuned(path)
        assert params.method == result["fusion"]["method"]
        assert list(params.weights) == result["fusion"]["weights"]
        assert (params.drop_ratio, params.max_keep) == (
            result["cut"]["drop_ratio"],
            result["cut"]["max_keep"],
        )
        assert (params.dataset, params.split) == ("x", "train")


class TestLoadTuned:
    def test_missing_file(self, tmp_path):
        with pytest.raises(EvalError, match="cannot read"):
            load_tuned(tmp_path / "nope.json")

    def test_not_json(self, tmp_path):
        (tmp_path / "bad.json").write_text("{oops")
        with pytest.raises(EvalError, match="not valid JSON"):
            load_tuned(tmp_path / "bad.json")

    @pytest.mark.parametrize(
        "data",
        [
            {"fusion": {"method": "rrf", "weights": [0.5, 0.5]}},  # no cut
            {"fusion": {"method": "x", "weights": [0.5, 0.5]}, "cut": {"drop_ratio": 0.5, "max_keep": 5}},
            {"fusion": {"method": "rrf", "weights": [0.5, 0.5]}, "cut": {"drop_ratio": 1.5, "max_keep": 5}},
            {"fusion": {"method": "rrf", "weights": [-1, 0.5]}, "cut": {"drop_ratio": 0.5, "max_keep": 5}},
            [1, 2],
        ],
    )
    def test_invalid_content(self, data):
        with pytest.raises(EvalError):
            tuned_from_dict(data)


@pytest.fixture(scope="module")
def med_part(tmp_path_factory):
    """The first 300 MED documents embedded once, by the int8 MiniLM, for both fusion methods.

    What is checked is the fusion, not the encoder: the whole corpus with the default e5 took minutes.
    """
    from haygraph.eval.index_prep import prepare_index, resolve_dataset, whole_document_config

    folder = tmp_path_factory.mktemp("med-part")
    lines = (resolve_dataset("med") / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:300]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = whole_document_config().with_overrides(embedder={"backend": "onnx-int8"})
    kb, _ = prepare_index(folder, config, need_embeddings=True)
    return kb, config


@pytest.mark.integration
@pytest.mark.skipif(
    not (datasets_root() / "med" / "corpus.jsonl").is_file(),
    reason="shared datasets folder not found",
)
class TestGridMatchesPipeline:
    """A grid point fused in Python ranks exactly as the real hybrid pipeline with those parameters."""

    @pytest.mark.parametrize("method", ["minmax", "rrf"])
    def test_same_ranking(self, method, med_part):
        from haygraph.eval.configs import TunedParams, build_configs
        from haygraph.eval.harness import source_ranking
        from haygraph.eval.tuning import collect_candidates

        kb, config = med_part
        queries = {"1": "cancer of the lung and smoking", "2": "kidney function in infants"}
        cands = collect_candidates(kb, queries, depth=100)
        tuned = TunedParams(method, (0.3, 0.7), 60, 100, 0.5, 5)
        runner = kb.runner(build_configs(["hybrid-tuned"], config, tuned=tuned)[0].query)
        for query_id, text in queries.items():
            expected = source_ranking(runner.run(text, top_k=100))
            got = [i.split("::")[0] for i, _ in fuse(cands[query_id], method, (0.3, 0.7))]
            assert got == expected
