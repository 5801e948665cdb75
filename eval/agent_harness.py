"""The agent harness: ask a protocol's questions through the real agent and score the replies.

For each query mode (hybrid, bm25, dense) the protocol's store is built once (`build_store`, the
embedding cache makes rebuilding cheap) and every case is asked on its own thread. Figures, per
group (a case's `lang`: its language, or its direction in the cross-language protocol) and overall
(`score_reply`, `aggregate`):

- ``answered_correct``: present cases answered (`completed`) with a gold answer string in the answer
  (all of them for the handbook's ``answer_contains``) and none of the case's ``excludes`` (the
  formats protocol: another row of the table); SciFact has no answer strings, so it is None;
- ``cited_gold``: present cases whose cited evidence includes a gold source;
- ``refused_when_absent``: absent cases answered with `insufficient_evidence` or a clarification;
- ``false_refusal``: present cases refused;
- ``gold_elsewhere``: absent cases (with answer strings: CMRC) answered with a gold answer string
  anyway — the fact is also stated in a passage that was kept, so the "failure" to refuse is a right
  answer; a diagnostic beside ``refused_when_absent``, which still counts them as failures;
- latency p50 of one turn and of its evaluate step (the answerability decision), and the failing
  case ids (for reading, not for tuning on test).
"""

from __future__ import annotations

import logging
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haygraph.eval.agent_cases import AgentCase, AgentProtocol
from haygraph.eval.errors import EvalError

logger = logging.getLogger(__name__)

MODES: tuple[str, ...] = ("hybrid", "bm25", "dense")
REFUSALS = frozenset({"insufficient_evidence", "needs_clarification"})
FIGURES: tuple[str, ...] = ("answered_correct", "cited_gold", "refused_when_absent", "false_refusal")
DIAGNOSTICS: tuple[str, ...] = ("gold_elsewhere",)
"""Figures reported beside `FIGURES` that are not pass/fail checks of a case."""


def answer_form(text: str) -> str:
    """`text` as answers are compared: lower-cased, without whitespace (a quote may be re-wrapped)."""
    return "".join(text.split()).lower()


def score_reply(case: AgentCase, result: dict[str, Any]) -> dict[str, bool | None]:
    """The checks that apply to `case` (absent: refused; present: answered, correct, cited gold)."""
    refused = result["status"] in REFUSALS
    answered = result["status"] == "completed"
    answer = answer_form(result.get("answer") or "")
    found = [answer_form(a) in answer for a in case.answers]
    if case.absent:
        checks: dict[str, bool | None] = {"refused_when_absent": refused}
        if case.answers:
            checks["gold_elsewhere"] = answered and any(found)
        return checks
    retrieved = {e["id"]: e for e in result["evidence"]}
    cited = {retrieved[i]["source"] for i in result["evidence_ids"] if i in retrieved}
    correct: bool | None = None
    if case.answers:
        correct = answered and (all(found) if case.all_answers else any(found))
        correct = correct and not any(answer_form(x) in answer for x in case.excludes)
    return {
        "answered_correct": correct,
        "cited_gold": answered and bool(cited & set(case.gold_sources)),
        "false_refusal": refused,
    }


def aggregate(rows: Sequence[tuple[AgentCase, dict[str, bool | None]]]) -> dict[str, Any]:
    """Rates per language and ``all``: each figure's mean over the cases it applies to (None if none)."""
    groups: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for case, checks in rows:
        for lang in (case.lang, "all"):
            for name, ok in checks.items():
                if ok is not None:
                    groups[lang][name].append(ok)
    out: dict[str, Any] = {}
    for lang, found in sorted(groups.items()):
        rates: dict[str, Any] = {}
        for name in (*FIGURES, *DIAGNOSTICS):
            values = found.get(name, [])
            rates[name] = sum(values) / len(values) if values else None
        rates["present"] = len(found.get("false_refusal", []))
        rates["absent"] = len(found.get("refused_when_absent", []))
        out[lang] = rates
    return out


def build_store(protocol: AgentProtocol, store_dir: Path) -> None:
    """Index the protocol's documents (or files) into `store_dir` unless it already holds an index."""
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase
    from haygraph.retrieval.store import store_exists

    if not protocol.cases:
        raise EvalError(f"the {protocol.name} protocol selected no questions: check the dataset folder")
    if store_exists(store_dir):
        return
    kb = KnowledgeBase(RetrievalConfig(), store_dir=store_dir)
    if protocol.documents is not None:
        kb.index_documents(protocol.documents)
    else:
        kb.index(protocol.paths)


def run_protocol(
    protocol: AgentProtocol,
    store_dir: Path,
    *,
    modes: Sequence[str] = MODES,
    model: Any = None,
    settings: dict[str, Any] | None = None,
    config: Any = None,
) -> dict[str, Any]:
    """Ask every case in every query mode; return the figures per mode and language, and the failures.

    With `config` naming a PostgreSQL or Qdrant store, the protocol's store is built in `store_dir` as
    always and then copied there (same chunks and vectors, its content replaced); the agent searches it.
    """
    from haygraph.adapters.agent import build_agent
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    build_store(protocol, store_dir)
    if config is not None and config.store.backend != "embedded":
        from haygraph.retrieval.store_copy import StoreLocation, copy_store

        copy_store(StoreLocation(directory=store_dir), StoreLocation(config=config))
    else:
        config = None
    base = KnowledgeBase.open(None if config else store_dir, config).config.query
    report: dict[str, Any] = {"protocol": protocol.name, "cases": len(protocol.cases), "modes": {}}
    for mode in modes:
        agent = build_agent(
            store_dir,
            model=model,
            query=base.model_copy(update={"mode": mode}),
            config=config,
            **(settings or {}),
        )
        agent.ask("warm up", thread_id="warm-up")
        rows = []
        latency = []
        evaluate_ms = []
        failures = []
        for case in protocol.cases:
            result = agent.ask(case.question, thread_id=f"{protocol.name}-{mode}-{case.id}")
            latency.append(result["timings_ms"]["total"])
            if "evaluate" in result["timings_ms"]:
                evaluate_ms.append(result["timings_ms"]["evaluate"])
            checks = score_reply(case, result)
            rows.append((case, checks))
            bad = [k for k, ok in checks.items() if k in FIGURES and ok is (k == "false_refusal")]
            if bad:
                failures.append(failure_record(case.id, bad, result))
        report["modes"][mode] = {
            "figures": aggregate(rows),
            "latency_ms_p50": statistics.median(latency) if latency else None,
            "evaluate_ms_p50": statistics.median(evaluate_ms) if evaluate_ms else None,
            "failures": failures,
        }
        logger.info("%s %s: %s", protocol.name, mode, report["modes"][mode]["figures"].get("all"))
    return report


def failure_record(case_id: str, failed: list[str], result: dict[str, Any]) -> dict[str, Any]:
    """One failed case for the report: what failed, the status, the answer's start and the decision."""
    decision = result.get("decision") or {}
    return {
        "id": case_id,
        "failed": failed,
        "status": result["status"],
        "answer": str(result.get("answer") or "")[:300],
        "decision": {
            k: decision.get(k) for k in ("answerable", "probability", "rule", "signals") if k in decision
        },
    }


def format_report(report: dict[str, Any]) -> list[str]:
    """The report as printable lines: one per mode and group (language, or direction), columns aligned."""
    lines = [f"{report['protocol']}: {report['cases']} cases"]
    for mode, res in report["modes"].items():
        width = max((len(group) for group in res["figures"]), default=3)
        for lang, figs in res["figures"].items():
            cells = "  ".join(
                f"{name}={'n/a' if figs[name] is None else f'{figs[name]:.3f}'}" for name in FIGURES
            ) + "".join(f"  ({name}={figs[name]:.3f})" for name in DIAGNOSTICS if figs.get(name) is not None)
            counts = f"present={figs['present']:3d} absent={figs['absent']:3d}"
            lines.append(f"  {mode:6s} {lang:{width}s} {counts}  {cells}")
        evaluate = res.get("evaluate_ms_p50")
        lines.append(
            f"  {mode:6s} latency p50 {res['latency_ms_p50']:.0f} ms per turn"
            + ("" if evaluate is None else f", evaluate step {evaluate:.1f} ms")
        )
    return lines
