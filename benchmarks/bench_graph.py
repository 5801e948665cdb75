"""Agent latency benchmark: one `ask` per route on the real handbook, and the graph's own overhead.

Run as ``python -m benchmarks.bench_graph [--store DIR] [--turns 200] [--rounds 2] [--json FILE]``.
Without ``--store`` the bundled handbook is indexed into a temporary store (embeddings come from the
on-disk cache after the first run). Everything runs in offline mode (no chat model). Process start,
imports and model loading are excluded: every configuration is warmed up before it is timed, and
every turn is timed with ``time.perf_counter`` around `haygraph.control.api.run_turn` on a fresh thread.

1. **End to end, per route** (answer / retrieve / tool / clarify): the real Haystack retriever over
   the store (query embedding, BM25 + dense, fusion, cut) and the example tools over SQLite. Each
   question of a route is asked ``--rounds`` times.
2. **Graph overhead per turn**, excluding retrieval and model time: the same graph, but the retriever
   returns evidence captured from the real one beforehand and the tool executor replays captured
   results, both instantly. What remains is the graph itself: LangGraph scheduling, state reducers,
   analysis and routing rules, the evaluate/expand loop, budgeted prompt assembly with the real
   tokenizer, the extractive answer and citation checks. ``--turns`` turns, cycling the questions.

Both parts are run without a checkpointer and with the in-memory checkpointer. The overhead target is
a p50 of at most 5 ms per turn; the script prints the measured figure against it.

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.fixtures import example_tools, handbook_store, load_cases
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.control.api import run_turn
from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.graph import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.tools.types import ToolCall, ToolExecutor, ToolResult

TARGET_P50_MS = 5.0
ROUTES = ("answer", "retrieve", "tool", "clarify")
GREETINGS = ("Hi there!", "Hello!", "thanks so much", "你好", "谢谢！", "早上好")


def questions_by_route(per_route: int = 8) -> dict[str, list[str]]:
    """Questions for each route: greetings, then labelled handbook cases (answerable, order, clarify)."""
    cases = load_cases()
    kind_of = {"retrieve": "answerable", "tool": "order", "clarify": "clarify"}
    out: dict[str, list[str]] = {"answer": list(GREETINGS)}
    for route, kind in kind_of.items():
        chosen = [c for c in cases if c["kind"] == kind]
        english = [c["question"] for c in chosen if c["lang"] == "en"]
        chinese = [c["question"] for c in chosen if c["lang"] == "zh"]
        mixed = [q for pair in itertools.zip_longest(english, chinese) for q in pair if q]
        out[route] = mixed[:per_route]
    return out


class RecordingRetriever:
    """Passes calls to a real retriever and keeps every answer for replay."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.seen: dict[tuple[str, int], list[Evidence]] = {}

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """Retrieve for real and record the result under (query, top_k)."""
        found = self.inner.retrieve(query, top_k=top_k, filters=filters)
        self.seen[(query, top_k)] = found
        return found


class ReplayRetriever:
    """Returns recorded evidence instantly; an unrecorded query is an error (the replay is exact)."""

    def __init__(self, seen: dict[tuple[str, int], list[Evidence]]) -> None:
        self.seen = seen

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """The recorded evidence for (query, top_k)."""
        return self.seen[(query, top_k)]


def _call_key(call: ToolCall) -> str:
    return json.dumps([call.name, call.args], sort_keys=True, ensure_ascii=False)


class RecordingExecutor:
    """Passes calls to a real executor and keeps every result for replay."""

    def __init__(self, inner: ToolExecutor) -> None:
        self.inner = inner
        self.seen: dict[str, ToolResult] = {}

    def execute(
        self, calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
    ) -> list[ToolResult]:
        """Execute for real and record each result under the call's name and arguments."""
        results = self.inner.execute(calls, thread_id=thread_id)
        for call, result in zip(calls, results, strict=False):
            self.seen[_call_key(call)] = result
        return results


class ReplayExecutor:
    """Returns recorded tool results instantly (with the current call ids)."""

    def __init__(self, seen: dict[str, ToolResult]) -> None:
        self.seen = seen

    def execute(
        self, calls: list[ToolCall], *, thread_id: str, filters: dict[str, Any] | None = None
    ) -> list[ToolResult]:
        """The recorded result of each call."""
        return [self.seen[_call_key(c)].model_copy(update={"call_id": c.id}) for c in calls]


def time_turns(
    context: Context, questions: Sequence[tuple[str, str]], *, checkpointer: bool, warmup: int = 3
) -> tuple[dict[str, list[float]], dict[str, tuple[str, str]]]:
    """Run each question once on a fresh thread.

    Returns the milliseconds per turn grouped by the route taken, and (route, status) per question.
    """
    graph = build_graph(checkpointer=memory_checkpointer() if checkpointer else None)
    for i, (_label, question) in enumerate(questions[:warmup]):
        run_turn(graph, question, context=context, thread_id=f"warm-{i}")
    timings: dict[str, list[float]] = defaultdict(list)
    outcome: dict[str, tuple[str, str]] = {}
    for i, (_label, question) in enumerate(questions):
        start = time.perf_counter()
        result = run_turn(graph, question, context=context, thread_id=f"t{i}")
        timings[result["route"]].append((time.perf_counter() - start) * 1000.0)
        outcome[question] = (result["route"], result["status"])
    return timings, outcome


def _table(title: str, timings: dict[str, dict[str, list[float]]]) -> list[dict[str, Any]]:
    print(f"\n{title}")
    print(f"{'route':10s} {'checkpointer':14s} {'n':>5s} {'p50 ms':>10s} {'p95 ms':>10s}")
    rows = []
    for route in ROUTES:
        for variant, per_route in timings.items():
            values = per_route.get(route) or []
            if not values:
                continue
            row = {
                "route": route,
                "checkpointer": variant,
                "n": len(values),
                "p50_ms": float(np.percentile(values, 50)),
                "p95_ms": float(np.percentile(values, 95)),
            }
            rows.append(row)
            print(f"{route:10s} {variant:14s} {row['n']:5d} {row['p50_ms']:10.2f} {row['p95_ms']:10.2f}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Build (or open) the store, time both parts and print the figures."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--store", help="handbook store directory (default: index into a temporary one)")
    parser.add_argument(
        "--turns", type=int, default=200, help="turns per configuration in part 2 (default 200)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="times each question is asked in part 1 (default 2)"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.rounds < 1:
        parser.error("--turns and --rounds must be >= 1")

    with tempfile.TemporaryDirectory(prefix="haygraph-bench-graph-") as tmp:
        store = Path(args.store) if args.store else Path(tmp) / "store"
        retriever = HaystackRetriever(handbook_store(store))
        retriever.warm_up()
        registry, executor = example_tools(retriever, tmp)
        questions = questions_by_route()
        labelled = [(route, q) for route in ROUTES for q in questions[route]]

        # -- part 1: real retrieval and tools, recording what they return
        recording_retriever = RecordingRetriever(retriever)
        recording_executor = RecordingExecutor(executor)
        real = Context(
            retriever=recording_retriever,
            tool_executor=recording_executor,
            tool_registry=registry,
            tool_allow_list=tuple(DEFAULT_ALLOW_LIST),
        )
        part1: dict[str, dict[str, list[float]]] = {}
        outcome: dict[str, tuple[str, str]] = {}
        for variant, with_saver in (("none", False), ("in-memory", True)):
            timings, outcome = time_turns(real, labelled * args.rounds, checkpointer=with_saver)
            part1[variant] = timings
        routed = {route: sum(1 for r, q in labelled if outcome[q][0] == route) for route in ROUTES}
        print(
            f"store {store}: {retriever.kb.store.count_documents()} chunks; questions per route "
            f"{ {r: len(questions[r]) for r in ROUTES} }, routed as labelled: "
            f"{sum(1 for r, q in labelled if outcome[q][0] == r)}/{len(labelled)} ({routed})"
        )
        rows1 = _table("1. one `ask` end to end, offline mode, real retriever and tools (ms per turn)", part1)

        # -- part 2: the same graph over replayed evidence and tool results
        replay = Context(
            retriever=ReplayRetriever(recording_retriever.seen),
            tool_executor=ReplayExecutor(recording_executor.seen),
            tool_registry=registry,
            tool_allow_list=tuple(DEFAULT_ALLOW_LIST),
        )
        cycle = list(itertools.islice(itertools.cycle(labelled), args.turns))
        part2: dict[str, dict[str, list[float]]] = {}
        for variant, with_saver in (("none", False), ("in-memory", True)):
            timings, replayed = time_turns(replay, cycle, checkpointer=with_saver)
            part2[variant] = timings
            changed = [q for q in replayed if replayed[q] != outcome[q]]
            if changed:
                print(
                    f"warning: replay changed route/status of {len(changed)} question(s), e.g. {changed[0]!r}"
                )
        rows2 = _table(
            f"2. graph overhead per turn, retrieval and tools replayed instantly ({args.turns} turns)", part2
        )
        all_turns = {v: [x for values in t.values() for x in values] for v, t in part2.items()}
        print(f"\ntarget: graph overhead p50 <= {TARGET_P50_MS:.0f} ms per turn")
        verdicts = {}
        for variant, values in all_turns.items():
            p50 = float(np.percentile(values, 50))
            worst = max((r for r in rows2 if r["checkpointer"] == variant), key=lambda r: r["p50_ms"])
            verdicts[variant] = p50 <= TARGET_P50_MS
            p95 = float(np.percentile(values, 95))
            print(
                f"  checkpointer {variant:10s}: all routes p50 {p50:.2f} ms, p95 {p95:.2f} ms "
                f"-> {'meets' if verdicts[variant] else 'MISSES'} the target; slowest route "
                f"{worst['route']} p50 {worst['p50_ms']:.2f} ms"
            )
        if args.json:
            Path(args.json).write_text(
                json.dumps(
                    {
                        "end_to_end": rows1,
                        "graph_overhead": rows2,
                        "target_p50_ms": TARGET_P50_MS,
                        "meets_target": verdicts,
                    },
                    indent=2,
                ),
                encoding="utf-8",
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
