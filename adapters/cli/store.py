"""`haygraph store copy`: move a store between backends (embedded directory, PostgreSQL, Qdrant)."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_store_copy(args: argparse.Namespace) -> int:
    """Copy the store --from names into the one --to names (each a store directory or a config file)."""
    from haygraph.retrieval.store_copy import StoreLocation, copy_store

    report = copy_store(StoreLocation.parse(args.source), StoreLocation.parse(args.to))
    replaced = f", replacing {report.replaced} document(s)" if report.replaced else ""
    print(
        f"copied {report.documents} document(s) with their embeddings from {args.source} to "
        f"{report.target}{replaced} in {report.seconds:.1f}s (nothing re-embedded; ids checked)"
    )
    return 0


def register(sub: Any) -> None:
    """Add the `store` command group to the CLI's subparsers."""
    p = sub.add_parser("store", help="manage stores: copy a store between backends")
    group = p.add_subparsers(dest="store_command", metavar="STORE_COMMAND", required=True)
    c = group.add_parser(
        "copy",
        help="copy a store (embeddings and config included) between an embedded directory, PostgreSQL "
        "and Qdrant, in any direction; the target's content is replaced",
    )
    c.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="DIR|CONFIG",
        help="embedded store directory, or a config file with store: {backend: postgres|qdrant, ...}",
    )
    c.add_argument(
        "--to",
        required=True,
        metavar="DIR|CONFIG",
        help="embedded store directory, or a config file with store: {backend: postgres|qdrant, ...}",
    )
    c.set_defaults(func=cmd_store_copy)
