"""CLI command `haygraph audit`: read the audit trail of `haygraph serve --audit-log`, filtered."""

from __future__ import annotations

import argparse
import json
import sys
import unicodedata
from typing import Any


def register(sub: Any) -> None:
    """Add the `audit` sub-command to the `haygraph` parser."""
    from haygraph.adapters.service.audit import ACTIONS

    p = sub.add_parser(
        "audit",
        help="show the audit trail of `haygraph serve --audit-log` (filter by time, tenant, action)",
        description="Print the lines of an audit file (`haygraph serve --audit-log FILE`) that pass the "
        "filters: one per write (upload, delete, reindex, confirm; refused ones too), per ask and per "
        "indexing job. Times are UTC.",
    )
    p.add_argument("file", help="the audit file")
    p.add_argument(
        "--since",
        help="from this time: ISO (2026-12-06, 2026-12-06T20:00, UTC by default) or an age (15m, 2h, 7d)",
    )
    p.add_argument("--until", help="before this time (same forms as --since)")
    p.add_argument("--tenant", help="only this tenant's lines")
    p.add_argument(
        "--action", action="append", choices=ACTIONS, help="only these actions (repeat the flag for several)"
    )
    p.add_argument("--json", action="store_true", help="print the JSON lines as they are")
    p.set_defaults(func=cmd_audit)


def cmd_audit(args: argparse.Namespace) -> int:
    """Print the matching audit lines (a table, or JSON lines with --json); 0 even when none match."""
    from haygraph.adapters.service.audit import AuditFilter, parse_time, read_audit

    try:
        chosen = AuditFilter(
            since=parse_time(args.since) if args.since else None,
            until=parse_time(args.until) if args.until else None,
            tenant=args.tenant,
            actions=tuple(args.action or ()),
        )
    except ValueError as exc:
        raise ValueError(
            f"--since/--until: {exc}; use an ISO time (2026-12-06T20:00) or an age (15m, 2h, 7d)"
        ) from exc
    shown = 0
    try:
        for entry in read_audit(args.file, chosen):
            shown += 1
            if args.json:
                print(json.dumps(entry, ensure_ascii=False))
            else:
                print(_row(entry))
    except OSError as exc:
        raise ValueError(f"cannot read the audit file {args.file!r}: {exc.strerror or exc}") from exc
    print(f"{shown} line(s)", file=sys.stderr)
    return 0


def _safe(value: Any) -> str:
    """`value` with control and invisible characters escaped (a file name cannot drive the terminal)."""
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch)[0] == "C" else ch for ch in str(value))


def _row(entry: dict[str, Any]) -> str:
    target = entry.get("object")
    if isinstance(target, list):
        target = ",".join(str(t) for t in target)
    extra = {
        k: v
        for k, v in entry.items()
        if k not in ("time", "actor", "tenant", "action", "outcome", "status", "object")
    }
    status = f" {entry['status']}" if "status" in entry else ""
    tail = f"  {json.dumps(extra, ensure_ascii=False)}" if extra else ""
    return _safe(
        f"{entry.get('time', '?')}  {entry.get('action', '?'):<8} {entry.get('outcome', '?')}{status}  "
        f"tenant={entry.get('tenant')}  actor={entry.get('actor')}  object={target}"
    ) + _safe(tail)
