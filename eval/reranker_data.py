"""Training data for `haygraph train-reranker`: the split, a dev carve-out, hard negatives from our retrieval.

Positives are the split's judged-relevant documents. Hard negatives are the best-ranked non-relevant
documents of our own hybrid retrieval (min-max score fusion of BM25 and dense, no cut) for the same
query — the candidates a reranker actually sees at query time.

Mining runs every query through one index and one query pipeline. The query embeddings are computed
first, in batches (`QueryRunner.embed_queries`, as the evaluation harness does), into the pipeline's
query memo, so each pipeline run only does BM25, a matrix product and the fusion. One query at a time
through the embedder took 0.5 s per query on this shared 2-core machine (the whole SciFact train split:
~40 min); batched it is a few ms per query.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from haystack import Document
from tqdm import tqdm

from haygraph.eval.beir import BeirDataset, load_beir
from haygraph.eval.errors import DatasetError
from haygraph.eval.index_prep import prepare_index, whole_document_config
from haygraph.retrieval.config import QueryConfig, RetrievalConfig

logger = logging.getLogger(__name__)

Candidates = dict[str, list[tuple[str, float]]]
"""Query id -> the retrieved (document id, fused score) pairs, best first."""


@dataclass(frozen=True)
class Pair:
    """One training example: a query, a document text and its label (1.0 relevant, 0.0 not)."""

    query: str
    document: str
    label: float


def load_training_split(dataset_dir: Path, split: str) -> BeirDataset:
    """Load ``split`` of a BEIR dataset for training; never the test split.

    Raises:
        DatasetError: ``split`` is ``test``, the dataset has no such split (the message lists the ones it
            has), or the split holds no relevance judgment.

    """
    if split.strip().lower() == "test":
        raise DatasetError(
            "--split test: a reranker is never trained on the test split; use train (or another split)"
        )
    data = load_beir(dataset_dir, split)
    if not data.qrels or not data.queries:
        raise DatasetError(
            f"--split {split}: {dataset_dir} has no relevance judgments (qrels) with a relevant document "
            "for this split; a reranker needs judged (query, document) pairs"
        )
    return data


def split_dev(query_ids: Sequence[str], fraction: float, seed: int = 13) -> tuple[list[str], list[str]]:
    """Split query ids into (train, dev): a seeded random ``fraction`` (at least one) goes to dev.

    ``fraction`` 0 gives no dev queries. Fewer than two queries cannot be split: all stay in train.

    Raises:
        ValueError: ``fraction`` is not in [0, 0.5].

    """
    if not 0 <= fraction <= 0.5:
        raise ValueError(f"dev fraction must be in [0, 0.5], but got {fraction}")
    ids = sorted(query_ids)
    if fraction == 0 or len(ids) < 2:
        return ids, []
    shuffled = ids[:]
    random.Random(seed).shuffle(shuffled)
    n_dev = max(1, round(len(ids) * fraction))
    dev = set(shuffled[:n_dev])
    return [q for q in ids if q not in dev], [q for q in ids if q in dev]


def training_pairs(
    queries: Mapping[str, str],
    qrels: Mapping[str, Mapping[str, int]],
    corpus_text: Mapping[str, str],
    candidates: Mapping[str, Sequence[tuple[str, float]]],
    negatives: int,
    seed: int = 13,
) -> list[Pair]:
    """Every judged positive of each query, and its ``negatives`` best-ranked non-relevant candidates.

    Relevant means grade > 0 (a document judged 0 can be a negative). Queries without a relevant
    judgment are skipped; the pairs are shuffled with ``seed``.
    """
    pairs: list[Pair] = []
    for qid, text in queries.items():
        relevant = {d for d, grade in qrels.get(qid, {}).items() if grade > 0}
        if not relevant:
            continue
        pairs.extend(Pair(text, corpus_text[d], 1.0) for d in sorted(relevant) if d in corpus_text)
        hard = [d for d, _ in candidates.get(qid, []) if d not in relevant and d in corpus_text][:negatives]
        pairs.extend(Pair(text, corpus_text[d], 0.0) for d in hard)
    random.Random(seed).shuffle(pairs)
    return pairs


def mining_query(config: RetrievalConfig) -> QueryConfig:
    """``config``'s query settings in hybrid mode, min-max fusion, without the cut or a reranker."""
    return config.with_overrides(
        query={
            "mode": "hybrid",
            "fusion": {"method": "minmax"},
            "cut": {"enabled": False},
            "reranker": {"model": None},
        }
    ).query


def mine_candidates(
    dataset_dir: Path,
    queries: Mapping[str, str],
    depth: int,
    *,
    config: RetrievalConfig | None = None,
    store_dir: str | Path | None = None,
    progress: bool = False,
) -> Candidates:
    """Rank every query's top-``depth`` documents with our hybrid retrieval over the dataset's corpus.

    One index (built, or reused from ``store_dir``), one query pipeline; the query embeddings are
    computed up front in batches (see the module docstring).
    """
    if depth < 1:
        raise ValueError(f"depth must be >= 1, but got {depth}")
    base = whole_document_config(config)
    kb, _ = prepare_index(dataset_dir, base, store_dir=store_dir, need_embeddings=True, progress=progress)
    runner = kb.runner(mining_query(base))
    runner.warm_up()
    runner.embed_queries(list(queries.values()))
    out: Candidates = {}
    for qid, text in tqdm(
        queries.items(), desc="mining", unit="query", file=sys.stderr, disable=not progress, leave=False
    ):
        docs = runner.run(text, top_k=depth)
        out[qid] = _ranked_sources(docs)
    return out


def _ranked_sources(docs: Sequence[Document]) -> list[tuple[str, float]]:
    """(corpus document id, score) of ranked chunks, first occurrence of each document only."""
    seen: dict[str, float] = {}
    for doc in docs:
        source = str(doc.meta.get("source_id") or str(doc.id).split("::", 1)[0])
        seen.setdefault(source, float(doc.score or 0.0))
    return list(seen.items())
