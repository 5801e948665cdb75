"""The `haygraph` CLI end to end: real processes for the promised workflows, `main()` for error paths.

Subprocesses run the installed console script (`<venv>/bin/haygraph`) with the offline settings and
the session's embedding cache, so `haygraph index` of the handbook reads every embedding from the
cache that `handbook_store` filled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from haygraph.adapters.agent import build_agent
from haygraph.adapters.cli.main import build_parser, main
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.knowledge_base import KnowledgeBase
from tests.bounded_calls import within

pytestmark = pytest.mark.integration

RESULT_KEYS = {
    "status",
    "route",
    "answer",
    "evidence_ids",
    "evidence",
    "path",
    "query",
    "timings_ms",
    "notes",
    "pending",
    "decision",
    "answer_spans",
}
EVIDENCE_KEYS = {"id", "text", "score", "source", "page", "page_breaks", "char_start", "char_end"}
HANDBOOK_DIR = Path(sample_handbook_path())
LEAVE_QUESTION = "How many days of annual leave do I get?"
ORDER = "202405120001"
TIMEOUT = 600  # model loading on a busy 2-core machine can take a while


def haygraph_command() -> list[str]:
    """The installed console script next to this interpreter, else `python -m haygraph.adapters.cli.main`."""
    script = Path(sys.executable).with_name("haygraph")
    return [str(script)] if script.exists() else [sys.executable, "-m", "haygraph.adapters.cli.main"]


@pytest.fixture(scope="session")
def cli_env(haygraph_cache_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "TOKENIZERS_PARALLELISM": "false",
        "HAYGRAPH_CACHE_DIR": str(haygraph_cache_dir),
    }


def run_cli(
    args: list[str], env: dict[str, str], stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*haygraph_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
        cwd=Path(__file__).resolve().parents[2],
    )


def assert_one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


@pytest.fixture(scope="module")
def cli_store(
    tmp_path_factory: pytest.TempPathFactory, cli_env: dict[str, str], handbook_store: Path
) -> Path:
    """A store made by `haygraph index` in a real process (handbook_store first, so the cache is warm)."""
    store = tmp_path_factory.mktemp("cli") / "kb"
    proc = run_cli(["index", str(sample_handbook_path()), "--store", str(store), "--no-progress"], cli_env)
    assert proc.returncode == 0, proc.stderr
    chunks = KnowledgeBase.open(handbook_store).store.count_documents()
    assert f"indexed 24 source(s) -> {chunks} chunk(s) (0 embedded, {chunks} from cache" in proc.stdout
    return store


class TestIndexAndSearch:
    def test_search_json_is_ranked_with_ids_scores_sources_and_headings(
        self, cli_store: Path, cli_env: dict[str, str]
    ) -> None:
        proc = run_cli(["search", LEAVE_QUESTION, "--store", str(cli_store), "--json"], cli_env)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        results = out["results"]
        assert out["query"] == LEAVE_QUESTION and results
        assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
        assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
        store = KnowledgeBase.open(cli_store).store
        for r in results:
            doc = store.get(r["id"])
            assert doc is not None and doc.content == r["text"]
            assert r["source"] == doc.meta["source_id"] and r["id"].startswith(r["source"] + "::")
            assert isinstance(r["heading_path"], list) and r["heading_path"] == list(doc.meta["heading_path"])
            assert 0 < r["relevance"] < 1
            # the citation's position: the chunk's words, in order, at those offsets of the source file
            # (a chunk may start with repeated heading lines of its path, which the offsets leave out)
            source_text = (HANDBOOK_DIR / r["source"]).read_text(encoding="utf-8")
            located = " ".join(source_text[r["char_start"] : r["char_end"]].split())
            assert located and " ".join(r["text"].split()).endswith(located)
            assert r["page"] is None  # Markdown has no pages
        assert results[0]["source"] == "leave-policy.md"

    def test_top_k_mode_and_filter_options(self, cli_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
        args = ["search", "who approves an expense claim", "--store", str(cli_store), "--json"]
        assert main([*args, "--top-k", "2", "--mode", "bm25"]) == 0
        assert 1 <= len(json.loads(capsys.readouterr().out)["results"]) <= 2
        assert main([*args, "--filter", "source_id=leave-policy.md"]) == 0
        filtered = json.loads(capsys.readouterr().out)["results"]
        assert filtered and {r["source"] for r in filtered} == {"leave-policy.md"}

    def test_text_output_lists_ranked_chunks(
        self, cli_store: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["search", LEAVE_QUESTION, "--store", str(cli_store)]) == 0
        out = capsys.readouterr().out
        assert out.startswith("1. [leave-policy.md::") and "source: leave-policy.md" in out


class TestAsk:
    def test_ask_json_has_exactly_the_documented_keys(self, cli_store: Path, cli_env: dict[str, str]) -> None:
        proc = run_cli(["ask", LEAVE_QUESTION, "--store", str(cli_store), "--json"], cli_env)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout)
        assert set(result) == RESULT_KEYS | {"settings", "thread_id"}  # the CLI adds settings and thread
        assert result["thread_id"].startswith("ask-") and result["notes"] == [] and result["pending"] == []
        assert result["settings"]["mode"] == "hybrid" and result["settings"]["sources"]["mode"] == "store"
        assert (result["status"], result["route"]) == ("completed", "retrieve")
        assert result["evidence"] and all(set(e) == EVIDENCE_KEYS for e in result["evidence"])
        retrieved = {e["id"] for e in result["evidence"]}
        assert result["evidence_ids"] and set(result["evidence_ids"]) <= retrieved
        assert all(f"[{i}]" in result["answer"] for i in result["evidence_ids"])
        assert result["path"][0] == "analyze" and result["path"][-1] == "generate"
        assert result["timings_ms"]["total"] > 0 and result["query"]

    def test_text_output_shows_answer_citations_and_status(
        self, handbook_store_copy: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        question = f"where is order {ORDER}?"
        assert main(["ask", question, "--store", str(handbook_store_copy), "--example-tools"]) == 0
        out = capsys.readouterr().out
        assert "SF Express" in out and "status: completed  route: tool" in out

    def test_without_example_tools_an_order_question_is_not_looked_up(
        self, handbook_store_copy: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["ask", f"where is order {ORDER}?", "--store", str(handbook_store_copy), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert result["route"] == "retrieve" and "SF Express" not in (result["answer"] or "")
        assert not (handbook_store_copy / "orders.sqlite").exists()

    def test_example_tools_flag_on_every_agent_command(self) -> None:
        parser = build_parser()
        for command in (["ask", "q"], ["chat"], ["serve-mcp"]):
            args = parser.parse_args([*command, "--store", "s", "--example-tools"])
            assert args.example_tools is True
            assert parser.parse_args([*command, "--store", "s"]).example_tools is False

    @pytest.mark.parametrize("question", ["   ", "leave " * 20_000], ids=["empty", "100k"])
    def test_unusable_question_is_a_clarification_not_a_crash(
        self, cli_store: Path, capsys: pytest.CaptureFixture[str], question: str
    ) -> None:
        # README: the agent answers empty or over-long input with needs_clarification, never an exception.
        assert main(["ask", question, "--store", str(cli_store), "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["status"], result["evidence_ids"]) == ("needs_clarification", [])


def _corrupt(store: Path, part: str) -> None:
    if part == "CURRENT":
        (store / "CURRENT").write_text("garbage\n")
    else:
        version = store / (store / "CURRENT").read_text().strip()
        (version / "documents.jsonl").write_text("{{{ not json\n")


class TestErrors:
    def test_corrupt_store_in_a_real_process(
        self, handbook_store_copy: Path, cli_env: dict[str, str]
    ) -> None:
        _corrupt(handbook_store_copy, "documents.jsonl")
        proc = run_cli(["search", "annual leave", "--store", str(handbook_store_copy)], cli_env)
        assert proc.returncode != 0 and proc.stdout == ""
        assert "corrupt" in assert_one_error_line(proc.stderr)

    def test_missing_store_in_a_real_process(self, tmp_path: Path, cli_env: dict[str, str]) -> None:
        proc = run_cli(["ask", "annual leave", "--store", str(tmp_path / "nope")], cli_env)
        assert proc.returncode != 0
        assert "does not exist" in assert_one_error_line(proc.stderr)

    @pytest.mark.parametrize("command", ["search", "ask", "chat", "serve-mcp"])
    def test_missing_store(self, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
        args = [command, *(["q"] if command in ("search", "ask") else []), "--store", str(tmp_path / "nope")]
        assert main(args) != 0
        assert "does not exist" in assert_one_error_line(capsys.readouterr().err)
        assert not (tmp_path / "nope").exists()

    @pytest.mark.parametrize(
        ("command", "part"),
        [
            ("search", "CURRENT"),
            ("ask", "documents.jsonl"),
            ("chat", "CURRENT"),
            ("serve-mcp", "documents.jsonl"),
        ],
    )
    def test_corrupt_store(
        self, handbook_store_copy: Path, capsys: pytest.CaptureFixture[str], command: str, part: str
    ) -> None:
        _corrupt(handbook_store_copy, part)
        args = [
            command,
            *(["q"] if command in ("search", "ask") else []),
            "--store",
            str(handbook_store_copy),
        ]
        assert main(args) != 0
        assert "corrupt" in assert_one_error_line(capsys.readouterr().err)

    @pytest.mark.parametrize(
        ("name", "content", "message"),
        [
            ("data.rtf", b"{\\rtf1}", "unsupported file type '.rtf'"),
            ("data.xlsx", b"PK\x03\x04", "data.xlsx: the file is corrupt"),
            ("locked.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 64, "password-protected"),
            ("empty.md", b"  \n\n", "no text content"),
            ("missing.md", None, "does not exist"),
        ],
    )
    def test_bad_input_file(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        name: str,
        content: bytes | None,
        message: str,
    ) -> None:
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        assert main(["index", str(path), "--store", str(tmp_path / "kb"), "--no-progress"]) != 0
        assert message in assert_one_error_line(capsys.readouterr().err)
        assert not (tmp_path / "kb" / "CURRENT").exists()

    def test_fifo_given_by_name_is_an_error_not_a_hang(
        self, fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        args = ["index", str(fifo), "--store", str(tmp_path / "kb"), "--no-progress"]
        assert within(TIMEOUT, lambda: main(args)) != 0
        line = assert_one_error_line(capsys.readouterr().err)
        assert (
            line == f"error: {fifo}: is a FIFO (named pipe), not a regular file; only regular files are read"
        )
        assert not (tmp_path / "kb" / "CURRENT").exists()

    def test_fifo_in_an_indexed_folder_is_skipped(
        self, fifo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (fifo.parent / "a.md").write_text("# A\n\nStaff parking costs five dollars a day.\n")
        args = ["index", str(fifo.parent), "--store", str(tmp_path / "kb"), "--no-progress"]
        assert within(TIMEOUT, lambda: main(args)) == 0
        out = capsys.readouterr().out
        assert "indexed 1 source(s)" in out
        assert f"skipped {fifo}: not a regular file (a FIFO, device or socket is never read)" in out

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (
                "splitter: {min_chars: 300}\nquery: {cut: {drop_ratoi: 0.4}}\n",
                "unknown config key 'query.cut.drop_ratoi'",
            ),
            ("splitter: [1, 2\n", "not valid yaml"),  # the parser's message spans several lines
            ("splitter: {min_chars: -5}\n", "splitter.min_chars"),
        ],
        ids=["unknown-key", "broken-yaml", "bad-value"],
    )
    def test_bad_config_file(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
    ) -> None:
        config = tmp_path / "config.yaml"
        config.write_text(content)
        args = [
            "index",
            str(sample_handbook_path()),
            "--store",
            str(tmp_path / "kb"),
            "--config",
            str(config),
        ]
        assert main(args) != 0
        assert message in assert_one_error_line(capsys.readouterr().err)
        assert not (tmp_path / "kb").exists()

    @pytest.mark.parametrize(("query", "message"), [("  \t", "empty"), ("a" * 100_000, "too long")])
    def test_unusable_search_query(
        self, cli_store: Path, capsys: pytest.CaptureFixture[str], query: str, message: str
    ) -> None:
        assert main(["search", query, "--store", str(cli_store)]) != 0
        captured = capsys.readouterr()
        assert message in assert_one_error_line(captured.err) and captured.out == ""

    def test_bad_file_leaves_the_previous_index_intact(
        self, handbook_store_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        store = handbook_store_copy
        before_current = (store / "CURRENT").read_text()
        before_entries = sorted(p.name for p in store.iterdir())
        count = KnowledgeBase.open(store).store.count_documents()
        good = tmp_path / "parking.md"
        good.write_text("# Parking\n\nStaff parking in the garage costs five dollars per day on level 3.\n")
        bad = tmp_path / "notes.docx"
        bad.write_bytes(b"PK\x03\x04 not a supported format")
        assert main(["index", str(good), str(bad), "--store", str(store), "--no-progress"]) != 0
        assert ".docx" in assert_one_error_line(capsys.readouterr().err)
        assert (store / "CURRENT").read_text() == before_current
        assert sorted(p.name for p in store.iterdir()) == before_entries  # no half-written version left
        kb = KnowledgeBase.open(store)
        assert kb.store.count_documents() == count
        assert "parking.md" not in {d.meta.get("source_id") for d in kb.store.documents}
        assert kb.search(LEAVE_QUESTION).hits[0].source == "leave-policy.md"


class TestChatResume:
    def test_thread_resumed_in_a_new_process_remembers_the_order(
        self, handbook_store_copy: Path, cli_env: dict[str, str]
    ) -> None:
        store = str(handbook_store_copy)
        first = run_cli(
            ["chat", "--store", store, "--thread", "T", "--json", "--example-tools"],
            cli_env,
            stdin=f"Hi, my order number is {ORDER}\nexit\n",
        )
        assert first.returncode == 0, first.stderr
        [turn1] = [json.loads(line) for line in first.stdout.splitlines() if line.strip()]
        assert turn1["route"] == "tool" and ORDER in turn1["answer"]

        second = run_cli(
            ["chat", "--store", store, "--thread", "T", "--json", "--example-tools"],
            cli_env,
            stdin="where is my order?\n",
        )
        assert second.returncode == 0, second.stderr
        [turn2] = [json.loads(line) for line in second.stdout.splitlines() if line.strip()]
        assert (turn2["status"], turn2["route"]) == ("completed", "tool")
        assert turn2["path"] == ["analyze", "tool_exec", "generate"]
        assert ORDER in turn2["answer"] and "SF Express" in turn2["answer"]

        # the same question on a thread that never saw the number is asked back
        agent = build_agent(
            handbook_store_copy, threads_db=handbook_store_copy / "threads.sqlite", example_tools=True
        )
        values: dict[str, Any] = agent.graph.get_state({"configurable": {"thread_id": "T"}}).values
        assert [m.type for m in values["messages"]] == ["human", "ai", "human", "ai"]
        assert values["entities"]["order_ids"] == [ORDER]
        other = agent.ask("where is my order?", thread_id="never-saw-it")
        assert (other["status"], other["route"]) == ("needs_clarification", "clarify")
