"""The `haygraph` command line: index, search, ask, chat, eval, serve-mcp, demo.

Every command prints one clear error line and exits non-zero on bad input; no stack traces unless
`--debug` is given.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_FAILURE = 1

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}


def _quiet_libraries() -> None:
    """Keep library chatter (model-loading bars, info logs) out of the user's terminal."""
    for name, value in _OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    with contextlib.suppress(ImportError):
        import bm25s  # noqa: F401  (it sets its own logger to DEBUG on import)
    for noisy in ("haystack", "sentence_transformers", "bm25s", "jieba", "httpx", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


# -- index / search --------------------------------------------------------------------------------
def _load_config(path: str | None) -> Any:
    from haygraph.retrieval.config import RetrievalConfig

    return RetrievalConfig.from_file(path) if path else RetrievalConfig()


def cmd_index(args: argparse.Namespace) -> int:
    """Index files, directories or a BEIR corpus.jsonl into a store directory."""
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    store = Path(args.store)
    if (store / "CURRENT").is_file() and not args.config:
        kb = KnowledgeBase.open(store)
    else:
        kb = KnowledgeBase(_load_config(args.config), store_dir=store)
        if (store / "CURRENT").is_file():
            from haygraph.retrieval.store import EmbeddedDocumentStore

            kb.store = EmbeddedDocumentStore.load(store)
    beir = [p for p in args.paths if str(p).endswith(".jsonl")]
    files = [p for p in args.paths if not str(p).endswith(".jsonl")]
    progress = not args.no_progress
    reports = []
    for corpus in beir:
        reports.append(kb.index_beir(corpus, progress=progress, save=not files))
    if files:
        reports.append(kb.index(files, progress=progress))
    for rep in reports:
        print(
            f"indexed {rep.sources} source(s) -> {rep.chunks} chunk(s) "
            f"({rep.embedded} embedded, {rep.from_cache} from cache, {rep.removed_stale} stale removed) "
            f"in {rep.seconds:.1f}s; store {store} holds {rep.total_documents} chunk(s)"
        )
    return 0


def _parse_filters(pairs: Sequence[str] | None) -> dict[str, Any] | None:
    if not pairs:
        return None
    conditions = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--filter expects FIELD=VALUE, got {pair!r}")
        field = key.strip() if key.startswith("meta.") else f"meta.{key.strip()}"
        conditions.append({"field": field, "operator": "==", "value": value})
    return conditions[0] if len(conditions) == 1 else {"operator": "AND", "conditions": conditions}


def cmd_search(args: argparse.Namespace) -> int:
    """Search a store and print ranked chunks."""
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.open(args.store)
    query_cfg = None
    if args.mode or args.top_k:
        updates: dict[str, Any] = {}
        if args.mode:
            updates["mode"] = args.mode
        if args.top_k:
            updates["top_k"] = args.top_k
            updates["cut"] = {"max_keep": args.top_k}
        query_cfg = kb.config.with_overrides(query=updates).query
    result = kb.search(args.query, filters=_parse_filters(args.filter), config=query_cfg)
    if args.json:
        print(json.dumps(_search_json(result), ensure_ascii=False, indent=2))
        return 0
    for note in result.notes:
        print(f"note: {note}")
    if not result.hits:
        print("no results")
    for rank, hit in enumerate(result.hits, start=1):
        heading = " > ".join(hit.heading_path) or "-"
        rel = "" if hit.relevance is None else f"  relevance={hit.relevance:.2f}"
        print(f"{rank}. [{hit.id}] score={hit.score:.4f}{rel}")
        print(f"   source: {hit.source}  heading: {heading}")
        snippet = " ".join(hit.content.split())
        print(f"   {snippet[:240]}{'…' if len(snippet) > 240 else ''}")
    return 0


def _search_json(result: Any) -> dict[str, Any]:
    return {
        "query": result.query,
        "reranked": result.reranked,
        "notes": result.notes,
        "timings_ms": result.timings_ms,
        "results": [
            {
                "rank": i,
                "id": h.id,
                "score": h.score,
                "relevance": h.relevance,
                "source": h.source,
                "heading_path": h.heading_path,
                "text": h.content,
            }
            for i, h in enumerate(result.hits, start=1)
        ],
    }


# -- parser ------------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `haygraph` command."""
    parser = argparse.ArgumentParser(
        prog="haygraph",
        description="Agentic RAG over your documents: evidence-cited answers or an honest 'no'.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    parser.add_argument("--debug", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="index files/directories (.md .txt .html) or a BEIR corpus.jsonl")
    p.add_argument("paths", nargs="+", help="files, directories, or corpus.jsonl files")
    p.add_argument("--store", required=True, help="store directory (created or updated)")
    p.add_argument("--config", help="retrieval config file (YAML or JSON); default: built-in defaults")
    p.add_argument("--no-progress", action="store_true", help="hide the embedding progress bar")
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("search", help="print the ranked chunks for a query")
    p.add_argument("query")
    p.add_argument("--store", required=True)
    p.add_argument("--top-k", type=int, help="at most this many results")
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"], help="override the retrieval mode")
    p.add_argument("--filter", action="append", metavar="FIELD=VALUE", help="metadata filter, repeatable")
    p.add_argument("--json", action="store_true", help="print a JSON object instead of text")
    p.set_defaults(func=cmd_search)

    from haygraph.adapters import cli_agent
    from haygraph.eval import cli as eval_cli

    cli_agent.register(sub)
    eval_cli.register(sub)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ValueError, OSError]
    for module, name in (
        ("haygraph.retrieval.errors", "RetrievalError"),
        ("haygraph.control.errors", "ControlError"),
        ("haygraph.eval.errors", "EvalError"),
    ):
        try:
            errors.append(getattr(__import__(module, fromlist=[name]), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


def _one_line(exc: BaseException) -> str:
    """The error message on one line: some messages (YAML parse errors, validation errors) span several."""
    return " ".join(str(exc).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s: %(message)s"
    )
    _quiet_libraries()
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except _known_errors() as exc:
        if args.debug:
            raise
        print(f"error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"error: unexpected failure ({type(exc).__name__}): {_one_line(exc)}"
            " — rerun with --debug for details",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
