"""Ablate the answer-or-refuse decision on the tune parts: which signals and hand rules add to the reader.

    python -m benchmarks.ablate_decision --reader bundled [--work DIR] [--out FILE.json]

It reads the rows `benchmarks.train_answerability` collected (the tune parts only: CMRC 2018 tune, SciFact
train, handbook tune, handbook-cross, handbook-paraphrase tune, documentation tune and its cross-language
directions; every query mode, both
the first and the expanded evidence of a turn) and the reader's readings of them, then for each variant:

- fits the logistic decision on its signals (5-fold by case, so every row is scored by a model that
  never saw its case), applies its hand rules as vetoes, and scores each turn as the agent decides it
  (answered when either stage passes);
- picks the threshold as the shipped training does (`train_answerability.best_threshold`);
- reports, per protocol/language group, the share of answerable turns answered and of unanswerable
  turns refused, and their macro balanced accuracy.

Signal groups: ``reader`` (the reader's margin and whether its span is across languages),
``relevance`` (relevance, lexical relevance, gap), ``words`` (idf coverage, coverage, span, entities,
unit coverage, type missing), ``meaning`` (the e5 meaning signals; with ``--meaning``). Rules: every
named rule of `decision.rules.RULES`, applied as `AnswerabilityModel.decide` applies them (``before``
rules refuse outright; ``after`` rules veto a yes, in every language pair). Each rule is left out in
turn from "all signals, all rules", and its gain (answered and refused, mean over the groups, each
variant at its own threshold) is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.train_answerability import (
    best_threshold,
    cached_examples,
    cached_readings,
    cached_signals,
    digest_files,
    feature_matrix,
    fit,
    fold_of,
    group_rates,
    row_key,
    turn_level,
)
from haygraph.control.evidence import Evidence
from haygraph.control.language import is_chinese
from haygraph.control.planning.decision.rules import RULES as ANSWER_RULES
from haygraph.control.planning.decision.rules import RuleInput
from haygraph.control.planning.decision.signals import FEATURE_NAMES, SIGNALS, reader_signals
from haygraph.control.planning.meaning import MEANING_SIGNALS
from haygraph.control.reading import Reading

GROUPS = {
    "reader": ("reader_margin", "reader_across", "reader_across_margin"),
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
"""The decision's signals (`decision.signals.SIGNALS`) by group; every signal is in exactly one."""
if sorted(s for group in GROUPS.values() for s in group) != sorted(SIGNALS):
    raise RuntimeError("GROUPS must hold every signal of decision.signals.SIGNALS exactly once")
RULES = tuple(rule.name for rule in ANSWER_RULES)
STAGE = {rule.name: rule.stage for rule in ANSWER_RULES}


def rule_verdicts(
    row: dict[str, Any], signals: dict[str, float], encoder: Any, names: Sequence[str] = RULES
) -> dict[str, bool]:
    """Which of the decision's named rules (`decision.rules.RULES`; those in `names`) refuse this row.

    As `AnswerabilityModel.decide` applies them: on the rewritten query, the user's words and the row's
    evidence, with the row's cached signals (the type rules read ``type_missing``).
    """
    evidence = [Evidence.model_validate(e) for e in row["evidence"]]
    question = row["query"]
    asked = row.get("question") or question
    early = RuleInput(question, asked, evidence, {}, encoder)
    late = RuleInput(question, asked, evidence, signals, encoder)
    return {
        rule.name: bool(rule.check(early if rule.stage == "before" else late))
        for rule in ANSWER_RULES
        if rule.name in names
    }


def dependencies_digest() -> str:
    """A digest of the modules the rules read (lexicon, signals, picker, meaning, answer units)."""
    import haygraph.control.planning.answer_units as units_module
    import haygraph.control.planning.decision.lexicon as lexicon_module
    import haygraph.control.planning.decision.signals as signals_module
    import haygraph.control.planning.extractive as extractive_module
    import haygraph.control.planning.meaning as meaning_module

    digest = hashlib.sha256()
    digest_files(digest, (units_module, lexicon_module, signals_module, extractive_module, meaning_module))
    return digest.hexdigest()[:16]


def rule_keys() -> dict[str, str]:
    """Each rule's cache key: its name and a digest of its check's code (its docstring left out)."""
    keys = {}
    for rule in ANSWER_RULES:
        source = inspect.getsource(rule.check)
        body = re.sub(r'^(\s*def [^\n]*\n)\s*"""(?:.|\n)*?"""\n', r"\1", source, count=1)
        keys[rule.name] = f"{rule.name}@{hashlib.sha256(body.encode()).hexdigest()[:12]}"
    return keys


def held_out_prob(
    examples: list[dict[str, Any]],
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    signals: Sequence[str],
    vetoes: np.ndarray,
) -> np.ndarray:
    """Each row's probability from a model fitted on the other 4 of 5 folds (by case), on `signals` only.

    0 where a rule in `vetoes` refuses.
    """
    keep = np.array([name.split("_", 1)[1] in signals or name.endswith("_bias") for name in FEATURE_NAMES])
    xv = x * keep
    fold = np.array([fold_of(r, 5) for r in examples])
    prob = np.zeros(len(examples))
    for k in range(5):
        prob[fold == k] = fit(xv[fold != k], y[fold != k], w[fold != k]).predict_proba(xv[fold == k])[:, 1]
    return np.where(vetoes, 0.0, prob)


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
    prob = held_out_prob(examples, x, y, w, signals, vetoes)
    turns, turn_prob, turn_y = turn_level(examples, prob, y)
    threshold = best_threshold(turns, turn_prob, turn_y, 1.0, min_refusal)
    rates = group_rates(turns, turn_prob, turn_y, threshold)
    return {"threshold": threshold, "macro_balanced": round(macro_balanced(rates), 4), "groups": rates}


def macro_balanced(rates: dict[str, dict[str, float]]) -> float:
    """The mean over the groups of each group's balanced accuracy (answered and refused, those it has)."""
    return float(np.mean([np.nanmean([g["answered"], g["refused"]]) for g in rates.values()]))


SIDES = ("en", "zh", "across")
"""The sides a threshold could be fitted for: the question's language, or across languages."""


def side_of(question: str, signals: dict[str, float]) -> str:
    """``across`` when the reader's best span is in the other language, else the question's language."""
    if signals.get("reader_across"):
        return "across"
    return "zh" if is_chinese(question) else "en"


def row_sides(examples: list[dict[str, Any]], readings: dict[str, Reading]) -> np.ndarray:
    """Each row's side (`side_of`).

    ``across`` when the reader's best span is in the other language, else the question's language.
    """
    sides = []
    for row in examples:
        items = [Evidence.model_validate(e) for e in [*row["evidence"], *(row.get("candidates") or [])]]
        signals = reader_signals(row["query"], readings.get(row_key(row)), items)
        sides.append(side_of(row["query"], signals))
    return np.array(sides)


def side_rates(
    examples: list[dict[str, Any]], prob: np.ndarray, y: np.ndarray, sides: np.ndarray, th: dict[str, float]
) -> dict[str, dict[str, float]]:
    """Turn-level group rates when each row is held to its side's threshold in `th`.

    A turn is answered when any of its stages clears its own side's threshold.
    """
    shifted = prob - np.array([th[s] for s in sides]) + 0.5
    turns, turn_prob, turn_y = turn_level(examples, shifted, y)
    return group_rates(turns, turn_prob, turn_y, 0.5)


def side_thresholds(
    examples: list[dict[str, Any]],
    prob: np.ndarray,
    y: np.ndarray,
    sides: np.ndarray,
    min_refusal: float,
    start: float,
) -> dict[str, float]:
    """A threshold per side (`SIDES`), by coordinate search from the one threshold `start`.

    Measured, not shipped: the decision has one threshold (see docs/evaluation.md for why).

    The objective is `train_answerability.best_threshold`'s at the turn level (a turn is answered when
    any stage clears its own side's threshold), with the refusal floor applied per family of groups
    (English questions, Chinese questions, across languages) rather than over all groups: the
    cross-language groups refuse nearly everything, so a mean over all groups let the same-language
    groups refuse less. Among settings whose every family refuses at least `min_refusal` on average,
    the best macro balanced accuracy over the groups; ties go to the setting nearest `start`.
    """
    grid = [round(float(t), 2) for t in np.arange(0.3, 0.71, 0.02)]

    def score(th: dict[str, float]) -> tuple[bool, float, float]:
        by_group = side_rates(examples, prob, y, sides, th)
        families: dict[str, list[float]] = {}
        for group, rate in by_group.items():
            lang = group.rsplit("/", 1)[1]
            families.setdefault("across" if "->" in lang else lang, []).append(rate["refused"])
        enough = all(float(np.nanmean(refused)) >= min_refusal for refused in families.values())
        return enough, round(macro_balanced(by_group), 6), -sum(abs(v - start) for v in th.values())

    chosen = dict.fromkeys(SIDES, start)
    for _ in range(3):
        for side in SIDES:
            chosen[side] = max(grid, key=lambda t: score({**chosen, side: t}))
    return chosen


def evaluate_sides(
    examples: list[dict[str, Any]],
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    signals: Sequence[str],
    vetoes: np.ndarray,
    min_refusal: float,
    sides: np.ndarray,
    start: float,
) -> dict[str, Any]:
    """`evaluate_variant` with a threshold per side (`side_thresholds`) instead of one."""
    prob = held_out_prob(examples, x, y, w, signals, vetoes)
    chosen = side_thresholds(examples, prob, y, sides, min_refusal, start)
    rates = side_rates(examples, prob, y, sides, chosen)
    return {"side_thresholds": chosen, "macro_balanced": round(macro_balanced(rates), 4), "groups": rates}


def mean_rate(result: dict[str, Any], key: str) -> float:
    """The mean over a variant's groups of its answered or refused share (groups without any left out)."""
    return float(np.nanmean([g[key] for g in result["groups"].values()]))


def main(argv: Sequence[str] | None = None) -> int:
    """Collect (cached), compute the rule verdicts, evaluate every variant, print and write the table."""
    from benchmarks.train_answerability import tune_protocols

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", default="bundled", help="reader weights ('bundled' or a train_reader folder)")
    ap.add_argument("--work", default="/tmp/haygraph-answerability", help="train_answerability's work folder")
    ap.add_argument("--meaning", action="store_true", help="also ablate the meaning signals (e5 encoder)")
    ap.add_argument("--min-refusal", type=float, default=0.7)
    ap.add_argument("--handbook-weight", type=float, default=8.0)
    ap.add_argument("--modes", default="hybrid,bm25,dense", help="query modes whose rows are read")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--docs", type=Path, default=None, help="documentation dataset (as train_answerability)")
    ap.add_argument("--out", type=Path, help="write the table as JSON")
    ap.add_argument(
        "--set-threshold",
        type=Path,
        metavar="WEIGHTS",
        help="write the 'all signals, all rules' threshold into this weights file (train_answerability's "
        "output; its own model-only pick is kept as threshold_model_only)",
    )
    args = ap.parse_args(argv)
    work = Path(args.work)
    protocols = tune_protocols(300, 200, args.handbook_weight, args.seed, args.docs)
    examples: list[dict[str, Any]] = []
    weights: list[float] = []
    for protocol, weight in protocols:
        got = [r for r in cached_examples(protocol, work, args.seed) if r["mode"] in args.modes.split(",")]
        examples.extend(got)
        weights.extend([weight] * len(got))
    readings = cached_readings(examples, args.reader, work)
    encoder = None
    if args.meaning:
        from haygraph.adapters.meaning_encoder import E5MeaningEncoder

        encoder = E5MeaningEncoder()
    signals = cached_signals(
        examples, encoder, work / f"signals-{'meaning' if args.meaning else 'plain'}.json"
    )
    x = feature_matrix(examples, signals, readings)
    verdicts_path = work / f"rules-{'meaning' if args.meaning else 'plain'}.json"
    # verdicts are kept per rule and version of its code: a new or changed rule computes only its own
    known = json.loads(verdicts_path.read_text()) if verdicts_path.is_file() else {}
    if known.get("code") != dependencies_digest():
        known = {"code": dependencies_digest(), "rows": {}}
    keys = rule_keys()
    for k, (row, sig) in enumerate(zip(examples, signals, strict=True)):
        have = known["rows"].setdefault(row_key(row), {})
        missing = [name for name in RULES if keys[name] not in have]
        if missing:
            verdicts = rule_verdicts(row, sig, encoder, missing)
            have.update({keys[name]: fired for name, fired in verdicts.items()})
            if k % 500 == 0:
                print(f"rules: {k} / {len(examples)}", file=sys.stderr)
    verdicts_path.write_text(json.dumps(known))
    veto = {name: np.array([known["rows"][row_key(r)][keys[name]] for r in examples]) for name in RULES}
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
    for rule in RULES:
        others = [r for r in RULES if r != rule]
        variants.append((f"all signals, all rules -{rule}", base_groups, others))
    table = {}
    for name, groups, rules in variants:
        signals_kept = [s for g in groups for s in GROUPS[g]]
        vetoes = np.zeros(len(examples), dtype=bool)
        for rule in rules:
            vetoes |= veto[rule]
        table[name] = evaluate_variant(examples, x, y, w, signals_kept, vetoes, args.min_refusal)
        res = table[name]
        cells = " ".join(f"{g}={v['answered']:.2f}/{v['refused']:.2f}" for g, v in res["groups"].items())
        print(f"{name:44s} thr {res['threshold']:.2f} macro {res['macro_balanced']:.3f} | {cells}")
    full = table["all signals, all rules"]
    sides = row_sides(examples, readings)
    all_rules = np.zeros(len(examples), dtype=bool)
    for rule in RULES:
        all_rules |= veto[rule]
    all_signals = [s for g in base_groups for s in GROUPS[g]]
    by_side = evaluate_sides(
        examples, x, y, w, all_signals, all_rules, args.min_refusal, sides, full["threshold"]
    )
    table["all signals, all rules, thresholds by side"] = by_side
    cells = " ".join(f"{g}={v['answered']:.2f}/{v['refused']:.2f}" for g, v in by_side["groups"].items())
    print(
        f"{'all signals, all rules, thresholds by side':44s} {by_side['side_thresholds']} "
        f"macro {by_side['macro_balanced']:.3f} | {cells}"
    )
    print("\nrule gains (all signals, all rules minus the variant without it; mean over groups):")
    gains = {}
    for rule in RULES:
        without = table[f"all signals, all rules -{rule}"]
        gains[rule] = {
            "answered": round(mean_rate(full, "answered") - mean_rate(without, "answered"), 4),
            "refused": round(mean_rate(full, "refused") - mean_rate(without, "refused"), 4),
            "fires": int(veto[rule].sum()),
        }
        print(
            f"  {rule:18s} answered {gains[rule]['answered']:+.4f} refused {gains[rule]['refused']:+.4f} "
            f"(vetoes {gains[rule]['fires']} rows)"
        )
    table["rule gains"] = gains  # type: ignore[assignment]
    if args.out:
        args.out.write_text(json.dumps(table, indent=1), encoding="utf-8")
    if args.set_threshold:
        set_threshold(args.set_threshold, full, args)
    return 0


def set_threshold(path: Path, full: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the threshold the shipped decision uses (every rule applied) into a weights file.

    `train_answerability` picks its threshold for the model alone; the agent applies the rules too, so the
    shipped threshold is the "all signals, all rules" variant's, picked the same way. The file keeps the
    model-only pick (``threshold_model_only``), how this one was picked and its held-out rates.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    if "threshold_model_only" not in data:
        data["threshold_model_only"] = data["threshold"]
    data["threshold"] = full["threshold"]
    data["threshold_by"] = (
        f"python -m benchmarks.ablate_decision --reader {args.reader}{' --meaning' if args.meaning else ''} "
        f"--modes {args.modes} --docs <vue-docs> --set-threshold {path.name} (--min-refusal "
        f"{args.min_refusal}, as train_answerability): the 'all signals, all rules' variant's threshold "
        "(every rule of decision.rules.RULES applied, in every language pair), 5-fold held out; macro "
        "scores within 0.005 of the best count as equal and the most refusing wins "
        f"({full['threshold']:.2f}: macro {full['macro_balanced']:.3f})"
    )
    data["held_out_with_rules"] = full["groups"]
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(f"threshold {full['threshold']:.2f} written to {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
