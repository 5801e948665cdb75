"""CLI commands that talk to the agent: `ask`, `chat`, `serve-mcp`, `demo`.

`ask`, `chat` and `serve-mcp` run on the store's settings with `--config` / `--tuned` over them
(`haygraph.adapters.cli.settings`); `--json` results carry the `settings` object that says which were used.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path
from typing import Any, NamedTuple, cast

from haygraph.adapters.cli.settings import (
    Layer,
    add_settings_arguments,
    add_tracing_arguments,
    describe_settings,
    filters_from_pairs,
    given_config,
    naming_config_flag,
    settings_layers,
)

TENANT_HELP = (
    "bind the session to one tenant: every retrieval (and the knowledge-search tool) only sees chunks "
    "indexed with --meta tenant=TENANT; --filter narrows it further"
)
EXAMPLE_TOOLS_HELP = (
    "also offer the example tools (order lookup, tickets, dates) over a demo orders database "
    "(<store>/orders.sqlite); off by default"
)


def register(sub: Any) -> None:
    """Add the agent sub-commands to the `haygraph` parser."""
    p = sub.add_parser("ask", help="answer one question from the knowledge base, citing evidence ids")
    p.add_argument("question", nargs="?", help="the question (omit it with --confirm)")
    p.add_argument("--store", required=True, help="store directory made by `haygraph index`")
    p.add_argument(
        "--model",
        help="LangChain chat model as provider:name (needs the `langchain` extra), or local:smollm2 "
        "(the `local-llm` extra); default: offline mode (rule-based routing, extractive answers)",
    )
    p.add_argument(
        "--json", action="store_true", help="print the stable JSON result object (plus the settings used)"
    )
    p.add_argument(
        "--thread",
        help="conversation thread id; threads are saved in --threads-db (default: a new thread per run)",
    )
    p.add_argument("--threads-db", help="SQLite file for threads (default: <store>/threads.sqlite)")
    p.add_argument(
        "--confirm",
        choices=("yes", "no"),
        help="answer the tool call a needs_confirmation turn on --thread waits for (no question)",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="also say in words why the turn was answered or refused (the answer-or-refuse decision)",
    )
    add_settings_arguments(p, filters=True)
    p.add_argument("--tenant", help=TENANT_HELP)
    p.add_argument("--example-tools", action="store_true", help=EXAMPLE_TOOLS_HELP)
    add_tracing_arguments(p)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("chat", help="multi-turn conversation; threads persist in SQLite across restarts")
    p.add_argument("--store", required=True)
    p.add_argument("--thread", default="default", help="thread id to start or resume (default: default)")
    p.add_argument("--threads-db", help="SQLite file for threads (default: <store>/threads.sqlite)")
    p.add_argument(
        "--model", help="LangChain chat model as provider:name, or local:smollm2; default: offline mode"
    )
    p.add_argument("--json", action="store_true", help="print one JSON result object per turn")
    add_settings_arguments(p, filters=True)
    p.add_argument("--tenant", help=TENANT_HELP)
    p.add_argument("--example-tools", action="store_true", help=EXAMPLE_TOOLS_HELP)
    p.set_defaults(func=cmd_chat)

    p = sub.add_parser(
        "serve-mcp",
        help="serve the knowledge base over MCP (stdio): search, chunk lookup and ask",
        description="Serve the knowledge base over MCP on stdio: the tools search_knowledge_base, get_chunk "
        "and ask (the agent's answer with its citations, or its refusal). For one shared endpoint over "
        "HTTP, with API keys or JWTs bound to tenants, use `haygraph serve` (MCP at /mcp).",
    )
    p.add_argument(
        "--store", required=True, help="store directory (a new version is picked up while serving)"
    )
    add_settings_arguments(p)
    p.add_argument(
        "--model",
        help="LangChain chat model of the ask tool as provider:name, or local:smollm2; default: offline mode "
        "(rule-based routing, extractive answers)",
    )
    p.add_argument(
        "--tenant",
        help="serve only this tenant's chunks: search and get_chunk never return another tenant's "
        "(a request's filters narrow it further)",
    )
    p.add_argument("--example-tools", action="store_true", help=EXAMPLE_TOOLS_HELP)
    p.set_defaults(func=cmd_serve_mcp)

    p = sub.add_parser("demo", help="index the bundled handbook and run a scripted conversation")
    p.add_argument(
        "--store",
        help="where to keep the demo store (default: <cache dir>/demo-store/<id of this checkout>)",
    )
    p.set_defaults(func=cmd_demo)


def _agent(args: argparse.Namespace, threads_db: str | None = None) -> tuple[Any, dict[str, Any]]:
    """The agent over `args.store` with the resolved settings, and the `settings` report."""
    from haygraph.adapters.agent import build_agent
    from haygraph.adapters.haystack_retriever import HaystackRetriever
    from haygraph.adapters.tenancy import ScopedRetriever, check_tenant

    if args.tenant is not None:
        check_tenant(args.tenant, name="--tenant")

    layers: list[Layer] = settings_layers(args.config, args.tuned)
    with naming_config_flag(layers):
        agent = build_agent(
            args.store,
            model=args.model,
            threads_db=threads_db,
            config=given_config(layers),
            example_tools=args.example_tools,
            tenant=args.tenant,
        )
    ctx = agent.context
    scoped = ctx.retriever
    base = scoped.current() if isinstance(scoped, ScopedRetriever) else scoped
    retriever = cast(HaystackRetriever, base)  # build_agent always wires a HaystackRetriever (maybe scoped)
    # The agent asks for `answer_top_k` chunks per query (the first `top_k` are what the decision reads;
    # `expand_top_k` when expanding); the retriever caps the score-cliff cut at the number asked for, so
    # those values, not the store's, are in force.
    asked = ctx.retrieval_depth()
    per_call = {
        "top_k": ctx.top_k,
        "answer_top_k": asked,
        "cut.max_keep": asked,
        "expand_top_k": ctx.expand_top_k,
    }
    settings = describe_settings(retriever.kb, layers, per_call=("agent", per_call))
    if args.tenant is not None:
        settings["tenant"] = args.tenant
    return agent, settings


def format_result(result: dict[str, Any]) -> str:
    """Human-readable rendering of one turn's result object."""
    lines = [result.get("answer") or "(no answer shown)"]
    lines.extend(f"  note: {note}" for note in result.get("notes") or [])
    cited = set(result.get("evidence_ids") or [])
    span_pages = {}
    for span in reversed(result.get("answer_spans") or []):  # the best span of an item wins
        if span.get("page") is not None:
            span_pages[span["evidence_id"]] = span["page"]
    for ev in result.get("evidence") or []:
        if ev["id"] in cited:
            page = span_pages.get(ev["id"], ev.get("page"))
            lines.append(f"  [{ev['id']}] {ev['source']}" + (f", page {page}" if page is not None else ""))
    path = " → ".join(result.get("path") or [])
    total = (result.get("timings_ms") or {}).get("total", 0.0)
    lines.append(
        f"status: {result.get('status')}  route: {result.get('route')}  path: {path}  ({total:.0f} ms)"
    )
    return "\n".join(lines)


def cmd_ask(args: argparse.Namespace) -> int:
    """Answer one question (--filter narrows retrieval to matching chunks), or --confirm a paused one.

    A turn that would run a tool with side effects ends with status `needs_confirmation` and its
    `thread_id`; `ask --thread ID --confirm yes|no` resumes it. Threads live in `--threads-db`.
    With `--tracing` the turn is one trace (`haygraph ask`, its nodes, components and reader), exported
    before the command returns.
    """
    from haygraph.adapters.tracing import Tracing, tracing_requested, turn_span
    from haygraph.control.errors import ConfigError

    if args.confirm is not None and (args.thread is None or args.question is not None):
        raise ConfigError("--confirm answers a paused turn: pass --thread ID and no question")
    if args.confirm is None and not args.question:
        raise ConfigError("give a question (or --thread ID --confirm yes|no to answer a paused turn)")
    if args.trace_content and not tracing_requested(args.tracing):
        raise ConfigError("--trace-content records text in traces: it needs --tracing")
    tracing = Tracing(content=args.trace_content) if tracing_requested(args.tracing) else None
    thread = args.thread or f"ask-{uuid.uuid4().hex[:12]}"
    agent, settings = _agent(args, threads_db=args.threads_db or str(Path(args.store) / "threads.sqlite"))
    if tracing is not None:
        tracing.start()
    try:
        with turn_span("haygraph ask", tenant=args.tenant, question=args.question) as record:
            if args.confirm is not None:
                result = agent.resume(thread, approve=args.confirm)
            else:
                result = agent.ask(args.question, thread_id=thread, filters=filters_from_pairs(args.filter))
            record(result)
    finally:
        if tracing is not None:
            tracing.close()  # exports the spans before the process ends
    result = {**result, "thread_id": thread}
    if args.json:
        print(json.dumps({**result, "settings": settings}, ensure_ascii=False, indent=2))
    else:
        print(format_result(result))
        if getattr(args, "explain", False):
            print(explain_decision(args.question or "", result))
    return 0


def explain_decision(question: str, result: dict[str, Any]) -> str:
    """The turn's answer-or-refuse decision in words: the verdict, words no evidence holds, the signals."""
    from haygraph.control.planning.decision.signals import TOP_EVIDENCE
    from haygraph.control.planning.meaning import missing_words

    decision = result.get("decision")
    if not decision:
        return "decision: none was made (no retrieval this turn)"
    verdict = "answered" if decision["answerable"] else "refused"
    if decision.get("rule") and not decision.get("signals"):
        return f"decision: {verdict} by rule: {decision['rule']}"
    top = sorted(result.get("evidence") or [], key=lambda e: -float(e.get("score") or 0))[:TOP_EVIDENCE]
    op = ">=" if decision["answerable"] else "<"
    p, threshold = decision["probability"], decision["threshold"]
    lines = [f"decision: {verdict} (p={p:.2f} {op} threshold {threshold:.2f})"]
    if decision.get("rule"):
        lines = [
            f"decision: {verdict} by rule: {decision['rule']} (model p={p:.2f}, threshold {threshold:.2f})"
        ]
    reader = reader_in_words(decision)
    if reader:
        lines.append(f"  {reader}")
    missing, _ = missing_words(question, [f"{e['source']} {e['text']}" for e in top])
    if missing:
        lines.append("  no retrieved passage mentions: " + ", ".join(repr(w) for w in missing))
    if top:
        first = " ".join(top[0]["text"].split())
        lines.append(f"  best passage [{top[0]['id']}] {top[0]['source']}: {first[:120]}")
    signals = decision.get("signals") or {}
    lines.append("  signals: " + ", ".join(f"{k} {v:.2f}" for k, v in signals.items()))
    return "\n".join(lines)


def reader_in_words(decision: dict[str, Any]) -> str:
    """The reader's part of a decision in words: its margin against the margin needed ("" without one)."""
    margin, needed = decision.get("margin"), decision.get("margin_needed")
    if margin is None:
        return ""
    across = (decision.get("signals") or {}).get("reader_across")
    where = " in a passage in the other language" if across else ""
    said = f"reader: best answer span{where} scores {margin:.2f} over 'no answer'"
    if needed is None:
        return said
    verdict = "clears" if margin >= needed else "is below"
    return f"{said}; it {verdict} the {needed:.2f} needed to answer (the other signals as they are)"


def cmd_chat(args: argparse.Namespace) -> int:
    """Read questions from stdin until EOF/exit; each turn is checkpointed in SQLite.

    A turn paused before a side-effect tool (`needs_confirmation`) asks "Run it? [y/N]" and reads
    the answer from the next line (anything but y / yes declines).
    """
    threads_db = args.threads_db or str(Path(args.store) / "threads.sqlite")
    agent, settings = _agent(args, threads_db=threads_db)
    filters = filters_from_pairs(args.filter)
    interactive = sys.stdin.isatty()
    if interactive:
        print(f"haygraph chat — thread {args.thread!r} (saved in {threads_db}); type 'exit' to quit")
    while True:
        if interactive:
            print("> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line or line.strip().lower() in {"exit", "quit"}:
            break
        if not line.strip():
            continue
        result = agent.ask(line.rstrip("\n"), thread_id=args.thread, filters=filters)
        while result.get("status") == "needs_confirmation":
            # --json keeps stdout one JSON object per line: the question goes to stderr
            show = json.dumps(result, ensure_ascii=False) if args.json else format_result(result)
            print(show, flush=True)
            print("Run it? [y/N] ", end="", flush=True, file=sys.stderr if args.json else sys.stdout)
            reply = sys.stdin.readline().strip().lower()
            if not interactive and not args.json:
                print(flush=True)
            result = agent.resume(args.thread, approve=reply in {"y", "yes"})
        if args.json:
            print(json.dumps({**result, "settings": settings}, ensure_ascii=False), flush=True)
        else:
            print(format_result(result), flush=True)
    return 0


def cmd_serve_mcp(args: argparse.Namespace) -> int:
    """Serve search, chunk lookup and ask (and, with --example-tools, the example tools) over MCP stdio.

    stdout carries the protocol: nothing else is printed.

    `ask` runs the agent of `haygraph ask` (`build_agent`: the same graph, reader and decision as the
    HTTP service's) on the same live, tenant-scoped retriever as the search tools; each call is a new
    conversation, nothing is kept between calls.

    The store's settings with --config / --tuned over them are used for every search, and served as
    the `haygraph://settings` resource. A new store version (another `haygraph index`) is picked up
    without a restart: `CURRENT` is checked at most every 2 s, on the next request. With --tenant, the
    server only ever shows that tenant's chunks.
    """
    import functools

    import anyio.to_thread

    from haygraph.adapters.agent import build_agent
    from haygraph.adapters.live_knowledge import LiveKnowledgeBase
    from haygraph.adapters.mcp.server import DEFAULT_TOP_K, contract_tools, create_mcp_server, run_stdio
    from haygraph.adapters.tenancy import ScopedRetriever, check_tenant
    from haygraph.control import build_graph
    from haygraph.control.api import run_turn
    from haygraph.control.tools import ContractToolExecutor

    tenant = check_tenant(args.tenant, name="--tenant") if args.tenant is not None else None
    layers = settings_layers(args.config, args.tuned)
    live = LiveKnowledgeBase(args.store, config=given_config(layers), warm_top_ks=(DEFAULT_TOP_K,))
    with naming_config_flag(layers):
        live.load()
    # Each search_knowledge_base call sets top_k (which also caps the cut), default DEFAULT_TOP_K.
    per_call = {"top_k": DEFAULT_TOP_K, "cut.max_keep": DEFAULT_TOP_K}
    settings = describe_settings(live.current.kb, layers, per_call=("request", per_call))
    if tenant is not None:
        settings["tenant"] = tenant
    retriever = ScopedRetriever(live.fresh_retriever, tenant)
    agent = build_agent(
        args.store,
        model=args.model,
        retriever=retriever,
        query=live.current.kb.config.query,
        example_tools=args.example_tools,
    )
    tools = []
    if agent.context.tool_executor is not None:
        tools = contract_tools(cast(ContractToolExecutor, agent.context.tool_executor))
    graph = build_graph()  # no checkpointer: each ask is a new conversation, nothing is kept

    async def ask(question: str, filters: dict[str, Any] | None) -> dict[str, Any]:
        turn = functools.partial(run_turn, graph, question, context=agent.context, filters=filters)
        return await anyio.to_thread.run_sync(turn)

    run_stdio(create_mcp_server(retriever, retriever.lookup, settings=settings, tools=tools, ask=ask))
    return 0


DEMO_RETRIEVALS = ("How many days of annual leave do I get?", "每个月报销截止是几号？")


class DemoTurn(NamedTuple):
    """One scripted demo question and the outcome its label promises (checked by a test)."""

    label: str
    question: str
    status: str
    """The status the turn must end with."""
    route: str
    """The route `analyze` must choose."""
    via: tuple[str, ...] = ()
    """Nodes the turn's path must pass through (beyond analyze and generate)."""


DEMO_TURNS: tuple[DemoTurn, ...] = (
    DemoTurn("greeting (no retrieval)", "Hi there!", "completed", "answer"),
    DemoTurn(
        "English policy question",
        "Could you please tell me the minimum length for my password?",
        "completed",
        "retrieve",
        ("retrieve",),
    ),
    DemoTurn("Chinese policy question", "请问婚假有几天？", "completed", "retrieve", ("retrieve",)),
    # The scripted first-day question ("It's my first day tomorrow - what time should I show up and
    # where do I go?") is expanded but refused by the offline answer rules; this one shows the route.
    DemoTurn(
        "poor first retrieval → expand",
        "I think I left my work laptop on the train. How fast do I have to report it?",
        "completed",
        "retrieve",
        ("retrieve", "expand"),
    ),
    DemoTurn(
        "not in the handbook → insufficient evidence",
        "Can I bring my dog to the office?",
        "insufficient_evidence",
        "retrieve",
        ("retrieve",),
    ),
    DemoTurn("missing order number → clarify", "我上周买的东西咋还没到", "needs_clarification", "clarify"),
    DemoTurn(
        "order lookup → query_order tool",
        "帮我查一下订单 202405120001 的物流",
        "completed",
        "tool",
        ("tool_exec",),
    ),
)


def demo_outcome_matches(turn: DemoTurn, result: dict[str, Any]) -> bool:
    """Whether a demo turn's result is the outcome its label promises (status, route, nodes passed)."""
    return (
        result.get("status") == turn.status
        and result.get("route") == turn.route
        and all(node in result.get("path", []) for node in turn.via)
    )


def default_demo_store() -> Path:
    """`<cache dir>/demo-store/<hash of the sample handbook's path>`: one demo store per installed copy.

    Source ids are paths relative to the indexed folder, and a store refuses a second folder holding the
    same ids; one shared demo store therefore made `make demo` fail in a second checkout (or a moved one).
    """
    import hashlib

    from haygraph.retrieval import sample_handbook_path
    from haygraph.retrieval.embedding_cache import default_cache_dir

    key = hashlib.sha256(str(Path(sample_handbook_path()).resolve()).encode()).hexdigest()[:12]
    return default_cache_dir() / "demo-store" / key


def cmd_demo(args: argparse.Namespace) -> int:
    """Index the bundled handbook, show ranked retrieval, then a scripted conversation over every route."""
    from haygraph.adapters.agent import build_agent
    from haygraph.retrieval import sample_handbook_path
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    store = Path(args.store) if args.store else default_demo_store()
    print(f"== Indexing the sample handbook ({sample_handbook_path()}) into {store}")
    kb = KnowledgeBase.open(store) if (store / "CURRENT").is_file() else KnowledgeBase(store_dir=store)
    report = kb.index([sample_handbook_path()], progress=True)
    print(
        f"   {report.sources} documents -> {report.chunks} chunks ({report.embedded} embedded, "
        f"{report.from_cache} from cache) in {report.seconds:.1f}s"
    )
    for query in DEMO_RETRIEVALS:
        print(f"\n== Retrieval: {query}")
        for rank, hit in enumerate(kb.search(query).hits, start=1):
            print(
                f"   {rank}. [{hit.id}] score={hit.score:.4f} relevance={hit.relevance or 0:.2f}  "
                f"{' > '.join(hit.heading_path)}"
            )
    agent = build_agent(store, example_tools=True)
    print("\n== Conversation (offline mode: rule-based routing, extractive answers citing evidence ids)")
    missed = []
    for turn in DEMO_TURNS:
        print(f"\n-- {turn.label}\n>> {turn.question}")
        result = agent.ask(turn.question, thread_id="demo")
        print(format_result(result))
        if not demo_outcome_matches(turn, result):
            missed.append(turn.label)
            print(f"   (expected {turn.status} via route {turn.route}; got {result.get('status')})")
    if missed:
        print(
            f"\n{len(missed)} of {len(DEMO_TURNS)} turns did not get their labelled outcome: "
            + ", ".join(missed)
        )
    return 0
