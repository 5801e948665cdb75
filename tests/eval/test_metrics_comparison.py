"""Our metrics against trec_eval (through pytrec_eval) on real BM25 runs over real datasets.

pytrec_eval wraps trec_eval's own C code, so it is the reference for the conventions we follow:
linear-gain ``ndcg_cut``, ``map_cut`` divided by all relevant documents, ``P_k`` over k, and ties
broken by document id descending. ranx agrees as well (checked by hand: same values to 1e-15 on
scifact), but its numba JIT costs about two minutes per process here, so it is not run in CI.

Mapping of our names to trec_eval measures:
    nDCG@10 -> ndcg_cut_10, Recall@100 -> recall_100, MAP@100 -> map_cut_100, P@5 -> P_5,
    HitRate@5 -> success_5, MRR@10 -> recip_rank if recip_rank >= 1/10 else 0
(trec_eval's recip_rank has no cutoff; the first relevant document is inside the top 10 exactly
when its reciprocal rank is at least 1/10). trec_eval averages only over queries in the run; we
average over all queries in qrels with a missing query scoring 0 (trec_eval -c), so the reference
means below fill missing queries with 0.
"""

from __future__ import annotations

import pytest

from haygraph.eval.beir import BeirDataset, load_beir
from haygraph.eval.index_prep import datasets_root
from haygraph.eval.metrics import evaluate

pytestmark = pytest.mark.comparison

bm25s = pytest.importorskip("bm25s")
pytrec_eval = pytest.importorskip("pytrec_eval")


DATASETS = datasets_root()
METRICS = ["nDCG@10", "MRR@10", "Recall@100", "MAP@100", "P@5", "HitRate@5"]
TREC = {
    "nDCG@10": "ndcg_cut_10",
    "Recall@100": "recall_100",
    "MAP@100": "map_cut_100",
    "P@5": "P_5",
    "HitRate@5": "success_5",
}
TOLERANCE = 1e-6


def _load(name: str) -> BeirDataset:
    folder = DATASETS / name
    if not (folder / "corpus.jsonl").is_file():
        pytest.skip(f"dataset {name!r} not found at {folder} (set HAYGRAPH_DATASETS to the datasets folder)")
    return load_beir(folder)


def _bm25_run(dataset: BeirDataset, top_k: int = 100) -> dict[str, dict[str, float]]:
    texts = {doc_id: doc.content or "" for doc_id, doc in dataset.corpus.items()}
    doc_ids = list(texts)
    corpus_tokens = bm25s.tokenize([texts[d] for d in doc_ids], stopwords="en", show_progress=False)
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(corpus_tokens, show_progress=False)
    query_ids = list(dataset.queries)
    query_tokens = bm25s.tokenize(
        [dataset.queries[q] for q in query_ids], stopwords="en", return_ids=False, show_progress=False
    )
    docs, scores = retriever.retrieve(query_tokens, k=top_k, show_progress=False, n_threads=1)
    return {
        query_id: {doc_ids[int(d)]: float(s) for d, s in zip(docs[row], scores[row], strict=True)}
        for row, query_id in enumerate(query_ids)
    }


def _reference(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]) -> dict[str, float]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recall_100", "map_cut_100", "P_5"})
    success = pytrec_eval.RelevanceEvaluator(qrels, {"success", "recip_rank"})
    per_query = evaluator.evaluate(run)
    for query_id, values in success.evaluate(run).items():
        per_query[query_id].update(values)
    n = len(qrels)
    means = {
        ours: sum(per_query.get(q, {}).get(theirs, 0.0) for q in qrels) / n for ours, theirs in TREC.items()
    }
    rr = [per_query.get(q, {}).get("recip_rank", 0.0) for q in qrels]
    means["MRR@10"] = sum(value if value >= 0.1 - 1e-12 else 0.0 for value in rr) / n
    return means


@pytest.fixture(scope="module", params=["med", "scifact", "cranfield"])
def dataset_and_run(request: pytest.FixtureRequest) -> tuple[BeirDataset, dict[str, dict[str, float]]]:
    dataset = _load(request.param)
    return dataset, _bm25_run(dataset)


class TestMetricsAgainstTrecEval:
    def test_bm25_run_matches_trec_eval(self, dataset_and_run):
        dataset, run = dataset_and_run
        ours = evaluate(dataset.qrels, run, METRICS)
        reference = _reference(dataset.qrels, run)
        for name in METRICS:
            assert ours[name] == pytest.approx(reference[name], abs=TOLERANCE), name
        # the run is a real one, not a degenerate all-zero or perfect one
        assert 0.2 < ours["nDCG@10"] < 0.95

    def test_tied_scores_and_missing_queries_match_trec_eval(self, dataset_and_run):
        # Rounding the scores to one decimal creates many ties inside every cutoff, so the
        # tie-breaking rule (doc id descending) decides the values; every 7th query is removed
        # from the run to check that a missing query scores 0.
        dataset, run = dataset_and_run
        query_ids = list(run)
        tied = {q: {d: round(s, 1) for d, s in run[q].items()} for i, q in enumerate(query_ids) if i % 7}
        ties = sum(len(scores) - len(set(scores.values())) for scores in tied.values())
        assert ties > len(tied)  # the ties really are there
        ours = evaluate(dataset.qrels, tied, METRICS)
        reference = _reference(dataset.qrels, tied)
        for name in METRICS:
            assert ours[name] == pytest.approx(reference[name], abs=TOLERANCE), name
        assert ours != evaluate(dataset.qrels, run, METRICS)
