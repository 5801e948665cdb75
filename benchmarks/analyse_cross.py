"""Why the decision misses cross-language turns: retrieval, the reader, the model or a rule (tune parts).

    python -m benchmarks.analyse_cross [--work DIR] [--docs DIR] [--reader bundled]

Reads the rows, readings, signals and rule verdicts that `benchmarks.train_answerability` and
`benchmarks.ablate_decision --meaning --modes hybrid` cached in `--work` (tune parts only: the handbook's
cross-language cases and the documentation tune cases asked over the other language's pages), and sorts
every answerable hybrid row by the first step that fails, as `AnswerabilityModel.decide` with the shipped
reader weights would take it:

- retrieval: no item in the other language was read;
- reader: its best span is in an item of the question's language (a wrong item), or it is across but
  scores no more than "no answer" (margin <= 0);
- model: the span is across with a positive margin but the probability is below the threshold;
- rule: a named rule vetoes the model's yes;
- answered.

Prints the counts per protocol and stage, and the median best-span margin across and in the same language.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmarks.ablate_decision import RULES, rule_keys
from benchmarks.train_answerability import (
    cached_examples,
    cached_readings,
    features_of,
    row_key,
    tune_protocols,
)
from haygraph.control.language import is_chinese
from haygraph.control.planning.decision.model import shipped_model
from haygraph.control.planning.decision.signals import FEATURE_NAMES

CROSS = ("handbook-cross", "docs-cross-en", "docs-cross-zh")


def main(argv: Sequence[str] | None = None) -> int:
    """Sort the answerable cross-language tune rows by where they fail; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/haygraph-answerability"))
    ap.add_argument("--docs", type=Path, default=None, help="documentation dataset (as train_answerability)")
    ap.add_argument("--reader", default="bundled")
    args = ap.parse_args(argv)
    examples = [
        r
        for protocol, _weight in tune_protocols(300, 200, 8.0, 0, args.docs)
        for r in cached_examples(protocol, args.work, 0)
        if r["mode"] == "hybrid"
    ]
    signals_file = args.work / "signals-meaning.json"
    rules_file = args.work / "rules-meaning.json"
    if not signals_file.is_file() or not rules_file.is_file():
        print(
            f"run benchmarks.ablate_decision --meaning --modes hybrid --work {args.work} first",
            file=sys.stderr,
        )
        return 2
    signals = json.loads(signals_file.read_text(encoding="utf-8"))["signals"]
    verdicts = json.loads(rules_file.read_text(encoding="utf-8"))["rows"]
    readings = cached_readings(examples, args.reader, args.work)
    keys = rule_keys()
    model = shipped_model(None, reader=True)
    weights = np.array([model.weights.get(name, 0.0) for name in FEATURE_NAMES])
    counts: Counter[tuple[str, str, str]] = Counter()
    margins: dict[str, list[float]] = {"across": [], "same language": []}
    for row, sig in zip(examples, signals, strict=True):
        if row["protocol"] not in CROSS or not row["label"]:
            continue
        reading = readings.get(row_key(row))
        items = {e["id"]: e for e in [*row["evidence"], *(row.get("candidates") or [])]}
        question = row["query"]
        other_read = any(is_chinese(e["text"]) != is_chinese(question) for e in items.values())
        best = reading.spans[0] if reading is not None and reading.spans else None
        across = (
            best is not None
            and best.evidence_id in items
            and is_chinese(items[best.evidence_id]["text"]) != is_chinese(question)
        )
        p = 1.0 / (1.0 + float(np.exp(-np.array(features_of(row, sig, reading)) @ weights)))
        fired = [name for name in RULES if verdicts[row_key(row)][keys[name]]]
        if not other_read:
            why = "retrieval: no other-language item read"
        elif best is None or not across:
            why = "reader: best span in the question's language"
        elif best.margin <= 0:
            why = "reader: across, margin <= 0"
        elif p < model.threshold:
            why = "model: across, margin > 0, below the threshold"
        elif fired:
            why = f"rule: {fired[0]}"
        else:
            why = "answered"
        counts[(row["protocol"], row["stage"], why)] += 1
        if best is not None:
            margins["across" if across else "same language"].append(best.margin)
    for (protocol, stage, why), n in sorted(counts.items()):
        print(f"{protocol:16s} {stage:9s} {why:48s} {n}")
    for side, values in margins.items():
        if values:
            print(f"best span {side}: {len(values)} rows, median margin {float(np.median(values)):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
