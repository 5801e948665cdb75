import math

import pytest

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.tokenize import BM25Tokenizer
from tests.retrieval.store_helpers import small_docs

# Lucene BM25 over the small store, k1=1.2, b=0.75, N=4, avgdl=9/4 (see test_bm25_retriever):
# leav: d3 ln2 * 2/3.5 (best), d1 ln2/2.1; travel: d3 only, ln(10/3) * 1/2.5; polici: d1 only, ln(10/3) / 2.1
LEAV_BEST = math.log(2) * 2 / 3.5
TRAVEL_BEST = math.log(10 / 3) / 2.5
POLICI_BEST = math.log(10 / 3) / 2.1


@pytest.fixture
def index() -> BM25Index:
    return BM25Index(BM25Tokenizer()).build([d.content or "" for d in small_docs()])


class TestScoreBound:
    def test_sum_of_each_terms_best_score(self, index):
        assert index.score_bound("leave") == pytest.approx(LEAV_BEST, rel=1e-5)
        # no document is best on both terms: the bound is above every document's score
        bound = index.score_bound("leave policy")
        assert bound == pytest.approx(LEAV_BEST + POLICI_BEST, rel=1e-5)
        assert index.scores("leave policy").max() < bound

    def test_reached_by_a_document_best_on_every_term(self, index):
        assert index.score_bound("leave travel") == pytest.approx(LEAV_BEST + TRAVEL_BEST, rel=1e-5)
        assert index.scores("leave travel").max() == pytest.approx(
            index.score_bound("leave travel"), rel=1e-5
        )

    @pytest.mark.parametrize("query", ["zebra", "", "the of"])
    def test_no_known_term(self, index, query):
        assert index.score_bound(query) == 0.0

    def test_empty_index(self):
        assert BM25Index(BM25Tokenizer()).build([]).score_bound("leave") == 0.0

    def test_corpus_without_searchable_terms(self, tmp_path):
        # regression: documents of stop words and single letters crashed bm25s ("max() arg is an empty
        # sequence") and failed the whole index run
        index = BM25Index(BM25Tokenizer()).build(["x y", "the of"])
        assert index.scores("x") is None and index.score_bound("x y") == 0.0
        index.save(tmp_path)
        loaded = BM25Index.load(tmp_path, index.params())
        assert loaded is not None and loaded.num_docs == 2 and loaded.scores("the") is None

    def test_survives_save_and_load(self, index, tmp_path):
        index.save(tmp_path)
        loaded = BM25Index.load(tmp_path, index.params())
        assert loaded is not None
        assert loaded.score_bound("leave travel") == pytest.approx(index.score_bound("leave travel"))
