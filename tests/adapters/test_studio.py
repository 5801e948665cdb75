"""The LangGraph Studio / `langgraph dev` entry point: langgraph.json and `make_graph`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from haygraph.adapters import studio
from haygraph.control.errors import ConfigError
from haygraph.control.graph import Context

REPO = Path(__file__).resolve().parents[2]


class TestLanggraphJson:
    def test_points_at_the_factory(self) -> None:
        config = json.loads((REPO / "langgraph.json").read_text(encoding="utf-8"))
        assert config["dependencies"] == ["."]
        path, _, name = config["graphs"]["haygraph"].partition(":")
        assert (REPO / path).resolve() == Path(studio.__file__).resolve()
        assert callable(getattr(studio, name))


class TestMakeGraph:
    def test_store_variable_is_required(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv("HAYGRAPH_STORE", raising=False)
        with pytest.raises(ConfigError, match="set HAYGRAPH_STORE"):
            studio.make_graph()

    def test_store_must_be_a_store(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        monkeypatch.setenv("HAYGRAPH_STORE", str(tmp_path))
        with pytest.raises(ConfigError, match="is not a haygraph store"):
            studio.make_graph()

    @pytest.mark.integration
    def test_graph_over_the_store_answers_without_a_context(
        self, monkeypatch: pytest.MonkeyPatch, handbook_store_copy: Path
    ) -> None:
        monkeypatch.setenv("HAYGRAPH_STORE", str(handbook_store_copy))
        monkeypatch.delenv("HAYGRAPH_EXAMPLE_TOOLS", raising=False)
        graph = studio.make_graph()
        assert graph.checkpointer is None  # the LangGraph server brings its own
        state = graph.invoke({"question": "How many days of annual leave do I get?"})
        assert state["status"] == "completed" and state["evidence_ids"]
        # what the server passes: a Context of the run's settings; the store's retriever stays bound
        state = graph.invoke({"question": "where is my order 202405120001?"}, context=Context(top_k=2))
        assert state["route"] == "retrieve" and state["top_k"] == 2 and state["evidence"]
        assert not (handbook_store_copy / "orders.sqlite").exists()

        monkeypatch.setenv("HAYGRAPH_EXAMPLE_TOOLS", "1")
        tools = studio.make_graph().invoke({"question": "where is my order 202405120001?"})
        assert tools["route"] == "tool" and "SF Express" in tools["answer"]
