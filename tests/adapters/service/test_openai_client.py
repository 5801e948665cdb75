"""The official `openai` Python client against the real server: offline and with a streaming chat model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from tests.adapters.service.chat_models import ANSWER, CitingChatModel
from tests.adapters.service.server_helpers import KEY_A, KEY_B, TENANT_SOURCES, parse_sse, running_server

pytestmark = pytest.mark.integration

QUESTION = "What is the per diem for business travel?"


def client(url: str, key: str = "unused") -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def model_server(tenant_store: Path) -> Iterator[str]:
    """A server whose chat model streams its grounded answers token by token."""
    with running_server(
        HaygraphService(ServiceSettings(store_dir=tenant_store), model=CitingChatModel())
    ) as url:
        yield url


class TestOfflineWithKeys:
    def test_completion(self, keyed_server: str) -> None:
        completion = client(keyed_server, KEY_A).chat.completions.create(
            model="haygraph", messages=[{"role": "user", "content": QUESTION}]
        )
        text = completion.choices[0].message.content or ""
        result = (completion.model_extra or {})["haygraph"]
        assert completion.model == "haygraph" and completion.choices[0].finish_reason == "stop"
        assert result["status"] == "completed" and result["evidence_ids"]
        assert all(f"[{i}]" in text for i in result["evidence_ids"])
        assert {e["source"] for e in result["evidence"]} <= TENANT_SOURCES["A"]

    def test_streaming(self, keyed_server: str) -> None:
        stream = client(keyed_server, KEY_B).chat.completions.create(
            model="haygraph", messages=[{"role": "user", "content": QUESTION}], stream=True
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert len(chunks) > 3 and chunks[-1].choices[0].finish_reason == "stop"
        result = (chunks[-1].model_extra or {})["haygraph"]
        assert (
            text.startswith(result["answer"])
            and {e["source"] for e in result["evidence"]} <= TENANT_SOURCES["B"]
        )

    def test_thread_through_the_user_field(self, keyed_server: str) -> None:
        c = client(keyed_server, KEY_A)
        for question in ("Hello!", QUESTION):
            c.chat.completions.create(
                model="haygraph", messages=[{"role": "user", "content": question}], user="oa-1"
            )
        view = httpx.get(
            f"{keyed_server}/v1/threads/oa-1", headers={"Authorization": f"Bearer {KEY_A}"}
        ).json()
        assert view["turns"] == 2 and [m["content"] for m in view["messages"] if m["role"] == "user"] == [
            "Hello!",
            QUESTION,
        ]

    def test_bad_key_and_unknown_model(self, keyed_server: str) -> None:
        with pytest.raises(openai.AuthenticationError, match="invalid API key"):
            client(keyed_server, "hg-wrong-key-0000000000").chat.completions.create(
                model="haygraph", messages=[{"role": "user", "content": "x"}]
            )
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            client(keyed_server, KEY_A).chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "x"}]
            )

    def test_models_list(self, keyed_server: str) -> None:
        assert [m.id for m in client(keyed_server, KEY_A).models.list()] == ["haygraph"]


class TestModelStreaming:
    def test_model_tokens_arrive_before_generation_ends(self, model_server: str) -> None:
        response = httpx.post(f"{model_server}/v1/ask/stream", json={"question": QUESTION}, timeout=60)
        events = parse_sse(response.text)
        kinds = [k for k, _ in events]
        tokens = [d["text"] for k, d in events if k == "token"]
        assert "".join(tokens) == ANSWER and len(tokens) > 3
        generate = next(i for i, (k, d) in enumerate(events) if k == "progress" and d["node"] == "generate")
        assert kinds.index("token") < generate < kinds.index("result")
        result = events[-1][1]
        assert (
            result["status"] == "completed"
            and result["answer"] == ANSWER
            and len(result["evidence_ids"]) == 1
        )

    def test_openai_stream_carries_model_tokens_then_citations(self, model_server: str) -> None:
        chunks = list(
            client(model_server).chat.completions.create(
                model="haygraph", messages=[{"role": "user", "content": QUESTION}], stream=True
            )
        )
        deltas = [c.choices[0].delta.content or "" for c in chunks if c.choices]
        result = (chunks[-1].model_extra or {})["haygraph"]
        assert "".join(deltas) == f"{ANSWER} [{result['evidence_ids'][0]}]"
        assert sum(1 for d in deltas if d) > 4  # token by token, not one piece

    def test_rejected_citations(self, tenant_store: Path) -> None:
        model = CitingChatModel(bad_id="invented.md::0000")
        with running_server(HaygraphService(ServiceSettings(store_dir=tenant_store), model=model)) as url:
            completion = client(url).chat.completions.create(
                model="haygraph", messages=[{"role": "user", "content": QUESTION}]
            )
            assert completion.choices[0].finish_reason == "content_filter"
            assert "withheld" in (completion.choices[0].message.content or "")
            result = (completion.model_extra or {})["haygraph"]
            assert (result["status"], result["answer"], result["evidence_ids"]) == ("rejected", None, [])
            events = parse_sse(
                httpx.post(f"{url}/v1/ask/stream", json={"question": QUESTION}, timeout=60).text
            )
            assert events[-1][0] == "result" and events[-1][1]["status"] == "rejected"
