"""`haygraph store copy`: migrate an embedded store to another backend (Qdrant)."""

from __future__ import annotations

import argparse
from typing import Any


def cmd_store_copy(args: argparse.Namespace) -> int:
    """Copy the embedded store in --from into the Qdrant collection the --to config names."""
    from haygraph.retrieval.config import RetrievalConfig
    from haygraph.retrieval.qdrant.copy import copy_store

    report = copy_store(args.source, RetrievalConfig.from_file(args.to))
    replaced = f", replacing {report.replaced} document(s)" if report.replaced else ""
    print(
        f"copied {report.documents} document(s) with their embeddings from {args.source} to "
        f"{report.target}{replaced} in {report.seconds:.1f}s (nothing re-embedded)"
    )
    return 0


def register(sub: Any) -> None:
    """Add the `store` command group to the CLI's subparsers."""
    p = sub.add_parser("store", help="manage stores: copy an embedded store into Qdrant")
    group = p.add_subparsers(dest="store_command", metavar="STORE_COMMAND", required=True)
    c = group.add_parser("copy", help="copy an embedded store (embeddings included) into a Qdrant collection")
    c.add_argument("--from", dest="source", required=True, metavar="DIR", help="embedded store directory")
    c.add_argument(
        "--to", required=True, metavar="CONFIG", help="config file with store: {backend: qdrant, ...}"
    )
    c.set_defaults(func=cmd_store_copy)
