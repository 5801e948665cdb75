"""The README is the user's manual: its tool-contract example must run as written."""

import re
from pathlib import Path

from haygraph.control.graph import Context, build_graph
from haygraph.control.tools.types import ToolCall

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


class TestReadme:
    def test_tool_contract_example_runs_and_validates(self) -> None:
        block = next(b for b in _python_blocks() if "ToolContract(" in b)
        namespace: dict[str, object] = {}
        exec(block, namespace)
        executor = namespace["executor"]
        ok, bad = executor.execute(  # type: ignore[attr-defined]
            [
                ToolCall(id="1", name="get_weather", args={"city": "Ningbo"}),
                ToolCall(id="2", name="get_weather", args={"town": "Ningbo"}),
            ],
            thread_id="readme",
        )
        assert ok.status == "ok" and ok.content == {"city": "Ningbo", "forecast": "sunny"}
        assert bad.status == "invalid_arguments" and "town" in (bad.error or "")

    def test_offline_trigger_example_behaves_as_documented(self) -> None:
        block = next(b for b in _python_blocks() if "ToolContract(" in b)
        namespace: dict[str, object] = {}
        exec(block, namespace)
        graph = build_graph()
        ctx = Context(tool_registry=namespace["registry"], tool_allow_list=["get_weather"])  # type: ignore[arg-type]
        rain = graph.invoke({"question": "Will it rain in Ningbo?"}, context=ctx)
        assert rain["tool_calls"] == [ToolCall(id="call_1", name="get_weather", args={"city": "Ningbo"})]
        assert rain["answer"] == "get_weather: city: Ningbo; forecast: sunny"
        ask = graph.invoke({"question": "明天天气怎么样？"}, context=ctx)
        assert (ask["status"], ask["answer"]) == ("needs_clarification", "请问是哪个城市？")
        text = README.read_text(encoding="utf-8")
        assert '"Will it rain in Ningbo?"' in text and "请问是哪个城市？" in text

    def test_documented_commands_exist(self) -> None:
        from haygraph.adapters.cli.main import build_parser

        text = README.read_text(encoding="utf-8")
        commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
        documented = set(re.findall(r"`haygraph ([a-z-]+)", text))
        assert documented <= commands, documented - commands
        assert {"index", "search", "ask", "chat", "eval", "tune", "serve-mcp", "demo"} <= documented
