"""Fit the absolute-relevance model on labelled answerable/unanswerable handbook questions.

Run: `python -m benchmarks.calibrate_relevance [--store DIR]`. It indexes the bundled handbook
(embeddings are
cached), retrieves the top 5 chunks for every answerable and unanswerable case, fits the logistic model
of `haygraph.retrieval.relevance` on the `tune` half — the case-level probability is the best chunk's, as the
graph's evaluate node uses it — and prints accuracy at threshold 0.5 on `tune` and on the held-out `test`
half, next to a cosine-only baseline. Paste the printed weights into `RelevanceConfig` defaults.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.fixtures import CASES, handbook_store
from haygraph.retrieval.config import RelevanceConfig
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.relevance import relevance_features

WEIGHT_NAMES = ("en_cosine_weight", "en_coverage_weight", "en_bias", "zh_coverage_weight", "zh_bias")


def load_cases(path: Path = CASES) -> list[dict[str, object]]:
    """Answerable and unanswerable cases of the labelled set."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r["kind"] in ("answerable", "unanswerable")]


def case_features(kb: KnowledgeBase, question: str, top_k: int = 5) -> tuple[np.ndarray, float]:
    """Feature rows (one per retrieved chunk) for a question, and the best raw cosine (for the baseline)."""
    hits = kb.search(question, top_k=top_k).hits
    rows = [
        relevance_features(h.cosine or 0.0, float(h.meta.get("term_coverage", 0.0)), question) for h in hits
    ]
    best_cosine = max((h.cosine or 0.0 for h in hits), default=0.0)
    if not rows:
        rows = [relevance_features(0.0, 0.0, question)]
    return np.asarray(rows, dtype=np.float64), best_cosine


def fit(bags: list[np.ndarray], labels: np.ndarray, *, l2: float = 1e-2, steps: int = 50) -> np.ndarray:
    """Logistic regression of the label on each bag's best features (element-wise max over its chunks).

    Newton's method (IRLS) with a small L2 penalty on the weights; converges in a few steps. At run time
    the graph takes the best chunk's probability, which is at most the probability of the bag's maxima.
    """
    x = np.asarray([bag.max(axis=0) for bag in bags])
    theta = np.zeros(x.shape[1])
    penalty = np.diag([0.0 if name.endswith("bias") else l2 for name in WEIGHT_NAMES])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(x @ theta)))
        grad = x.T @ (p - labels) + penalty @ theta
        hess = x.T @ (x * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hess, grad)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return theta


def bag_probability(bag: np.ndarray, w: np.ndarray) -> float:
    """The best chunk's probability."""
    return float(1.0 / (1.0 + np.exp(-(bag @ w).max())))


def accuracy(probs: list[float], labels: np.ndarray, threshold: float = 0.5) -> float:
    """Share of cases classified correctly at `threshold`."""
    return float(np.mean([(p >= threshold) == bool(y) for p, y in zip(probs, labels, strict=True)]))


def main(argv: list[str] | None = None) -> int:
    """Fit and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="handbook store directory (default: a temporary one)")
    args = parser.parse_args(argv)
    kb = handbook_store(args.store or tempfile.mkdtemp(prefix="haygraph-calib-"))
    cases = load_cases()
    features = [case_features(kb, str(c["question"])) for c in cases]
    bags = [f[0] for f in features]
    labels = np.asarray([1.0 if c["kind"] == "answerable" else 0.0 for c in cases])
    tune = [i for i, c in enumerate(cases) if c["split"] == "tune"]
    test = [i for i, c in enumerate(cases) if c["split"] == "test"]
    w = fit([bags[i] for i in tune], labels[tune])
    for name, idx in (("tune", tune), ("test", test)):
        probs = [bag_probability(bags[i], w) for i in idx]
        cos_only = [features[i][1] for i in idx]
        print(
            f"{name}: n={len(idx)} accuracy@0.5={accuracy(probs, labels[idx]):.3f} "
            f"(baseline, best dense cosine >= 0.5: {accuracy(cos_only, labels[idx]):.3f})"
        )
        for lang in ("en", "zh"):
            sub = [j for j, i in enumerate(idx) if cases[i]["lang"] == lang]
            print(
                f"  {lang}: accuracy={accuracy([probs[j] for j in sub], labels[idx][sub]):.3f} (n={len(sub)})"
            )
    cfg = RelevanceConfig(**{name: round(float(v), 3) for name, v in zip(WEIGHT_NAMES, w, strict=True)})
    print("fitted:", cfg.model_dump_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
