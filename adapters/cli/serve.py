"""CLI command `haygraph serve`: the HTTP API (imports FastAPI and the models only when it runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from haygraph.adapters.cli.settings import (
    add_settings_arguments,
    add_tracing_arguments,
    given_config,
    settings_layers,
)


def register(sub: Any) -> None:
    """Add the `serve` sub-command to the `haygraph` parser."""
    p = sub.add_parser(
        "serve",
        help="HTTP API: search, ask, streaming, OpenAI-compatible chat, MCP at /mcp, keys bound to tenants",
        description="Serve the knowledge base and the agent over HTTP (FastAPI on uvicorn; docs at /docs) "
        "with a web page at / (chat with citations, documents, status), and as a remote MCP server at /mcp "
        "(Streamable HTTP, stateless; tools search_knowledge_base, get_chunk, ask; the same keys or tokens, "
        "tenants and limits as /v1/). "
        "Needs the `serve` extra: pip install 'haygraph[serve]'.",
    )
    p.add_argument(
        "--store",
        required=True,
        help="store directory made by `haygraph index` (reloaded on change); an empty directory starts "
        "empty and fills with the documents uploaded on the page",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; others need --api-keys)"
    )
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    p.add_argument("--api-keys", metavar="FILE", help="YAML/JSON file: API key -> {tenant, tools?, write?}")
    add_settings_arguments(p)
    p.add_argument("--model", help="LangChain chat model as provider:name; default: offline mode")
    p.add_argument(
        "--example-tools", action="store_true", help="offer the example tools (orders, tickets, dates)"
    )
    p.add_argument(
        "--orders-db",
        metavar="FILE",
        help="orders database of the example tools (default <store>/orders.sqlite)",
    )
    p.add_argument(
        "--threads-db",
        metavar="PATH_OR_URL",
        help="where threads live: a SQLite file (one host) or postgresql://... (several); default: memory",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="per-request deadline in seconds (default 60)")
    p.add_argument(
        "--max-body-bytes", type=int, default=1_048_576, help="largest request body (default 1 MiB)"
    )
    p.add_argument(
        "--max-upload-bytes",
        type=int,
        default=50 * 1024 * 1024,
        help="largest document the page or POST /v1/sources accepts (default 50 MiB)",
    )
    p.add_argument(
        "--auth",
        choices=("keys", "oidc"),
        default="keys",
        help="how callers sign in: keys (--api-keys; default) or oidc (bearer JWTs of the identity provider "
        "named in --oidc-config; --api-keys' keys work too when given)",
    )
    p.add_argument(
        "--oidc-config",
        metavar="FILE",
        help="with --auth oidc: YAML/JSON with issuer, audience, jwks_url or jwks_file, tenant_claim, "
        "user_claim, write_claim (see docs/service.md)",
    )
    p.add_argument(
        "--audit-log",
        metavar="FILE",
        help="append one JSON line per write (upload, remove, re-index, confirm; refused ones too), per ask "
        "and per indexing job to FILE (read it with `haygraph audit`)",
    )
    p.add_argument(
        "--audit-questions",
        action="store_true",
        help="keep each ask's question text in the audit trail (default: outcome and evidence ids only)",
    )
    p.add_argument(
        "--metrics",
        choices=("off", "loopback", "key"),
        default="off",
        help="GET /metrics for Prometheus: off (default), loopback (127.0.0.1/::1 clients only) or key "
        "(the bearer key in $HAYGRAPH_METRICS_KEY)",
    )
    add_tracing_arguments(p)
    web = p.add_argument_group("websites (POST /v1/sources with a url, the page's Documents tab)")
    web.add_argument(
        "--resync-every",
        type=duration,
        metavar="DURATION",
        help="re-sync every indexed website this often, one at a time, in the background: e.g. 6h, 30m, "
        "1d, 90s (default: never; re-post the URL to re-sync by hand)",
    )
    web.add_argument(
        "--allow-private-hosts",
        action="store_true",
        help="allow websites on loopback and private addresses (also HAYGRAPH_ALLOW_PRIVATE_HOSTS=1); "
        "refused by default, whatever a request asks",
    )
    web.add_argument(
        "--crawl-max-pages", type=int, default=500, metavar="N", help="pages per website crawl (default 500)"
    )
    web.add_argument(
        "--crawl-delay",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="seconds between two requests to a website (default 0.5; robots.txt's Crawl-delay may raise it)",
    )
    load = p.add_argument_group("load and shutdown")
    load.add_argument(
        "--max-in-flight",
        type=int,
        metavar="N",
        help="working requests served at once (search, ask, stream, chat); default 2 per CPU core",
    )
    load.add_argument(
        "--max-queue", type=int, metavar="N", help="requests waiting for a slot, then 429; default 8 per slot"
    )
    load.add_argument(
        "--queue-timeout", type=float, default=10.0, help="longest wait for a slot, then 429 (default 10 s)"
    )
    load.add_argument(
        "--body-timeout",
        type=float,
        default=10.0,
        help="deadline for a request's headers (then the connection closes) and for its body (then 408); "
        "default 10 s",
    )
    load.add_argument(
        "--send-timeout",
        type=float,
        default=30.0,
        help="deadline for a client to take each response write, then the response is aborted (default 30 s)",
    )
    load.add_argument(
        "--drain-delay",
        type=float,
        default=0.0,
        help="on SIGTERM, seconds /readyz is 503 while requests are still served, before the port closes "
        "(set it to your load balancer's readiness interval x failures; default 0)",
    )
    load.add_argument(
        "--shutdown-grace",
        type=float,
        help="on SIGTERM, how long in-flight requests may still run (default: --timeout)",
    )
    p.set_defaults(func=cmd_serve)


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration(text: str) -> float:
    """Seconds of a duration written ``90s``, ``30m``, ``6h``, ``1d`` or a plain number of seconds."""
    value = text.strip().lower()
    scale = _UNITS.get(value[-1:])
    number = value[:-1] if scale is not None else value
    try:
        seconds = float(number) * (scale or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (write e.g. 6h, 30m, 1d or 90s)"
        ) from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be more than 0")
    return seconds


def cmd_serve(args: argparse.Namespace) -> int:
    """Run the HTTP service until interrupted."""
    from haygraph.adapters.tracing import tracing_requested

    try:
        from haygraph.adapters.service import ServiceSettings, serve
    except ImportError as exc:
        raise ValueError(
            f"`haygraph serve` needs the `serve` extra ({exc.name} is missing): pip install 'haygraph[serve]'"
        ) from exc
    from haygraph.retrieval.web_sources import private_hosts_allowed

    settings = ServiceSettings(
        store_dir=Path(args.store),
        host=args.host,
        port=args.port,
        api_keys=Path(args.api_keys) if args.api_keys else None,
        config=given_config(settings_layers(args.config, args.tuned)),
        model=args.model,
        example_tools=args.example_tools,
        orders_db=Path(args.orders_db) if args.orders_db else None,
        threads_db=args.threads_db,
        request_timeout_s=args.timeout,
        max_body_bytes=args.max_body_bytes,
        max_upload_bytes=args.max_upload_bytes,
        max_in_flight=args.max_in_flight,
        max_queue=args.max_queue,
        queue_timeout_s=args.queue_timeout,
        body_timeout_s=args.body_timeout,
        send_timeout_s=args.send_timeout,
        drain_delay_s=args.drain_delay,
        shutdown_grace_s=args.shutdown_grace,
        metrics=args.metrics,
        audit_log=Path(args.audit_log) if args.audit_log else None,
        audit_questions=args.audit_questions,
        auth=args.auth,
        oidc_config=Path(args.oidc_config) if args.oidc_config else None,
        tracing=tracing_requested(args.tracing),
        trace_content=args.trace_content,
        allow_private_hosts=args.allow_private_hosts or private_hosts_allowed(),
        resync_every_s=args.resync_every,
        crawl_max_pages=args.crawl_max_pages,
        crawl_delay_s=args.crawl_delay,
    )
    serve(settings, announce=lambda line: print(f"haygraph serve: {line}", file=sys.stderr, flush=True))
    return 0
