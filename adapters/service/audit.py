"""The audit trail of `haygraph serve --audit-log FILE`: who did what, as append-only JSON lines.

One line per request that writes (upload, remove, re-index, confirm of a side-effect tool), refused ones
included (401, 403, 400, 404, 413, 429, 507 ...: the line says so), one per ask (its outcome and evidence
ids; the question only with `--audit-questions`; an `ask` tool call at `/mcp` too, with `"via": "mcp"`),
one per indexing job when it ends, and one per refused request to `/mcp` (action `mcp`: a 401, 413 or
429 is answered before the body is read, so which tool it was is not known; the tool calls of an
accepted request are audited by their own lines):

```json
{"time": "2026-12-06T20:31:07.412Z", "actor": "key:3f1c9a0b2d4e6f70", "tenant": "acme",
 "action": "upload", "object": ["parking.md"], "outcome": "accepted", "status": 202, "job": "9be2..."}
```

`actor` is `key:<digest prefix>` for an API key (never the key), `jwt:<user claim>` for a token,
`anonymous` without authentication, `unauthenticated` when the credential was refused.

No torn line, even on `kill -9`: each line is one `write` to a file opened with `O_APPEND`, at most
`MAX_LINE_BYTES` long, and never crosses a 4 KiB page boundary (the rest of the page is filled with
blank lines first). Linux checks for a fatal signal between the pages of a write, never inside one,
so a killed process leaves whole lines only. On opening, a file that does not end with a newline (a
power loss, another writer) is cut back to its last whole line, with a warning. Readers skip blank
lines. Lines are not fsynced: a process crash loses nothing (the kernel has the data), a power loss may
lose the last lines. Give each `serve` process its own file (their lines would interleave whole, but the
page padding assumes one writer).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from haygraph.adapters.service.asgi import MCP_PATH, StatusRecorder

logger = logging.getLogger(__name__)

PAGE_BYTES = 4096
MAX_LINE_BYTES = PAGE_BYTES
"""A line (with its newline) fits in one page; longer ones lose their question, then list items."""
ACTIONS = ("upload", "site", "delete", "reindex", "confirm", "ask", "index", "mcp")


def actor_of(caller: Any) -> str:
    """The audit actor of a caller (`key:…`, `jwt:…`, `anonymous`) or of none (`unauthenticated`)."""
    if caller is None:
        return "unauthenticated"
    key_id = getattr(caller, "key_id", None)
    if key_id is None:
        return "anonymous"
    return str(key_id) if str(key_id).startswith("jwt") else f"key:{key_id}"


def write_action(method: str, path: str) -> tuple[str, str | None] | None:
    """(action, object) of a request the audit records, or None (`object`: the path's id, if any)."""
    if path.startswith("/v1/sources"):
        if method == "POST" and path == "/v1/sources":
            return "upload", None
        rest = path.removeprefix("/v1/sources/")
        if method == "DELETE" and rest != path:
            return "delete", rest
        if method == "POST" and rest.endswith("/reindex"):
            return "reindex", rest.removesuffix("/reindex")
        return None
    if method == "POST" and path.startswith("/v1/threads/") and path.endswith("/confirm"):
        return "confirm", path.removeprefix("/v1/threads/").removesuffix("/confirm")
    if method == "POST" and path in ("/v1/ask", "/v1/ask/stream", "/v1/chat/completions"):
        return "ask", None
    if method == "POST" and path == MCP_PATH:
        return "mcp", None  # recorded only when refused (`AuditMiddleware`)
    return None


class AuditLog:
    """An append-only JSON-lines file; `record` writes one whole line (thread-safe)."""

    def __init__(self, path: str | Path, *, questions: bool = False) -> None:
        self.path = Path(path)
        self.questions = questions
        """Whether ask lines keep the question text (`--audit-questions`)."""
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._repair(self._fd)

    def _repair(self, fd: int) -> None:
        """Cut a torn last line (no trailing newline) back to the last whole line."""
        size = os.fstat(fd).st_size
        if size == 0:
            return
        with self.path.open("rb") as handle:
            handle.seek(max(size - MAX_LINE_BYTES - 1, 0))
            tail = handle.read()
        if tail.endswith(b"\n"):
            return
        cut = size - (len(tail) - tail.rfind(b"\n") - 1) if b"\n" in tail else size - len(tail)
        logger.warning("audit log %s ended in a torn line (%d bytes): cut back", self.path, size - cut)
        os.truncate(self.path, cut)

    def record(self, action: str, *, actor: str, tenant: str | None, outcome: str, **fields: Any) -> None:
        """Append one line: time, actor, tenant, action, outcome and `fields` (None values left out)."""
        entry: dict[str, Any] = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "actor": actor,
            "tenant": tenant,
            "action": action,
            "outcome": outcome,
            **{k: v for k, v in fields.items() if v is not None},
        }
        if not self.questions:
            entry.pop("question", None)
        line = _fitted(entry)
        with self._lock:
            if self._fd is None:
                logger.warning("audit log %s is closed: %s %s not recorded", self.path, action, outcome)
                return
            end = os.lseek(self._fd, 0, os.SEEK_END)
            room = PAGE_BYTES - end % PAGE_BYTES
            if len(line) > room:  # the line would cross a page: fill the page with blank lines first
                os.write(self._fd, b"\n" * room)
            written = os.write(self._fd, line)
        if written != len(line):  # a full disk: the torn rest is cut on the next start
            logger.error("audit log %s: only %d of %d bytes written", self.path, written, len(line))

    def close(self) -> None:
        """Close the file (later records are logged as lost, never written to a reused descriptor)."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def _fitted(entry: dict[str, Any]) -> bytes:
    """The entry as one JSON line of at most `MAX_LINE_BYTES` (question dropped, then lists shortened)."""
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    if len(line) <= MAX_LINE_BYTES:
        return line
    entry = {**entry, "truncated": True}
    entry.pop("question", None)
    for key in ("evidence_ids", "object", "detail"):
        value = entry.get(key)
        while isinstance(value, list) and value:
            value = value[: len(value) // 2]
            entry[key] = value
            line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
            if len(line) <= MAX_LINE_BYTES:
                return line
        if isinstance(value, str):
            entry[key] = value[:200]
    line = (json.dumps(entry, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    return line[: MAX_LINE_BYTES - 1] + b"\n" if len(line) > MAX_LINE_BYTES else line


@dataclass(frozen=True)
class AuditFilter:
    """Which lines `haygraph audit` shows: a time range, a tenant, actions."""

    since: datetime | None = None
    until: datetime | None = None
    tenant: str | None = None
    actions: tuple[str, ...] = ()

    def matches(self, entry: dict[str, Any]) -> bool:
        """Whether `entry` passes every given criterion."""
        if self.tenant is not None and entry.get("tenant") != self.tenant:
            return False
        if self.actions and entry.get("action") not in self.actions:
            return False
        if self.since is not None or self.until is not None:
            try:
                when = datetime.fromisoformat(str(entry.get("time", "")).replace("Z", "+00:00"))
            except ValueError:
                return False
            if self.since is not None and when < self.since:
                return False
            if self.until is not None and when >= self.until:
                return False
        return True


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """An ISO time (`2026-12-06`, `2026-12-06T20:00`, UTC when no zone) or an age (`90s`, `15m`, `2h`, `7d`).

    Raises:
        ValueError: neither form.

    """
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    if text[:-1].isdigit() and text[-1:] in units:
        return (now or datetime.now(UTC)) - timedelta(seconds=int(text[:-1]) * units[text[-1]])
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def read_audit(path: str | Path, chosen: AuditFilter) -> Iterator[dict[str, Any]]:
    """The entries of an audit file that pass `chosen`, in file order (blank lines skipped).

    Raises:
        ValueError: a line that is not a JSON object (names its number; a torn line cannot be there).

    """
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}: line {number} is not JSON ({exc.msg})") from exc
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: line {number} is not a JSON object")
            if chosen.matches(entry):
                yield entry


class AuditMiddleware:
    """Writes the audit line of every write and ask once its response has ended (refusals included).

    Route handlers add what only they know (files, job, result, evidence ids) as `request.state.audit`.
    """

    def __init__(self, app: Any, audit: AuditLog) -> None:
        self.app = app
        self.audit = audit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Pass the request on; record it when it is a write or an ask."""
        found = write_action(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        recorder = StatusRecorder(send)
        try:
            await self.app(scope, receive, recorder)
        finally:
            status = recorder.status
            action, target = found
            state = scope.get("state") or {}
            caller = state.get("caller")
            note = dict(state.get("audit") or {})
            outcome = note.pop("outcome", None)
            action = str(note.pop("action", action))  # `POST /v1/sources` with a `url`: "site"
            if status >= 400:
                outcome = "refused" if status < 500 else "failed"
            if action != "mcp" or status >= 400:  # an accepted MCP request: its asks write their own lines
                self.audit.record(
                    action,
                    actor=actor_of(caller),
                    tenant=getattr(caller, "tenant", None),
                    outcome=outcome or "ok",
                    status=status,
                    object=note.pop("object", target),
                    **note,
                )
