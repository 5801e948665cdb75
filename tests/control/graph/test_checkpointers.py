"""Conversation threads: checkpointers, persistence across processes, thread isolation."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde import jsonplus
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from haygraph.control.api import Agent
from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.graph import build_graph, builder
from haygraph.control.graph.checkpointers import allow_state_types, memory_checkpointer, sqlite_checkpointer
from haygraph.control.graph.context import Context
from tests.control.graph_helpers import handbook_retriever
from tests.control.tool_helpers import ROOMS

REPO = Path(__file__).resolve().parents[3]

CHILD = """
import json, sys
from haygraph.control.api import Agent
from haygraph.control.evidence import Evidence
from haygraph.control.graph import build_graph, builder
from haygraph.control.graph.context import Context
from haygraph.control.graph.checkpointers import sqlite_checkpointer
from tests.control.tool_helpers import ROOMS
saver = sqlite_checkpointer(sys.argv[1])
agent = Agent(checkpointer=saver, tool_registry=ROOMS, tool_allow_list=["room_status"])
before = agent.graph.get_state({"configurable": {"thread_id": "s1"}}).values
result = agent.ask("is the meeting room free?", thread_id="s1")
after = agent.graph.get_state({"configurable": {"thread_id": "s1"}}).values
print(json.dumps({
    "before": [[m.type, m.content] for m in before["messages"]],
    "entities": before["entities"],
    "result": result,
    "after": len(after["messages"]),
}))
"""


class TestSqliteThreads:
    def test_conversation_survives_new_process(self, tmp_path: Path) -> None:
        db = tmp_path / "nested" / "threads.sqlite"
        saver = sqlite_checkpointer(db)
        agent = Agent(
            retriever=handbook_retriever(), checkpointer=saver, tool_registry=ROOMS, tool_allow_list=[]
        )
        first = agent.ask("hello", thread_id="s1")
        second = agent.ask("Is room B204 free?", thread_id="s1")
        assert first["status"] == "completed" and second["route"] == "tool"
        saver.conn.close()
        assert db.exists()

        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(db)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
        )
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert out["before"] == [
            ["human", "hello"],
            ["ai", "Hello! Ask me anything about the knowledge base."],
            ["human", "Is room B204 free?"],
            ["ai", "I am not permitted to use room_status in this session, so nothing was done."],
        ]
        assert out["entities"] == {"rooms": ["B204"]}
        # the resumed thread remembers the room: routed to the tool, not asked again
        assert out["result"]["route"] == "tool"
        assert out["result"]["answer"] == "room_status: room: B204; free: True"
        assert out["result"]["path"] == ["analyze", "tool_exec", "generate"]
        assert out["after"] == 6

    def test_unwritable_path_is_config_error(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        with pytest.raises(ConfigError, match="cannot open the thread database"):
            sqlite_checkpointer(blocker / "threads.sqlite")


class TestMemoryThreads:
    def test_threads_are_isolated(self) -> None:
        agent = Agent(
            retriever=handbook_retriever(),
            checkpointer=memory_checkpointer(),
            tool_registry=ROOMS,
            tool_allow_list=["room_status"],
        )
        agent.ask("room B204", thread_id="a")
        other = agent.ask("is the room free?", thread_id="b")
        same = agent.ask("is the room free?", thread_id="a")
        assert other["status"] == "needs_clarification" and other["route"] == "clarify"
        assert same["route"] == "tool"
        state_b = agent.graph.get_state({"configurable": {"thread_id": "b"}}).values
        assert [m.content for m in state_b["messages"]] == [
            "is the room free?",
            "Which room (e.g. B204)?",
        ]

    def test_default_agent_uses_memory(self) -> None:
        agent = Agent()
        agent.ask("hi", thread_id="x")
        agent.ask("thanks", thread_id="x")
        values = agent.graph.get_state({"configurable": {"thread_id": "x"}}).values
        assert [m.content for m in values["messages"]][::2] == ["hi", "thanks"]


class TestStateTypesRegistered:
    """A plain `InMemorySaver` must load `Evidence` / `ToolResult` without LangGraph's warning."""

    @staticmethod
    def two_turns(checkpointer: Any) -> Any:
        graph = build_graph(checkpointer=checkpointer)
        ctx = Context(retriever=handbook_retriever(), tool_registry=ROOMS, tool_allow_list=["room_status"])
        cfg = {"configurable": {"thread_id": "serde"}}
        graph.invoke({"question": "How many days of annual leave do employees get?"}, context=ctx, config=cfg)
        graph.invoke({"question": "Is room B204 free?"}, context=ctx, config=cfg)
        graph.invoke({"question": "And the parking badge?"}, context=ctx, config=cfg)
        return graph, graph.get_state(cfg).values

    def test_plain_in_memory_saver_loads_state_types_without_warning(
        self, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(jsonplus, "_warned_unregistered_types", set())  # warn-once memory of langgraph
        with caplog.at_level(logging.WARNING, logger="langgraph.checkpoint.serde.jsonplus"):
            graph, values = self.two_turns(InMemorySaver())
        assert [r.getMessage() for r in caplog.records if "unregistered type" in r.getMessage()] == []
        assert isinstance(values["evidence"][0], Evidence)  # loaded as our type, not blocked
        assert isinstance(graph.checkpointer.serde, JsonPlusSerializer)

    def test_the_warning_is_real_without_registration(
        self, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(jsonplus, "_warned_unregistered_types", set())
        monkeypatch.setattr(builder, "allow_state_types", lambda saver: saver)
        with caplog.at_level(logging.WARNING, logger="langgraph.checkpoint.serde.jsonplus"):
            self.two_turns(InMemorySaver())
        assert any(
            "unregistered type haygraph.control.evidence.Evidence" in r.getMessage() for r in caplog.records
        )

    def test_registration_keeps_the_stored_threads_and_our_savers(self, tmp_path: Path) -> None:
        plain = InMemorySaver()
        registered = allow_state_types(plain)
        assert registered is not plain and registered.storage is plain.storage  # shallow copy
        ours = memory_checkpointer()
        assert allow_state_types(ours) is ours  # already allowed: unchanged
        saver = sqlite_checkpointer(tmp_path / "t.sqlite")
        assert allow_state_types(saver) is saver
        saver.conn.close()
        agent = Agent(checkpointer=plain)
        agent.ask("hi", thread_id="p")
        assert agent.checkpointer is agent.graph.checkpointer
        assert (
            plain.get_tuple({"configurable": {"thread_id": "p"}}) is not None
        )  # the caller's saver holds it
