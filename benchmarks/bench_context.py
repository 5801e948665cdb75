"""Context-engineering benchmark: token budget per part per turn, persisted state size, schema saving.

Run as ``python -m benchmarks.bench_context [--turns 200] [--window 8192] [--plot FILE.png] [--json
FILE]``.
It indexes the bundled sample handbook (``retrieval/samples/handbook``, English and Chinese) into a
temporary store (document embeddings are cached on disk, so only the first run pays for them), wires
the example tools over a temporary orders database, and runs the real graph **offline** on one
conversation thread for a long scripted conversation: handbook questions in English and Chinese,
order questions with order numbers (and one without, answered from the remembered number), greetings
and thanks. Offline, generate still assembles the budgeted prompt, so every figure below is measured:

- per turn: tokens of the fixed part (system prompt + entities + question), tool schemas, history
  (recent turns + running summary), retrieved chunks (kept/dropped), tool results, the measured total
  against the limit (window - output reserve), and the size in bytes of the thread's persisted state
  (serialized with the checkpointer's serializer);
- at the end: the tool-schema tokens of dynamic injection (only the routed intent's allowed tools)
  against injecting every registered tool, per intent (`haygraph.control.window.schema_cost`).

This is a script that prints figures, not a test.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from benchmarks.fixtures import example_tools, handbook_store
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.control.graph import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.tools import ToolRegistry
from haygraph.control.window.budget import BudgetConfig
from haygraph.control.window.schema_cost import SchemaSaving, schema_saving
from haygraph.control.window.tokens import TokenCounter

OPENING = [
    "hello",
    "My order 202405120001 was placed on 2024-05-12 and cost $120 — where is it now?",
]
CYCLE = [
    "How many days of annual leave do employees get?",
    "请假流程是怎样的？需要谁审批？",
    "What is the hotel limit on business trips?",
    "where is my order?",
    "差旅住宿标准是多少？",
    "thanks!",
    "How do I set up multi-factor authentication?",
    "加班以后可以调休吗？",
    "Can I work remotely from another country?",
    "我的订单202405150008到哪了？",
    "What is the return window for online orders?",
    "你好",
    "How long does standard shipping take?",
    "报销需要提交哪些材料？",
    "How do I book a meeting room?",
    "Has my order 202405120001 shipped yet?",
    "What does the code of conduct say about gifts from suppliers?",
    "退货政策是什么？",
    "Which holidays are there in 2026?",
    "谢谢",
]
"""Repeats after the two opening turns; turn t >= 3 asks CYCLE[t % len(CYCLE)]."""

PART_COLUMNS = ("fixed", "tool_schemas", "history", "chunks", "tool_results")
MEMORY_FIELDS = ("messages", "summary", "entities")
"""State carried across turns (the rest is reset by `analyze` every turn)."""


def question(turn: int) -> str:
    """Return the scripted question of `turn` (from 1)."""
    return OPENING[turn - 1] if turn <= len(OPENING) else CYCLE[turn % len(CYCLE)]


def budget_row(turn: int, state: dict[str, Any], state_bytes: int, memory_bytes: int) -> dict[str, Any]:
    """Project one turn's final state onto a report row (token columns are None without a prompt).

    `state_bytes` is the whole persisted state; `memory_bytes` only what is carried from turn to
    turn (messages, summary, entities) — the part that would grow without history compression.
    """
    budget = state.get("context_budget") or {}
    parts = budget.get("parts") or {}
    chunks = parts.get("chunks") or {}
    row: dict[str, Any] = {
        "turn": turn,
        "question": state.get("question", ""),
        "route": state.get("route"),
        "status": state.get("status"),
        "state_bytes": state_bytes,
        "memory_bytes": memory_bytes,
        "fixed": budget.get("fixed_total"),
        "tool_schemas": (parts.get("tool_schemas") or {}).get("used"),
        "history": (parts.get("history") or {}).get("used"),
        "chunks": chunks.get("used"),
        "chunks_kept": chunks.get("kept"),
        "chunks_dropped": chunks.get("dropped"),
        "tool_results": (parts.get("tool_results") or {}).get("used"),
        "total": budget.get("measured_total"),
        "limit": budget.get("limit"),
        "error": budget.get("error"),
    }
    return row


def format_rows(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Render rows as a fixed-width table (a dash where the turn built no prompt)."""
    header = (
        f"{'turn':>4} {'route':8} {'status':21} {'fixed':>5} {'schem':>5} {'hist':>5} "
        f"{'chunks':>6} {'k/d':>5} {'tools':>5} {'total':>6} {'limit':>6} {'state B':>8} {'memory B':>8}"
    )
    lines = [header, "-" * len(header)]

    def cell(value: Any, width: int) -> str:
        return f"{'-' if value is None else value:>{width}}"

    for r in rows:
        kd = "-" if r["chunks_kept"] is None else f"{r['chunks_kept']}/{r['chunks_dropped']}"
        lines.append(
            f"{r['turn']:>4} {r['route']!s:8} {r['status']!s:21} {cell(r['fixed'], 5)} "
            f"{cell(r['tool_schemas'], 5)} {cell(r['history'], 5)} {cell(r['chunks'], 6)} {kd:>5} "
            f"{cell(r['tool_results'], 5)} {cell(r['total'], 6)} {cell(r['limit'], 6)} {r['state_bytes']:>8} "
            f"{r['memory_bytes']:>8}"
        )
    return lines


def schema_savings(
    registry: ToolRegistry, allow_list: Sequence[str], counter: TokenCounter
) -> dict[str, SchemaSaving]:
    """Per intent: schema tokens of its allowed tools against every registered tool's schema."""
    everything = [contract.model_schema() for contract in registry]
    intents = sorted({i for contract in registry for i in contract.intents if i != "*"})
    return {
        intent: schema_saving(registry.schemas_for(intent, allow_list), everything, counter)
        for intent in intents
    }


def plot(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Write a PNG: stacked tokens per part per turn with the limit, and persisted state bytes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    turns = [r["turn"] for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    base = [0] * len(rows)
    for part in PART_COLUMNS:
        values = [r[part] or 0 for r in rows]
        top.bar(turns, values, bottom=base, label=part, width=0.9)
        base = [b + v for b, v in zip(base, values, strict=True)]
    limits = [r["limit"] for r in rows if r["limit"] is not None]
    if limits:
        top.axhline(max(limits), color="black", linestyle="--", linewidth=1, label="limit")
        top.set_ylim(0, max(limits) * 1.2)  # room for the legend above the limit line
    top.set_ylabel("prompt tokens")
    top.legend(loc="upper left", ncol=6, fontsize=8)
    top.set_title("Prompt tokens per part per turn (offline graph, sample handbook)")
    bottom.plot(turns, [r["state_bytes"] for r in rows], marker=".", label="persisted state")
    bottom.plot(turns, [r["memory_bytes"] for r in rows], marker=".", label="messages + summary + entities")
    bottom.legend(loc="upper left", fontsize=8)
    bottom.set_ylabel("persisted state (bytes)")
    bottom.set_xlabel("turn")
    bottom.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(turns: int, window: int, store_dir: Path, work_dir: Path) -> tuple[list[dict[str, Any]], Context]:
    """Index the handbook, build the offline agent and run the scripted conversation."""
    retriever = HaystackRetriever(handbook_store(store_dir))
    _registry, executor = example_tools(retriever, work_dir)
    ctx = Context(
        retriever=retriever,
        tool_executor=executor,
        budget=BudgetConfig(context_window=window),
    )
    checkpointer = memory_checkpointer()
    graph = build_graph(checkpointer=checkpointer)
    cfg: RunnableConfig = {"configurable": {"thread_id": "bench"}}
    rows = []
    for turn in range(1, turns + 1):
        state = graph.invoke({"question": question(turn)}, context=ctx, config=cfg)
        persisted = graph.get_state(cfg).values
        memory = {k: persisted.get(k) for k in MEMORY_FIELDS}
        sizes = (
            len(checkpointer.serde.dumps_typed(persisted)[1]),
            len(checkpointer.serde.dumps_typed(memory)[1]),
        )
        rows.append(budget_row(turn, dict(state), *sizes))
    return rows, ctx


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="conversation length (default 200)")
    parser.add_argument("--window", type=int, default=8192, help="context window in tokens (default 8192)")
    parser.add_argument("--store", type=Path, default=None, help="reuse/keep the handbook store here")
    parser.add_argument("--plot", type=Path, default=None, help="write a PNG plot to this file")
    parser.add_argument("--json", type=Path, default=None, help="write the rows and savings as JSON")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.window < 1:
        parser.error("--turns and --window must be >= 1")

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="haygraph-bench-context-") as tmp:
        store_dir = args.store or Path(tmp) / "store"
        store_dir.mkdir(parents=True, exist_ok=True)
        rows, ctx = run(args.turns, args.window, store_dir, Path(tmp))
        assert ctx.tool_registry is not None
        savings = schema_savings(ctx.tool_registry, ctx.offered_allow_list, ctx.counter)

    print(f"context window {args.window}, counter {ctx.counter.name}, {args.turns} turns\n")
    print("\n".join(format_rows(rows)))
    budgeted = [r for r in rows if r["total"] is not None]
    errors = [r for r in rows if r["error"]]
    over = [r for r in budgeted if r["total"] > r["limit"]]
    print(
        f"\nturns with a budgeted prompt: {len(budgeted)}/{len(rows)}; over the limit: {len(over)}; "
        f"budget errors: {len(errors)}"
    )
    if budgeted:
        peak = max(budgeted, key=lambda r: r["total"])
        print(f"largest prompt: {peak['total']} / {peak['limit']} tokens (turn {peak['turn']})")
        dropped = sum(r["chunks_dropped"] or 0 for r in budgeted)
        print(f"chunks dropped by the budget over the run: {dropped}")
    marks = [t for t in (20, 100, 200, len(rows)) if t <= len(rows)]
    for key, label in (("state_bytes", "persisted state"), ("memory_bytes", "carried memory")):
        sizes = ", ".join(f"turn {t}: {rows[t - 1][key]} B" for t in dict.fromkeys(marks))
        print(f"{label} size: {sizes} (max {max(r[key] for r in rows)} B)")
    print("\ntool-schema tokens, dynamic injection (routed intent's allowed tools) vs all registered tools:")
    for intent, saving in savings.items():
        print(
            f"  intent {intent:10s} {saving.selected_tokens:5d} vs {saving.registry_tokens:5d} tokens: "
            f"saves {saving.saved_tokens} ({saving.saved_ratio:.0%})"
        )
    print(f"\n{time.perf_counter() - started:.1f} s")
    if args.plot:
        plot(rows, args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        payload = {"rows": rows, "schema_savings": {k: v.to_dict() for k, v in savings.items()}}
        args.json.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
        print(f"rows written to {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
