"""Train the answerability decision (`haygraph.control.planning.answerability`) on the tune parts only.

Run from the repository root:

    python -m benchmarks.train_answerability [--cmrc-n 300] [--scifact-n 200] [--out FILE] [--work DIR]

Data (never a test part): the CMRC 2018 *tune* passages (`haygraph.eval.agent_cases.cmrc_protocol`,
half of the sampled questions with their gold passage removed), the handbook cases of split ``tune``
and SciFact *train* claims (half with their gold abstracts removed). For every case and every query
mode (hybrid, bm25, dense) the question is rewritten as the offline agent does, retrieved (top 3, the
agent's default) and turned into the model's features. Label 1 = the gold source is among the
retrieved evidence (answerable from it), 0 = its gold was removed or the handbook holds no answer;
present questions whose gold was not retrieved are left out (nothing to learn about the decision).

A scikit-learn `LogisticRegression` (balanced classes, no separate intercept: each language block has
its own bias feature) is fitted; handbook rows weigh `--handbook-weight` (they are few and are the
product's own kind of documents). The threshold is the one with the best balanced accuracy on the
training rows. The weights are written as JSON (default: the shipped package data file).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.control.planning.answerability import (
    FEATURE_NAMES,
    WEIGHTS_FILE,
    answerability_features,
    answerability_signals,
)
from haygraph.control.planning.rewrite import rewrite_query
from haygraph.eval.agent_cases import AgentProtocol, cmrc_protocol, handbook_protocol, scifact_protocol
from haygraph.eval.agent_harness import MODES, build_store
from haygraph.eval.index_prep import resolve_dataset
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.knowledge_base import KnowledgeBase


def protocol_rows(
    protocol: AgentProtocol, store: Path, weight: float
) -> list[tuple[list[float], int, float]]:
    """(features, label, sample weight) for every case of `protocol` in every query mode."""
    build_store(protocol, store)
    kb = KnowledgeBase.open(store)
    rows = []
    for mode in MODES:
        retriever = HaystackRetriever(kb, kb.config.query.model_copy(update={"mode": mode}))
        for case in protocol.cases:
            query = rewrite_query(case.question)[0]
            evidence = retriever.retrieve(query, top_k=3)
            found = {e.source for e in evidence}
            if case.absent:
                label = 0
            elif found & set(case.gold_sources):
                label = 1
            else:
                continue
            signals = answerability_signals(query, evidence)
            rows.append((list(answerability_features(query, signals)), label, weight))
    return rows


def best_threshold(prob: np.ndarray, labels: np.ndarray) -> float:
    """The threshold in [0.3, 0.7] with the best balanced accuracy (ties: the one nearest 0.5)."""
    best, best_score = 0.5, -1.0
    for t in sorted(np.arange(0.3, 0.71, 0.02), key=lambda x: abs(x - 0.5)):
        pred = prob >= t
        score = (np.mean(pred[labels == 1]) + np.mean(~pred[labels == 0])) / 2
        if score > best_score + 1e-9:
            best, best_score = float(t), float(score)
    return round(best, 2)


def main(argv: list[str] | None = None) -> int:
    """Build the tune stores, collect the rows, fit, and write the weights."""
    parser = argparse.ArgumentParser(description="Train the answerability decision on the tune parts.")
    parser.add_argument("--cmrc-n", type=int, default=300, help="CMRC tune questions (default: 300)")
    parser.add_argument("--scifact-n", type=int, default=200, help="SciFact train claims (default: 200)")
    parser.add_argument("--handbook-weight", type=float, default=4.0, help="weight of a handbook row")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default="/tmp/haygraph-answerability", help="stores are kept here")
    parser.add_argument("--out", default=str(WEIGHTS_FILE), help="weights JSON (default: the shipped file)")
    args = parser.parse_args(argv)
    work = Path(args.work)
    started = time.perf_counter()
    protocols = [
        (cmrc_protocol(resolve_dataset("cmrc2018"), "tune", args.cmrc_n, args.seed), 1.0),
        (scifact_protocol(resolve_dataset("scifact"), "train", args.scifact_n, seed=args.seed), 1.0),
        (handbook_protocol(sample_handbook_path(), "tune"), args.handbook_weight),
    ]
    rows: list[tuple[list[float], int, float]] = []
    counts: dict[str, Any] = {}
    for protocol, weight in protocols:
        got = protocol_rows(protocol, work / f"{protocol.name}-{args.seed}", weight)
        counts[protocol.name] = {"rows": len(got), "positive": sum(r[1] for r in got)}
        rows.extend(got)
        print(f"{protocol.name}: {counts[protocol.name]}", file=sys.stderr)
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows])
    w = np.array([r[2] for r in rows])
    clf = LogisticRegression(fit_intercept=False, class_weight="balanced", C=1.0, max_iter=2000)
    clf.fit(x, y, sample_weight=w)
    prob = clf.predict_proba(x)[:, 1]
    threshold = best_threshold(prob, y)
    data = {
        "weights": {n: round(float(v), 5) for n, v in zip(FEATURE_NAMES, clf.coef_[0], strict=True)},
        "threshold": threshold,
        "trained_on": counts,
        "command": "python -m benchmarks.train_answerability " + " ".join(argv or sys.argv[1:]),
    }
    Path(args.out).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    pred = prob >= threshold
    print(
        f"wrote {args.out}: threshold {threshold}, train answerable kept {np.mean(pred[y == 1]):.3f}, "
        f"refused {np.mean(~pred[y == 0]):.3f} ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
