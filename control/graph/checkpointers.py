"""Checkpointers for conversation threads: in memory (default) or a SQLite file (CLI, survives restarts)."""

from __future__ import annotations

import copy
import sqlite3
from pathlib import Path
from typing import Any, TypeVar

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.tools.types import ToolCall, ToolResult

STATE_TYPES = (Evidence, ToolCall, ToolResult)
"""Our own types stored in checkpoints; registered so that loading them is explicitly allowed."""

SaverT = TypeVar("SaverT", bound=BaseCheckpointSaver[Any])


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


def allow_state_types(checkpointer: SaverT | None) -> SaverT | None:
    """Return `checkpointer` with the state's own types (`STATE_TYPES`) allowed by its serializer.

    LangGraph's `JsonPlusSerializer` keeps an allow-list of the types it may load from a checkpoint
    (`allowed_msgpack_modules`). A serializer with an explicit list gets ours merged in through
    LangGraph's own `BaseCheckpointSaver.with_allowlist`. A default serializer (for example a plain
    `InMemorySaver()`) allows every type but warns "Deserializing unregistered type ..." for each
    one it does not know and `with_allowlist` leaves it unchanged, so the returned saver is a
    shallow copy (sharing the stored threads) whose serializer is `state_serializer()`, keeping the
    original's `pickle_fallback`. Savers with another serializer are returned unchanged.
    """
    if checkpointer is None:
        return None
    serde = getattr(checkpointer, "serde", None)
    if isinstance(serde, JsonPlusSerializer) and getattr(serde, "_allowed_msgpack_modules", None) is True:
        clone = copy.copy(checkpointer)
        clone.serde = JsonPlusSerializer(
            pickle_fallback=serde.pickle_fallback, allowed_msgpack_modules=STATE_TYPES
        )
        return clone
    keys = [(t.__module__, t.__name__) for t in STATE_TYPES]
    return checkpointer.with_allowlist(keys)  # type: ignore[return-value]
