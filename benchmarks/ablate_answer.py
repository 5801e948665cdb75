"""What the offline answer should quote, measured on the tune parts: the reader's span unit or the picker's.

    python -m benchmarks.ablate_answer [--reader bundled] [--work DIR] [--precision 0.9] [--out FILE.json]

It reads the rows and readings `benchmarks.train_answerability` collected (tune parts only) and, for each
answerable turn (a present case whose gold the agent read; the expanded stage, what an answer after
the decision reads), builds the offline answer three ways from the same evidence:

- ``picker``: the sentence picker's quote (`extractive.extractive_answer`, up to three units);
- ``span unit``: the unit that holds the reader's best span, cited (`reader_answer.reader_answer`);
- ``span unit, picker when no span``: the span's unit, or the picker's quote when the reader found none;
- ``shipped``: what the agent answers (`reader_answer.combined_answer`: the picker's quote in the same
  language, narrowed to the span's table row; the span's unit across languages).

For each it reports per protocol/language group the share of turns whose answer holds every gold answer
string (``contains``) and cites a gold source. It also fits the *lead margin*: the smallest reader
margin at which the span's value, put first, is right (it holds a gold answer string, or is a part of
one at least half its length) in at least `--precision` of the tune turns at or above it, and reports
how often a value leads at that margin.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.train_answerability import cached_examples, cached_readings, row_key, tune_protocols
from haygraph.control.evidence import Evidence, merge_evidence
from haygraph.control.planning.extractive import ExtractiveAnswer, extractive_answer
from haygraph.control.planning.reader_answer import (
    combined_answer,
    readable_value,
    reader_answer,
    usable_span,
)
from haygraph.control.reading import Reading

WAYS = ("picker", "span unit", "span unit, picker when no span", "shipped")


def value_right(value: str, golds: Sequence[str]) -> bool:
    """Whether a span's value is a right answer: it holds a gold string, or is most of one."""
    v = " ".join(value.lower().split())
    if not v:
        return False
    for gold in golds:
        g = " ".join(gold.lower().split())
        if g and (g in v or (v in g and len(v) >= 0.5 * len(g))):
            return True
    return False


def holds_all(
    answer: ExtractiveAnswer | None, golds: Sequence[str], sources: set[str], by_id: dict[str, str]
) -> bool:
    """Whether `answer` holds every gold string and cites a gold source (CMRC: any gold string)."""
    if answer is None:
        return False
    cited = {by_id.get(i, "") for i in answer.evidence_ids}
    return bool(cited & sources) and (not golds or all(g in answer.answer for g in golds))


def lead_margin(points: list[tuple[float, bool]], precision: float) -> float:
    """The smallest margin m such that values at margin >= m are right in >= `precision` of cases."""
    best = float("inf")
    for m, _ in sorted(points, reverse=True):
        above = [ok for mm, ok in points if mm >= m]
        if above and sum(above) / len(above) >= precision:
            best = m
    return best


def answer_table(
    examples: list[dict[str, Any]],
    cases: dict[tuple[str, str], Any],
    readings: dict[str, Reading],
    encoder: Any = None,
    lead: float = float("inf"),
) -> tuple[dict[str, dict[str, list[bool]]], list[tuple[float, bool]]]:
    """Per group and way, whether each answerable turn's answer is right; and (margin, value right) points.

    A point is the best usable span of a turn whose span lies in a gold item: its margin and whether its
    value is right (`value_right`), for fitting the lead margin.
    """
    table: dict[str, dict[str, list[bool]]] = {}
    points: list[tuple[float, bool]] = []
    for row in examples:
        case = cases.get((row["protocol"], row["id"]))
        if row["stage"] != "expanded" or not row["label"] or case is None or row["protocol"] == "scifact":
            continue
        evidence = [Evidence.model_validate(e) for e in row["evidence"]]
        candidates = [Evidence.model_validate(e) for e in row.get("candidates") or []]
        reading = readings.get(row_key(row)) or Reading()
        pool = merge_evidence(list(evidence), candidates)
        by_id = {e.id: e.source for e in pool}
        found = usable_span(reading, pool)
        kept = list(evidence) + ([found[1]] if found and found[1] not in evidence else [])
        golds = list(case.answers)
        sources = set(case.gold_sources)
        picked = extractive_answer(row["query"], evidence, encoder=encoder)
        unit = reader_answer(row["question"], reading, kept, lead_margin=float("inf"))
        group = table.setdefault(f"{row['protocol']}/{row['lang']}/{row['mode']}", {w: [] for w in WAYS})
        shipped = combined_answer(row["question"], reading, kept, picked, lead)
        answers = (picked, unit, unit or picked, shipped)
        if row["protocol"] == "cmrc":  # any one of CMRC's answer strings
            ok = [any(holds_all(a, [g], sources, by_id) for g in golds) for a in answers]
        else:
            ok = [holds_all(a, golds, sources, by_id) for a in answers]
        for way, good in zip(WAYS, ok, strict=True):
            group[way].append(good)
        if found is not None and sources & {found[1].source}:
            points.append((found[0].margin, value_right(readable_value(found[0].text), golds)))
    return table, points


def main(argv: Sequence[str] | None = None) -> int:
    """Compare the three ways per group and fit the lead margin; print and optionally write the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reader", default="bundled")
    ap.add_argument("--work", default="/tmp/haygraph-answerability")
    ap.add_argument("--docs", type=Path, default=None)
    ap.add_argument("--precision", type=float, default=0.9)
    ap.add_argument("--meaning", action="store_true", help="the picker reads meaning (as the default agent)")
    ap.add_argument("--modes", default="hybrid,bm25,dense", help="query modes whose rows are read")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    work = Path(args.work)
    protocols = tune_protocols(300, 200, 8.0, args.seed, args.docs)
    examples: list[dict[str, Any]] = []
    cases: dict[tuple[str, str], Any] = {}
    for protocol, _weight in protocols:
        examples.extend(
            r for r in cached_examples(protocol, work, args.seed) if r["mode"] in args.modes.split(",")
        )
        cases.update({(protocol.name, c.id): c for c in protocol.cases})
    readings = cached_readings(examples, args.reader, work)
    encoder = None
    if args.meaning:
        from haygraph.adapters.meaning_encoder import E5MeaningEncoder

        encoder = E5MeaningEncoder()
    table, points = answer_table(examples, cases, readings, encoder)
    out: dict[str, Any] = {"groups": {}}
    for key in sorted(table):
        rates = {w: round(float(np.mean(v)), 3) for w, v in table[key].items()}
        out["groups"][key] = {"n": len(table[key][WAYS[0]]), **rates}
        print(
            f"{key:40s} n={len(table[key][WAYS[0]]):4d} " + " ".join(f"{w}={r:.3f}" for w, r in rates.items())
        )
    margin = lead_margin(points, args.precision)
    led = [ok for m, ok in points if m >= margin]
    out["lead_margin"] = margin
    out["lead"] = {
        "share_led": round(len(led) / max(1, len(points)), 3),
        "right": round(float(np.mean(led)) if led else 0.0, 3),
    }
    print(
        f"lead margin {margin:.2f}: a value leads in {out['lead']['share_led']:.2f} of {len(points)} spans "
        f"in a gold item, right {out['lead']['right']:.3f}"
    )
    if args.out:
        args.out.write_text(json.dumps(out, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
