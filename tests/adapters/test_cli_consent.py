"""`ask --confirm` and `chat`'s y/n for side-effect tools; the pending call survives across processes."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from haygraph.adapters.agent import build_agent
from haygraph.adapters.cli import agent as cli_agent
from haygraph.adapters.cli.main import main
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.control.api import Agent
from haygraph.control.tools import ContractToolExecutor
from tests.adapters.test_cli import assert_one_error_line, run_cli
from tests.control.tool_helpers import ScriptedChatModel, call

TICKET = {"category": "delivery", "description": "Parcel arrived damaged, please help."}


def ticket_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        script=[call("RouteDecision", route="tool", intent="support"), call("create_ticket", **TICKET)]
    )


class TestConfirmFlags:
    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["--confirm", "yes"], "pass --thread ID and no question"),
            (["a question", "--thread", "T", "--confirm", "yes"], "pass --thread ID and no question"),
            ([], "give a question"),
        ],
    )
    def test_misuse_is_one_clear_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
    ) -> None:
        assert main(["ask", *extra, "--store", str(tmp_path)]) == 2
        assert message in assert_one_error_line(capsys.readouterr().err)


class TestChatAsks:
    def test_chat_asks_y_n_and_a_no_does_nothing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        db = OrdersDatabase(tmp_path / "orders.sqlite")
        executor = ContractToolExecutor(build_example_registry(db, None), DEFAULT_ALLOW_LIST)
        agent = Agent(model=ticket_model(), tool_executor=executor)
        monkeypatch.setattr(cli_agent, "_agent", lambda args, threads_db=None: (agent, {}))
        monkeypatch.setattr("sys.stdin", io.StringIO("my parcel is damaged, open a ticket\nn\nexit\n"))
        assert main(["chat", "--store", str(tmp_path), "--json"]) == 0
        captured = capsys.readouterr()
        paused, final = [json.loads(line) for line in captured.out.splitlines() if line.strip()]
        assert paused["status"] == "needs_confirmation" and "create_ticket(" in paused["answer"]
        assert "Run it? [y/N]" in captured.err
        assert final["status"] == "completed" and "nothing was done" in final["answer"]
        assert db.tickets() == []


@pytest.mark.integration
class TestAskConfirmAcrossProcesses:
    @pytest.mark.parametrize(("answer", "tickets"), [("no", 0), ("yes", 1)])
    def test_a_paused_ask_is_resumed_by_a_new_process(
        self, handbook_store_copy: Path, haygraph_cache_dir: Path, answer: str, tickets: int
    ) -> None:
        store = handbook_store_copy
        cli_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYGRAPH_CACHE_DIR": str(haygraph_cache_dir)}
        agent = build_agent(
            store, model=ticket_model(), threads_db=store / "threads.sqlite", example_tools=True
        )
        paused = agent.ask("my parcel is damaged, open a ticket", thread_id="T")
        assert paused["status"] == "needs_confirmation" and paused["pending"][0]["tool"] == "create_ticket"
        agent.checkpointer.conn.close()  # type: ignore[attr-defined]
        proc = run_cli(
            ["ask", "--store", str(store), "--thread", "T", "--confirm", answer, "--json", "--example-tools"],
            cli_env,
        )
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert (result["status"], result["thread_id"], result["route"]) == ("completed", "T", "tool")
        assert len(OrdersDatabase(store / "orders.sqlite").tickets()) == tickets
        again = run_cli(["ask", "--store", str(store), "--thread", "T", "--confirm", "yes"], cli_env)
        assert again.returncode == 2 and "no tool call waiting" in assert_one_error_line(again.stderr)
