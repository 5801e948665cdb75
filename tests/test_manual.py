"""The manual (README.md and docs/): it builds without warnings, its links resolve, its examples are right."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from haygraph.control.graph import Context, build_graph
from haygraph.control.tools.types import ToolCall
from tests.manual import DOCS, README, ROOT, blocks, manual_blocks, manual_text, nav_pages


class TestSite:
    def test_builds_without_warnings(self, tmp_path: Path) -> None:
        """`make docs` in strict mode: a link to a missing page or anchor is a warning, so an error."""
        pytest.importorskip("mkdocs", reason="mkdocs-material is in the dev extra (make install)")
        run = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
            timeout=300,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        assert "WARNING" not in run.stderr, run.stderr[-3000:]
        assert (tmp_path / "site" / "formats.html").is_file()

    def test_every_page_is_in_the_nav(self) -> None:
        assert sorted(nav_pages()) == sorted(DOCS.glob("*.md"))

    def test_readme_links_resolve(self) -> None:
        """The README is read on GitHub, outside the site: its relative links and their anchors must exist."""
        links = re.findall(r"\]\(([^)#\s]+\.(?:md|png))(#[^)]*)?\)", README.read_text(encoding="utf-8"))
        assert len(links) >= 10
        for target, anchor in links:
            path = ROOT / target
            assert path.is_file(), target
            if anchor:
                assert anchor[1:] in _anchors(path), f"{target}{anchor}"


def _anchors(page: Path) -> set[str]:
    """The anchors mkdocs gives a page's headings (its toc slugify, on the heading's text)."""
    from markdown.extensions.toc import slugify

    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    return {slugify(re.sub(r"[`*]", "", m), "-") for m in re.findall(r"^#{1,6} (.+)$", text, re.M)}


class TestExamples:
    def test_tool_contract_example_runs_and_validates(self) -> None:
        block = next(b for b in manual_blocks("python") if "ToolContract(" in b)
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
        block = next(b for b in manual_blocks("python") if "ToolContract(" in b)
        namespace: dict[str, object] = {}
        exec(block, namespace)
        graph = build_graph()
        ctx = Context(tool_registry=namespace["registry"], tool_allow_list=["get_weather"])  # type: ignore[arg-type]
        rain = graph.invoke({"question": "Will it rain in Ningbo?"}, context=ctx)
        assert rain["tool_calls"] == [ToolCall(id="call_1", name="get_weather", args={"city": "Ningbo"})]
        assert rain["answer"] == "get_weather: city: Ningbo; forecast: sunny"
        ask = graph.invoke({"question": "明天天气怎么样？"}, context=ctx)
        assert (ask["status"], ask["answer"]) == ("needs_clarification", "请问是哪个城市？")
        text = manual_text()
        assert '"Will it rain in Ningbo?"' in text and "请问是哪个城市？" in text

    def test_documented_commands_exist(self) -> None:
        from haygraph.adapters.cli.main import build_parser

        commands = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
        documented = set(re.findall(r"`haygraph ([a-z-]+)", manual_text()))
        assert documented <= commands, documented - commands
        assert {"index", "search", "ask", "chat", "eval", "tune", "serve-mcp", "demo"} <= documented

    def test_readme_two_process_example_parses(self) -> None:
        """The README's PostgreSQL set-up: its config is valid and every command line parses."""
        import shlex

        from haygraph.adapters.cli.main import build_parser
        from haygraph.retrieval.config import RetrievalConfig

        (block,) = [b for b in blocks(README, "bash") if "pg.yaml" in b]
        found = re.search(r"echo '(.+)' > pg.yaml", block)
        assert found is not None
        assert RetrievalConfig.model_validate(yaml.safe_load(found.group(1))).store.backend == "postgres"
        lines = [
            line.split(" #")[0].rstrip(" &") for line in block.splitlines() if line.startswith("haygraph ")
        ]
        assert [shlex.split(line)[1] for line in lines] == ["index", "serve", "serve"]
        for line in lines:
            build_parser().parse_args(shlex.split(line)[1:])

    def test_configuration_example_is_a_valid_config(self) -> None:
        from haygraph.retrieval.config import RetrievalConfig

        (block,) = [b for b in blocks(DOCS / "configuration.md", "yaml") if "splitter:" in b]
        config = RetrievalConfig.model_validate(yaml.safe_load(block))
        assert config.splitter.max_chars == 800 and config.query.mode == "hybrid"

    @pytest.mark.integration
    def test_reader_example_finds_the_fee(self, capsys: pytest.CaptureFixture[str]) -> None:
        """docs/reader.md's pipeline example runs the shipped reader and prints the span."""
        (block,) = [b for b in blocks(DOCS / "reader.md", "python") if "E5ExtractiveReader(" in b]
        namespace: dict[str, object] = {}
        exec(block, namespace)
        best = namespace["answers"][0]  # type: ignore[index]
        assert "90 EUR" in best.data and best.score > 0.5
        assert capsys.readouterr().out.startswith(best.data)

    def test_reader_settings_example_is_a_valid_config(self) -> None:
        from haygraph.retrieval.config import RetrievalConfig

        (block,) = [b for b in blocks(DOCS / "reader.md", "yaml") if "reader:" in b]
        config = RetrievalConfig.model_validate(yaml.safe_load(block))
        assert (config.query.reader.model, config.query.reader.threads) == ("bundled", 0)
