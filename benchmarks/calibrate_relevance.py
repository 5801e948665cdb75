"""Fit the absolute-relevance model per query mode on labelled answerable/unanswerable handbook questions.

Run: `python -m benchmarks.calibrate_relevance [--mode bm25|bm25_cosine|dense|hybrid|all] [--store D]`.
It indexes the bundled handbook (embeddings are cached), retrieves the top 5 chunks of every answerable
and unanswerable case through the query pipeline of each mode, fits the logistic model of
`haygraph.retrieval.relevance` on the `tune` half only — the case-level probability is the best
chunk's, as the graph's evaluate node uses it — and prints accuracy at threshold 0.5 on `tune` and on
the held-out `test` half, per language, next to a cosine-only baseline. Paste the printed weights into
the `RelevanceConfig` defaults (fields bm25, bm25_cosine, dense, hybrid).

Signals: the cosine (English block only) where the query is embedded, idf-weighted term coverage, and the
normalized BM25 score only where it improves leave-one-out accuracy on `tune` (never chosen on `test`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile

import numpy as np

from benchmarks.fixtures import handbook_store, load_cases
from haygraph.retrieval.config import QueryConfig, RelevanceWeights
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.relevance import FEATURE_NAMES, relevance_features

VARIANTS: dict[str, tuple[str, bool]] = {
    "bm25": ("bm25", False),
    "bm25_cosine": ("bm25", True),
    "dense": ("dense", False),
    "hybrid": ("hybrid", False),
}
"""`RelevanceConfig` weight field -> (query mode, `bm25_uses_cosine`)."""

# The base signals of each variant's model; all-MiniLM-L6-v2 is English, so the cosine is left out of the
# Chinese block (a store whose encoder serves zh, multilingual-e5-small, also fits zh_cosine). The
# normalized BM25 signal is added only if it improves leave-one-out accuracy on tune.
LEXICAL = ("en_coverage", "en_bias", "zh_coverage", "zh_bias")
EMBEDDED = ("en_cosine", *LEXICAL)
BM25_SIGNAL = ("en_bm25", "zh_bm25")


def case_features(
    kb: KnowledgeBase, question: str, query: QueryConfig | None = None, top_k: int = 5
) -> tuple[np.ndarray, float]:
    """Feature rows (one per retrieved chunk) for a question, and the best raw cosine (for the baseline)."""
    hits = kb.search(question, top_k=top_k, config=query).hits
    rows = [
        relevance_features(
            h.cosine or 0.0,
            float(h.meta.get("term_coverage", 0.0)),
            float(h.meta.get("bm25_normalized", 0.0)),
            question,
        )
        for h in hits
    ]
    best_cosine = max((h.cosine or 0.0 for h in hits), default=0.0)
    if not rows:
        rows = [relevance_features(0.0, 0.0, 0.0, question)]
    return np.asarray(rows, dtype=np.float64), best_cosine


def fit(
    bags: list[np.ndarray],
    labels: np.ndarray,
    free: tuple[str, ...] = EMBEDDED,
    *,
    l2: float = 1e-2,
    steps: int = 50,
) -> np.ndarray:
    """Logistic regression of the label on each bag's best features (element-wise max over its chunks).

    Only the weights named in `free` are fitted (the others are 0), and the model is kept monotone: a
    signal whose weight comes out negative (more cosine / coverage / BM25 -> less relevant, an artefact
    of few cases) is dropped and the rest refitted. Newton's method (IRLS) with a small L2 penalty on the
    non-bias weights. At run time the graph takes the best chunk's probability, which is at most the
    probability of the bag's maxima.
    """
    x_all = np.asarray([bag.max(axis=0) for bag in bags])
    while True:
        cols = [FEATURE_NAMES.index(name) for name in free]
        theta = _irls(x_all[:, cols], labels, [0.0 if n.endswith("bias") else l2 for n in free], steps)
        negative = {n for n, t in zip(free, theta, strict=True) if not n.endswith("bias") and t < 0}
        if not negative:
            break
        free = tuple(n for n in free if n not in negative)
    weights = np.zeros(len(FEATURE_NAMES))
    weights[cols] = theta
    return weights


def _irls(x: np.ndarray, labels: np.ndarray, penalties: list[float], steps: int) -> np.ndarray:
    """Penalized logistic regression by Newton's method."""
    theta = np.zeros(x.shape[1])
    penalty = np.diag(penalties)
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


def loo_accuracy(bags: list[np.ndarray], labels: np.ndarray, free: tuple[str, ...]) -> float:
    """Leave-one-out accuracy at 0.5 of the model with weights `free` (used to choose signals on tune)."""
    probs = []
    for k in range(len(bags)):
        rest = [i for i in range(len(bags)) if i != k]
        probs.append(bag_probability(bags[k], fit([bags[i] for i in rest], labels[rest], free)))
    return accuracy(probs, labels)


def calibrate(kb: KnowledgeBase, variant: str, cases: list[dict[str, object]]) -> RelevanceWeights:
    """Fit one `RelevanceConfig` weight field on the tune cases; print tune, held-out test and the weights."""
    mode, cosine = VARIANTS[variant]
    base = kb.config.query
    query = base.model_copy(
        update={"mode": mode, "relevance": base.relevance.model_copy(update={"bm25_uses_cosine": cosine})}
    )
    features = [case_features(kb, str(c["question"]), query) for c in cases]
    bags = [f[0] for f in features]
    labels = np.asarray([1.0 if c["kind"] == "answerable" else 0.0 for c in cases])
    tune = [i for i, c in enumerate(cases) if c["split"] == "tune"]
    test = [i for i, c in enumerate(cases) if c["split"] == "test"]
    signals: tuple[str, ...] = EMBEDDED if mode != "bm25" or cosine else LEXICAL
    if signals is EMBEDDED and "zh" in kb.config.embedder.languages:
        signals = (*EMBEDDED, "zh_cosine")  # a multilingual encoder's cosine means something in Chinese
    tune_bags = [bags[i] for i in tune]
    loo = {free: loo_accuracy(tune_bags, labels[tune], free) for free in (signals, signals + BM25_SIGNAL)}
    free = max(loo, key=lambda f: (loo[f], -len(f)))  # ties: fewer signals
    w = fit(tune_bags, labels[tune], free)
    print(f"{variant} (mode {mode}): signals {', '.join(free)}")
    print("  leave-one-out on tune: " + "; ".join(f"{'+'.join(f)}: {a:.3f}" for f, a in loo.items()))
    for name, idx in (("tune", tune), ("test", test)):
        probs = [bag_probability(bags[i], w) for i in idx]
        answered = np.mean([p >= 0.5 for p, i in zip(probs, idx, strict=True) if labels[i] == 1])
        refused = np.mean([p < 0.5 for p, i in zip(probs, idx, strict=True) if labels[i] == 0])
        line = f"  {name}: n={len(idx)} accuracy@0.5={accuracy(probs, labels[idx]):.3f}"
        line += f" answerable kept={answered:.2f} unanswerable refused={refused:.2f}"
        if mode != "bm25" or cosine:
            baseline = accuracy([features[i][1] for i in idx], labels[idx])
            line += f" (baseline best cosine >= 0.5: {baseline:.3f})"
        print(line)
        for lang in ("en", "zh"):
            sub = [j for j, i in enumerate(idx) if cases[i]["lang"] == lang]
            acc = accuracy([probs[j] for j in sub], labels[idx][sub])
            print(f"    {lang}: accuracy={acc:.3f} (n={len(sub)})")
    weights = RelevanceWeights(**{name: round(float(v), 3) for name, v in zip(FEATURE_NAMES, w, strict=True)})
    print(f"  fitted {variant}:", weights.model_dump_json(exclude_defaults=True))
    return weights


def main(argv: list[str] | None = None) -> int:
    """Fit and report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--mode",
        default="all",
        choices=[*VARIANTS, "all"],
        help="RelevanceConfig weights to fit: a query mode, bm25_cosine (bm25 mode with bm25_uses_cosine) "
        "or all (default)",
    )
    parser.add_argument("--store", help="handbook store directory (default: a temporary one)")
    args = parser.parse_args(argv)
    kb = handbook_store(args.store or tempfile.mkdtemp(prefix="haygraph-calib-"))
    cases = load_cases(("answerable", "unanswerable"))
    for variant in VARIANTS if args.mode == "all" else (args.mode,):
        calibrate(kb, variant, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
