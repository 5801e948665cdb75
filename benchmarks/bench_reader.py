"""What the trained reader adds to a warm `ask`: p50 / p95 with the reader and without it, in one run.

    python -m benchmarks.bench_reader [--store DIR] [--rounds 3]

Two agents over one store (default: the bundled handbook, indexed into a temporary folder): one with
``query.reader.model: bundled``, one with ``none`` (the same decision signals, without the reader's
margin). Each is warmed with one question, then every labelled handbook question (English and Chinese)
is asked of each once, untimed: the shared meaning encoder's passage memo then holds their units, so
the decision's meaning signals cost every agent the same. Then each question is asked of each agent
`rounds` times, the first asker taking turns. Printed: p50 and p95 per agent, and the p50 difference,
which is the reader's cost per ask (issue budget: 120 ms on the 2-core machine). The reader's memo is
cleared before each ask, so a repeated question costs what a new one does (within one ask, a turn that
expands still reads an item once). The reader alone (its `read` of the top evidence, timed inside the
agent) is printed too. Figures are ratios of one run on one machine, not a timed test.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _TimedReader:
    """Wraps the agent's reader and records how long each `read` takes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.times: list[float] = []

    def read(self, question: str, evidence: Sequence[Any]) -> Any:
        start = time.perf_counter()
        try:
            return self.inner.read(question, evidence)
        finally:
            self.times.append((time.perf_counter() - start) * 1000)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, default=None, help="an indexed store (default: the handbook)")
    ap.add_argument("--rounds", type=int, default=3, help="times each question is asked of each agent")
    args = ap.parse_args(argv)

    from haygraph.adapters.agent import build_agent
    from haygraph.adapters.evidence_reader import evidence_reader
    from haygraph.eval.agent_cases import handbook_protocol
    from haygraph.retrieval import sample_handbook_path
    from haygraph.retrieval.config import ReaderConfig
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    store = args.store
    if store is None:
        store = Path(tempfile.mkdtemp(prefix="bench-reader-")) / "store"
        started = time.perf_counter()
        KnowledgeBase(store_dir=store).index([sample_handbook_path()])
        print(f"indexed the handbook in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    questions = [c.question for c in handbook_protocol(sample_handbook_path(), "all").cases]
    reader = evidence_reader(ReaderConfig(model="bundled"))
    assert reader is not None
    timed = _TimedReader(reader)
    agents = {"reader": build_agent(store, reader=timed), "no reader": build_agent(store, reader=None)}
    for agent in agents.values():
        agent.ask("How many days of annual leave do I get?", thread_id="warm")
    # one untimed pass: the meaning encoder's memo then holds every passage unit the questions retrieve,
    # so no agent pays for encoding them and the difference is the reader's own cost
    for k, question in enumerate(questions):
        for name, agent in agents.items():
            agent.ask(question, thread_id=f"warm-{name}-{k}")
    timed.times.clear()
    times: dict[str, list[float]] = {name: [] for name in agents}
    for r in range(args.rounds):
        for k, question in enumerate(questions):
            # the first asker takes turns (what is left to memoise, the first asker pays for)
            named = list(agents.items())
            order = named[k % len(named) :] + named[: k % len(named)]
            for name, agent in order:
                reader.clear_memo()  # a question asked again reads again: the cost of a new question
                start = time.perf_counter()
                agent.ask(question, thread_id=f"{name}-{r}-{k}")
                times[name].append((time.perf_counter() - start) * 1000)
    for name, values in times.items():
        print(
            f"{name:>9}: {len(values)} asks, p50 {statistics.median(values):.0f} ms, "
            f"p95 {_percentile(values, 0.95):.0f} ms"
        )
    for name in [n for n in agents if n != "no reader"]:
        added = statistics.median(times[name]) - statistics.median(times["no reader"])
        print(f"{name} adds p50 {added:.0f} ms per ask (budget 120 ms)")
    if timed.times:
        print(
            f"reader.read alone: {len(timed.times)} reads, p50 {statistics.median(timed.times):.0f} ms, "
            f"p95 {_percentile(timed.times, 0.95):.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
