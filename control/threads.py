"""Checkpointers for conversation threads: in memory (default) or a SQLite file (CLI, survives restarts)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.tool_types import ToolCall, ToolResult

STATE_TYPES = (Evidence, ToolCall, ToolResult)
"""Our own types stored in checkpoints; registered so that loading them is explicitly allowed."""


def state_serializer() -> JsonPlusSerializer:
    """Return LangGraph's serializer with our state types allowed (LangChain messages are built in)."""
    return JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES)


def memory_checkpointer() -> InMemorySaver:
    """Return a checkpointer that keeps threads for the life of the process."""
    return InMemorySaver(serde=state_serializer())


def sqlite_checkpointer(path: str | Path) -> SqliteSaver:
    """Return a checkpointer persisting threads in the SQLite file `path` (parent dirs created).

    The connection is opened with `check_same_thread=False` because LangGraph may run nodes in
    worker threads; the saver serialises access with its own lock. Close it with `saver.conn.close()`.
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(target), check_same_thread=False)
        saver = SqliteSaver(conn, serde=state_serializer())
        saver.setup()
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(f"cannot open the thread database {str(target)!r}: {exc}") from exc
    return saver
