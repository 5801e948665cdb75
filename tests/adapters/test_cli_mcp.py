"""`haygraph serve-mcp` as a real stdio subprocess, discovered and called through langchain-mcp-adapters."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from haygraph.adapters.knowledge_hits import KnowledgeHit
from haygraph.adapters.mcp.client import MCPToolset
from haygraph.control.tools import ContractToolExecutor, ToolRegistry
from haygraph.control.tools.types import ToolCall
from haygraph.retrieval.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.integration

STARTUP_S = 300.0  # process start + model load on a busy machine
CALL_S = 120.0


def _command() -> tuple[str, list[str]]:
    script = Path(sys.executable).with_name("haygraph")
    return (str(script), []) if script.exists() else (sys.executable, ["-m", "haygraph.adapters.cli.main"])


@pytest.fixture(scope="module")
def toolset(handbook_store: Path) -> Iterator[MCPToolset]:
    command, prefix = _command()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HAYSTACK_TELEMETRY_ENABLED": "False",
        "TOKENIZERS_PARALLELISM": "false",
    }
    connection = {
        "transport": "stdio",
        "command": command,
        "args": [*prefix, "serve-mcp", "--store", str(handbook_store)],
        "env": env,
        "cwd": str(Path(__file__).resolve().parents[2]),
    }
    with MCPToolset({"kb": connection}, timeout_s=CALL_S, max_retries=0, startup_timeout_s=STARTUP_S) as ts:
        yield ts


@pytest.fixture(scope="module")
def executor(toolset: MCPToolset) -> ContractToolExecutor:
    registry = ToolRegistry(toolset.contracts())
    return ContractToolExecutor(registry, registry.names(), max_calls_per_turn=10)


@pytest.fixture(scope="module")
def kb(handbook_store: Path) -> KnowledgeBase:
    return KnowledgeBase.open(handbook_store)


class TestServeMCP:
    def test_tools_are_discovered_with_read_only_contracts(self, toolset: MCPToolset) -> None:
        contracts = {c.name: c for c in toolset.contracts()}
        assert set(contracts) == {"search_knowledge_base", "get_chunk", "ask"}
        assert not any(c.side_effects for c in contracts.values())
        schema = contracts["search_knowledge_base"].model_schema()["function"]["parameters"]
        assert set(schema["properties"]) == {"query", "top_k", "filters"} and schema["required"] == ["query"]
        ask = contracts["ask"].model_schema()["function"]["parameters"]
        assert set(ask["properties"]) == {"question", "filters"} and ask["required"] == ["question"]

    def test_ask_answers_with_citations_or_refuses(self, executor: ContractToolExecutor) -> None:
        answered, refused = executor.execute(
            [
                ToolCall(id="1", name="ask", args={"question": "How many days of annual leave do I get?"}),
                ToolCall(id="2", name="ask", args={"question": "Can I bring my dog to the office?"}),
            ],
            thread_id="mcp",
        )
        assert answered.status == "ok", answered.error
        body = answered.content["structured"]
        assert body["status"] == "completed" and body["answered"] is True and body["answer"]
        assert [c["id"] for c in body["citations"]] == body["evidence_ids"] and body["evidence_ids"]
        assert body["citations"][0]["source"] == "leave-policy.md"
        assert refused.status == "ok", refused.error
        refusal = refused.content["structured"]
        assert refusal["status"] == "insufficient_evidence" and refusal["answered"] is False
        assert refusal["citations"] == [] and refusal["answer"]

    def test_search_returns_hits_whose_ids_exist_in_the_store(
        self, executor: ContractToolExecutor, kb: KnowledgeBase
    ) -> None:
        [result] = executor.execute(
            [
                ToolCall(
                    id="1",
                    name="search_knowledge_base",
                    args={"query": "How many days of annual leave?", "top_k": 3},
                )
            ],
            thread_id="mcp",
        )
        assert result.status == "ok", result.error
        hits = result.content["structured"]["result"]
        assert 1 <= len(hits) <= 3 and hits[0]["source"] == "leave-policy.md"
        for hit in hits:
            assert set(hit) == set(KnowledgeHit.model_fields)  # every field (test_mcp.py names them)
            doc = kb.store.get(hit["id"])
            assert doc is not None and doc.content == hit["text"] and doc.meta["source_id"] == hit["source"]
            assert (doc.meta["char_start"], doc.meta["char_end"]) == (hit["char_start"], hit["char_end"])
        assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)

    def test_chinese_search_and_get_chunk(self, executor: ContractToolExecutor, kb: KnowledgeBase) -> None:
        [search] = executor.execute(
            [ToolCall(id="1", name="search_knowledge_base", args={"query": "婚假有几天"})], thread_id="mcp"
        )
        assert search.status == "ok", search.error
        top = search.content["structured"]["result"][0]
        assert top["source"] == "请假流程.md"
        [chunk] = executor.execute(
            [ToolCall(id="2", name="get_chunk", args={"chunk_id": top["id"]})], thread_id="mcp"
        )
        assert chunk.status == "ok", chunk.error
        body = chunk.content["structured"]
        doc = kb.store.get(top["id"])
        assert doc is not None
        assert (body["id"], body["text"], body["source"]) == (doc.id, doc.content, "请假流程.md")
        assert body["heading_path"] == list(doc.meta["heading_path"])

    def test_bad_calls_are_results_not_crashes(self, executor: ContractToolExecutor) -> None:
        missing, invalid, after = executor.execute(
            [
                ToolCall(id="1", name="get_chunk", args={"chunk_id": "leave-policy.md::nope"}),
                ToolCall(id="2", name="search_knowledge_base", args={"query": "leave", "top_k": 99}),
                ToolCall(id="3", name="search_knowledge_base", args={"query": "password length"}),
            ],
            thread_id="mcp",
        )
        assert missing.status == "error" and "no chunk with id" in (missing.error or "")
        assert invalid.status == "invalid_arguments" and "top_k" in (invalid.error or "")
        assert after.status == "ok"  # the server survived both
