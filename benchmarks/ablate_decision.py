"""Ablate the answer-or-refuse decision on the tune parts: which signals and hand rules add to the reader.

    python -m benchmarks.ablate_decision --reader bundled [--work DIR] [--out FILE.json]

It reads the rows `benchmarks.train_answerability` collected (the tune parts only: CMRC 2018 tune, SciFact
train, handbook tune, handbook-cross, handbook-paraphrase tune, documentation tune; every query mode, both
the first and the expanded evidence of a turn) and the reader's readings of them, then for each variant:

- fits the logistic decision on its signals (5-fold by case, so every row is scored by a model that
  never saw its case), applies its hand rules as vetoes, and scores each turn as the agent decides it
  (answered when either stage passes);
- picks the threshold as the shipped training does (`train_answerability.best_threshold`);
- reports, per protocol/language group, the share of answerable turns answered and of unanswerable
  turns refused, and their macro balanced accuracy.

Signal groups: ``reader`` (the reader's margin), ``relevance`` (relevance, lexical relevance, gap),
``words`` (idf coverage, coverage, span, entities, unit coverage, type missing), ``meaning`` (the e5
meaning signals; with ``--meaning``). Rules (vetoes after the model, as `AnswerabilityModel.decide`
applies them): ``identifier`` (a code name no evidence mentions), ``name`` (a Chinese proper name no
evidence mentions), ``sibling`` (a Chinese noun whose sibling the quoted unit states), ``type`` (the
asked-for number / duration / time / default ... is not in the unit the reader's span lies in).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.train_answerability import (
    best_threshold,
    cached_examples,
    cached_features,
    cached_readings,
    fit,
    fold_of,
    group_rates,
    row_key,
    turn_level,
)
from haygraph.control.evidence import Evidence
from haygraph.control.planning.answerability import (
    FEATURE_NAMES,
    REQUIRED_TYPES,
    SIGNALS,
    absent_code_terms,
    quoted_units,
)
from haygraph.control.planning.extractive import asked_type, holds_type
from haygraph.control.planning.meaning import MEANING_SIGNALS, contrasted_words, missing_names
from haygraph.control.planning.reader_answer import holding_unit, usable_span
from haygraph.control.reading import Reading

GROUPS = {
    "reader": ("reader_margin",),
    "relevance": ("relevance", "lexical_relevance", "gap"),
    "words": (
        "idf_coverage",
        "coverage",
        "span",
        "entities",
        "has_entities",
        "unit_coverage",
        "type_missing",
    ),
    "meaning": MEANING_SIGNALS,
}
"""The decision's signals (`answerability.SIGNALS`) by group; every signal is in exactly one."""
if sorted(s for group in GROUPS.values() for s in group) != sorted(SIGNALS):
    raise RuntimeError("GROUPS must hold every signal of answerability.SIGNALS exactly once")
RULES = ("identifier", "name", "sibling", "type")


def rule_vetoes(row: dict[str, Any], reading: Reading | None, encoder: Any) -> dict[str, bool]:
    """Which hand rules refuse this row (each computed as the decision applies it)."""
    question = row.get("question") or row["query"]
    evidence = [Evidence.model_validate(e) for e in row["evidence"]]
    texts = [e.text for e in evidence]
    unit = None
    if reading is not None:
        found = usable_span(reading, evidence)
        if found is not None:
            span, item = found
            unit = holding_unit(item.text, span.start, span.end) or span.text
    kind = asked_type(question)
    return {
        "identifier": bool(absent_code_terms(question, evidence)),
        "name": bool(missing_names(question, texts)),
        "sibling": bool(
            contrasted_words(
                row["query"], texts, quoted_units(row["query"], evidence), encoder, asked=question
            )
        ),
        "type": kind in REQUIRED_TYPES and (unit is None or not holds_type(kind, unit)),
    }


def evaluate_variant(
    examples: list[dict[str, Any]],
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    signals: Sequence[str],
    vetoes: np.ndarray,
    min_refusal: float,
) -> dict[str, Any]:
    """Held-out turn-level rates of one variant (its signals, its vetoes) at its chosen threshold."""
    keep = np.array([name.split("_", 1)[1] in signals or name.endswith("_bias") for name in FEATURE_NAMES])
    xv = x * keep
    fold = np.array([fold_of(r, 5) for r in examples])
    prob = np.zeros(len(examples))
    for k in range(5):
        prob[fold == k] = fit(xv[fold != k], y[fold != k], w[fold != k]).predict_proba(xv[fold == k])[:, 1]
    prob = np.where(vetoes, 0.0, prob)
    turns, turn_prob, turn_y = turn_level(examples, prob, y)
    threshold = best_threshold(turns, turn_prob, turn_y, 1.0, min_refusal)
    rates = group_rates(turns, turn_prob, turn_y, threshold)
    balanced = [np.nanmean([g["answered"], g["refused"]]) for g in rates.values()]
    return {"threshold": threshold, "macro_balanced": round(float(np.mean(balanced)), 4), "groups": rates}


def main(argv: Sequence[str] | None = None) -> int:
    """Collect (cached), compute the rule verdicts, evaluate every variant, print and write the table."""
    from benchmarks.train_answerability import tune_protocols

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", default="bundled", help="reader weights ('bundled' or a train_reader folder)")
    ap.add_argument("--work", default="/tmp/haygraph-answerability", help="train_answerability's work folder")
    ap.add_argument("--meaning", action="store_true", help="also ablate the meaning signals (e5 encoder)")
    ap.add_argument("--min-refusal", type=float, default=0.7)
    ap.add_argument("--handbook-weight", type=float, default=8.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the table as JSON")
    args = ap.parse_args(argv)
    work = Path(args.work)
    protocols = tune_protocols(300, 200, args.handbook_weight, args.seed)
    examples: list[dict[str, Any]] = []
    weights: list[float] = []
    for protocol, weight in protocols:
        got = cached_examples(protocol, work, args.seed)
        examples.extend(got)
        weights.extend([weight] * len(got))
    readings = cached_readings(examples, args.reader, work)
    encoder = None
    if args.meaning:
        from haygraph.adapters.meaning_encoder import E5MeaningEncoder

        encoder = E5MeaningEncoder()
    kind = "reader-meaning" if args.meaning else "reader-plain"
    x = cached_features(examples, encoder, work / f"features-{kind}.npz", readings)
    vetoes_path = work / "vetoes.json"
    known = json.loads(vetoes_path.read_text()) if vetoes_path.is_file() else {}
    for k, row in enumerate(examples):
        if row_key(row) not in known:
            known[row_key(row)] = rule_vetoes(row, readings.get(row_key(row)), encoder)
            if k % 500 == 0:
                print(f"rules: {k} / {len(examples)}", file=sys.stderr)
    vetoes_path.write_text(json.dumps(known))
    veto = {name: np.array([known[row_key(r)][name] for r in examples]) for name in RULES}
    y = np.array([int(r["label"]) for r in examples])
    w = np.array(weights)
    base_groups = ["reader", "relevance", "words"] + (["meaning"] if args.meaning else [])
    variants: list[tuple[str, list[str], list[str]]] = [
        ("reader", ["reader"], []),
        ("reader+relevance", ["reader", "relevance"], []),
        ("reader+relevance+words", ["reader", "relevance", "words"], []),
        ("all signals", base_groups, []),
        ("all signals, all rules", base_groups, list(RULES)),
        ("relevance+words, all rules (no reader)", ["relevance", "words"], list(RULES)),
    ]
    best_signals = ["reader", "relevance"]
    for rule in RULES:
        variants.append((f"reader+relevance +{rule}", best_signals, [rule]))
        others = [r for r in RULES if r != rule]
        variants.append((f"all signals, all rules -{rule}", base_groups, others))
    table = {}
    for name, groups, rules in variants:
        signals = [s for g in groups for s in GROUPS[g]]
        vetoes = np.zeros(len(examples), dtype=bool)
        for rule in rules:
            vetoes |= veto[rule]
        table[name] = evaluate_variant(examples, x, y, w, signals, vetoes, args.min_refusal)
        res = table[name]
        cells = " ".join(f"{g}={v['answered']:.2f}/{v['refused']:.2f}" for g, v in res["groups"].items())
        print(f"{name:44s} thr {res['threshold']:.2f} macro {res['macro_balanced']:.3f} | {cells}")
    if args.out:
        args.out.write_text(json.dumps(table, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
