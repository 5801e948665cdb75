"""Should a trained reader replace the shipped one? The shipping rule, read from the measurements.

    python -m benchmarks.reader_gate --shipped SHIPPED_EVAL.json --candidate CANDIDATE_EVAL.json
        --shipped-decision SHIPPED_ABLATION.json --candidate-decision CANDIDATE_ABLATION.json

The inputs are what the existing commands write, on dev and tune parts only:

- ``python -m benchmarks.eval_reader --model DIR --dev dev.jsonl --out EVAL.json`` for each reader (the
  shipped one: no ``--model``): the dev slice in int8, the way the runtime reads;
- ``python -m benchmarks.ablate_decision --reader DIR --meaning --modes hybrid --docs <vue-docs> --out
  ABLATION.json`` for each (``--reader bundled`` for the shipped one): the answer-or-refuse decision
  refitted on the reader's margins, scored on the tune parts held out by 5-fold.

The rule (issue 48, made stricter after the first candidate, whose F1 gain was refusals; the model
card): ship only when

1. the dev slice gains at least ``--min-f1-gain`` (1.0) F1 over both languages (examples weighted);
2. HasAns F1 (the answers found) falls by no more than ``--hasans-tolerance`` (0.5) in either language;
3. the refitted decision's macro balanced accuracy ("all signals, all rules") is at least the shipped
   one's less ``--decision-tolerance`` (0.005, the tolerance within which the ablation counts scores as
   equal).

Only a candidate that passes goes on to the end-to-end figures on the test parts, measured once. Prints
each check and the verdict; exits 0 for "ship", 1 for "do not ship".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DECISION_VARIANT = "all signals, all rules"


@dataclass(frozen=True)
class Check:
    """One condition of the rule: its name, the figures it compared, and whether it holds."""

    name: str
    shipped: float
    candidate: float
    passed: bool

    def line(self) -> str:
        """The check as one printed line."""
        delta = self.candidate - self.shipped
        verdict = "PASS" if self.passed else "FAIL"
        return f"{verdict}  {self.name}: {self.shipped:.3f} -> {self.candidate:.3f} ({delta:+.3f})"


def _dev(results: dict[str, Any], source: Path) -> dict[str, dict[str, float]]:
    if "dev" not in results:
        raise ValueError(f"{source} holds no dev-slice scores: run eval_reader with --dev")
    return {lang: scores["at_threshold"] for lang, scores in results["dev"].items()}


def _macro(ablation: dict[str, Any], source: Path) -> float:
    if DECISION_VARIANT not in ablation:
        raise ValueError(f"{source} holds no {DECISION_VARIANT!r} variant: is it ablate_decision's --out?")
    return float(ablation[DECISION_VARIANT]["macro_balanced"])


def checks(
    shipped: dict[str, Any],
    candidate: dict[str, Any],
    shipped_decision: dict[str, Any],
    candidate_decision: dict[str, Any],
    *,
    min_f1_gain: float = 1.0,
    hasans_tolerance: float = 0.5,
    decision_tolerance: float = 0.005,
    sources: Sequence[Path] = (Path("shipped"), Path("candidate"), Path("shipped"), Path("candidate")),
) -> list[Check]:
    """The rule's checks, in order (see the module docstring)."""
    old, new = _dev(shipped, sources[0]), _dev(candidate, sources[1])
    langs = sorted(set(old) & set(new))
    if not langs:
        raise ValueError("the two dev results share no language")
    for lang in langs:
        if old[lang]["total"] != new[lang]["total"]:
            raise ValueError(f"dev {lang}: {old[lang]['total']} examples against {new[lang]['total']}")

    def weighted(scores: dict[str, dict[str, float]]) -> float:
        total = sum(scores[x]["total"] for x in langs)
        return sum(scores[x]["f1"] * scores[x]["total"] for x in langs) / total

    out = [
        Check(
            f"dev F1, {'+'.join(langs)} weighted (gain >= {min_f1_gain})",
            weighted(old),
            weighted(new),
            weighted(new) - weighted(old) >= min_f1_gain,
        )
    ]
    for lang in langs:
        a, b = old[lang]["HasAns_f1"], new[lang]["HasAns_f1"]
        out.append(
            Check(f"dev HasAns F1 {lang} (falls <= {hasans_tolerance})", a, b, b >= a - hasans_tolerance)
        )
    a, b = _macro(shipped_decision, sources[2]), _macro(candidate_decision, sources[3])
    out.append(
        Check(
            f"decision refit, tune macro ({DECISION_VARIANT}; falls <= {decision_tolerance})",
            a,
            b,
            b >= a - decision_tolerance,
        )
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: print the checks and the verdict; 0 = ship, 1 = do not ship."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--shipped", type=Path, required=True, help="eval_reader --dev --out JSON, shipped reader"
    )
    ap.add_argument("--candidate", type=Path, required=True, help="eval_reader --dev --out JSON, candidate")
    ap.add_argument(
        "--shipped-decision", type=Path, required=True, help="ablate_decision --out JSON, shipped"
    )
    ap.add_argument(
        "--candidate-decision", type=Path, required=True, help="ablate_decision --out JSON, candidate"
    )
    ap.add_argument("--min-f1-gain", type=float, default=1.0)
    ap.add_argument("--hasans-tolerance", type=float, default=0.5)
    ap.add_argument("--decision-tolerance", type=float, default=0.005)
    args = ap.parse_args(argv)
    paths = [args.shipped, args.candidate, args.shipped_decision, args.candidate_decision]
    for path in paths:
        if not path.is_file():
            ap.error(f"{path} does not exist")
    loaded = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    try:
        result = checks(
            *loaded,
            min_f1_gain=args.min_f1_gain,
            hasans_tolerance=args.hasans_tolerance,
            decision_tolerance=args.decision_tolerance,
            sources=paths,
        )
    except ValueError as exc:
        ap.error(str(exc))
    for check in result:
        print(check.line())
    ship = all(c.passed for c in result)
    print("verdict: ship (then measure the end-to-end test figures once)" if ship else "verdict: do not ship")
    return 0 if ship else 1


if __name__ == "__main__":
    sys.exit(main())
