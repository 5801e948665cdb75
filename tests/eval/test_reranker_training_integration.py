"""Integration: `haygraph train-reranker` trains a few steps on a tiny real SciFact slice, and the output
directory reranks through the query pipeline (real bundled MiniLM weights, real data; ~1 min)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.eval.index_prep import datasets_root

pytest.importorskip("datasets", reason="the train extra (datasets, accelerate) is not installed")
pytestmark = pytest.mark.integration

SCIFACT = datasets_root() / "scifact"


def _slice(root: Path, n_queries: int = 8, n_other: int = 30) -> Path:
    """A BEIR folder with the first ``n_queries`` SciFact train queries, their positives and other docs."""
    qrels_lines = (SCIFACT / "train" / "qrels.tsv").read_text(encoding="utf-8").splitlines()[1:]
    queries = {}
    for line in (SCIFACT / "train" / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        queries[str(row["_id"])] = line
    qrels: dict[str, list[str]] = {}
    for line in qrels_lines:
        qid, did, grade = line.split("\t")[:3]
        if qid in queries and int(grade) > 0 and (qid in qrels or len(qrels) < n_queries):
            qrels.setdefault(qid, []).append(did)
    wanted = {d for docs in qrels.values() for d in docs}
    corpus = []
    for line in (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        did = str(json.loads(line)["_id"])
        if did in wanted or len(corpus) < n_other + len(wanted):
            corpus.append(line)
            wanted.discard(did)
        if not wanted and len(corpus) >= n_other:
            break
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    (root / "queries.jsonl").write_text("\n".join(queries[q] for q in qrels) + "\n", encoding="utf-8")
    (root / "qrels").mkdir()
    body = "".join(f"{q}\t{d}\t1\n" for q, docs in qrels.items() for d in docs)
    (root / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + body, encoding="utf-8")
    return root


@pytest.mark.skipif(not SCIFACT.is_dir(), reason="the shared SciFact dataset is not here")
def test_train_a_few_steps_then_rerank_with_the_output(tmp_path, capsys, haygraph_cache_dir, monkeypatch):
    from haygraph.adapters.cli.main import main
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.cross_encoder_ranker import MODEL_INFO_FILE
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    monkeypatch.setenv("HAYGRAPH_CACHE_DIR", str(haygraph_cache_dir))
    dataset = _slice(tmp_path / "slice")
    out = tmp_path / "reranker"
    argv = ["train-reranker", "--dataset", str(dataset), "--out", str(out), "--epochs", "1"]
    argv += ["--negatives", "2", "--depth", "5", "--dev-fraction", "0.25", "--batch-size", "8"]
    argv += ["--max-length", "64", "--eval-steps", "2", "--threads", "2", "--no-progress"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "mining hard negatives for 8" in captured.err and "saved the reranker" in captured.err
    info = json.loads((out / MODEL_INFO_FILE).read_text(encoding="utf-8"))
    assert info["dataset"] == "slice" and info["split"] == "train" and info["dev_queries"] == 2
    assert 0 <= info["retrieval_weight"] <= 1 and info["dev_checkpoint_scores"]
    assert json.loads((out / "config.json").read_text())["architectures"] == ["BertForSequenceClassification"]
    assert not (out / "work" / "checkpoints").exists()  # cleaned once the model is saved

    assert main(argv) == 0  # a finished run is not repeated
    assert "nothing to do" in capsys.readouterr().err

    config = RetrievalConfig().with_overrides(
        splitter={"enabled": False},
        embedder={"cache_dir": str(haygraph_cache_dir)},
        query={"reranker": {"model": str(out), "top_k_in": 5}, "cut": {"enabled": False}, "top_k": 3},
    )
    kb = KnowledgeBase(config)
    kb.index_beir(dataset / "corpus.jsonl", save=False)
    result = kb.search("Vitamin D deficiency and cancer")
    assert result.reranked is True and len(result.hits) == 3
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
