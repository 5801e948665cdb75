"""Agent-level evaluation on the labelled handbook cases (SPEC §7): routing, evidence validity, refusals.

Run: `python -m haygraph.eval.agent_eval [--store DIR] [--split all|tune|test] [--json FILE]`. Each case is
asked
on its own thread in offline mode. Reported:

- routing accuracy (expected route vs the graph's route), per kind;
- answerable: answered (`completed`), the expected source among the cited evidence, and the
  `answer_contains` fact present in a cited chunk;
- evidence validity: every cited id was retrieved in the same run (must be 100%);
- unanswerable: refused honestly (`insufficient_evidence`);
- latency of one `ask` per route (p50/p95 ms, process start and model loading excluded).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from haygraph.eval.calibrate_relevance import CASES, HANDBOOK
from haygraph.eval.harness import percentile


def score_case(case: dict[str, Any], result: dict[str, Any]) -> dict[str, bool]:
    """Per-case checks (only the ones that apply to the case's kind)."""
    retrieved = {e["id"]: e for e in result["evidence"]}
    cited = [retrieved[i] for i in result["evidence_ids"] if i in retrieved]
    checks = {
        "route": result["route"] == case["expected_route"],
        "valid_citations": all(i in retrieved for i in result["evidence_ids"]),
    }
    if case["kind"] == "answerable":
        checks["answered"] = result["status"] == "completed"
        checks["source_cited"] = any(e["source"] in case["expected_sources"] for e in cited)
        checks["fact_cited"] = all(any(f in e["text"] for e in cited) for f in case["answer_contains"])
    elif case["kind"] == "unanswerable":
        checks["refused"] = result["status"] == "insufficient_evidence"
    elif case["kind"] == "clarify":
        checks["asked"] = result["status"] == "needs_clarification"
    return checks


def run(store: str, split: str = "all") -> dict[str, Any]:
    """Ask every selected case and aggregate the checks."""
    from haygraph.adapters.agent import build_agent
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    if not (Path(store) / "CURRENT").is_file():
        KnowledgeBase(store_dir=store).index([HANDBOOK])
    agent = build_agent(store, example_tools=True)  # the cases include order lookups
    agent.ask("warm up", thread_id="warm-up")
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [c for c in cases if split == "all" or c["split"] == split]
    totals: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    latency: dict[str, list[float]] = defaultdict(list)
    failures = []
    for case in cases:
        result = agent.ask(case["question"], thread_id=f"case-{case['id']}")
        latency[result["route"]].append(result["timings_ms"]["total"])
        for name, ok in score_case(case, result).items():
            totals[case["kind"]][name].append(ok)
            totals["all"][name].append(ok)
            if not ok:
                failures.append(
                    {
                        "id": case["id"],
                        "check": name,
                        "status": result["status"],
                        "route": result["route"],
                        "path": result["path"],
                    }
                )
    return {
        "split": split,
        "cases": len(cases),
        "rates": {
            kind: {name: sum(v) / len(v) for name, v in checks.items()} for kind, checks in totals.items()
        },
        "latency_ms": {
            route: {"n": len(v), "p50": statistics.median(v), "p95": percentile(v, 95)}
            for route, v in latency.items()
        },
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the report (and optionally write it as JSON)."""
    parser = argparse.ArgumentParser(description="Agent-level evaluation on the labelled handbook cases.")
    parser.add_argument("--store", help="handbook store directory (default: a temporary one)")
    parser.add_argument("--split", default="all", choices=["all", "tune", "test"])
    parser.add_argument("--json", help="write the full report to this file")
    args = parser.parse_args(argv)
    report = run(args.store or tempfile.mkdtemp(prefix="haygraph-agent-eval-"), args.split)
    print(f"{report['cases']} cases ({report['split']})")
    for kind, rates in sorted(report["rates"].items()):
        print(f"  {kind:13s} " + "  ".join(f"{k}={v:.2f}" for k, v in rates.items()))
    for route, lat in sorted(report["latency_ms"].items()):
        print(f"  latency {route:9s} n={lat['n']:3d} p50={lat['p50']:.0f} ms p95={lat['p95']:.0f} ms")
    for fail in report["failures"]:
        print(f"  failed {fail['id']}: {fail['check']} (status={fail['status']}, route={fail['route']})")
    if args.json:
        Path(args.json).write_text(json.dumps(report, ensure_ascii=False, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
