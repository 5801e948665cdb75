"""The real service on uvicorn (127.0.0.1), driven with httpx: endpoints, tenants, threads, bad input."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.adapters.service.server_helpers import KEY_A, KEY_B, TENANT_SOURCES, parse_sse

pytestmark = pytest.mark.integration

HEADERS = {"A": {"Authorization": f"Bearer {KEY_A}"}, "B": {"Authorization": f"Bearer {KEY_B}"}}
QUESTION = "What is the per diem for business travel?"


@pytest.fixture(scope="module")
def client(keyed_server: str) -> Any:
    with httpx.Client(base_url=keyed_server, timeout=60) as c:
        yield c


def error_of(response: httpx.Response) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}, body
    return body["error"]  # type: ignore[no-any-return]


class TestHealth:
    def test_liveness_and_readiness(self, client: httpx.Client) -> None:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz").json()
        assert ready["status"] == "ready" and ready["documents"] == 4 and ready["model"] == "offline"
        assert ready["threads"] == "memory" and ready["store_version"].startswith("v-")

    def test_openapi_docs(self, client: httpx.Client) -> None:
        assert client.get("/docs").status_code == 200
        paths = client.get("/openapi.json").json()["paths"]
        assert {
            "/v1/search",
            "/v1/ask",
            "/v1/ask/stream",
            "/v1/chat/completions",
            "/v1/threads/{thread_id}",
            "/v1/threads/{thread_id}/confirm",
        } <= set(paths)

    def test_confirming_a_thread_that_waits_for_nothing_is_409(self, client: httpx.Client) -> None:
        response = client.post(
            "/v1/threads/never-paused/confirm", headers=HEADERS["A"], json={"approve": True}
        )
        assert response.status_code == 409
        assert error_of(response) == {
            "type": "conflict",
            "message": "thread 'never-paused' has no tool call waiting for confirmation",
        }
        bad = client.post("/v1/threads/never-paused/confirm", headers=HEADERS["A"], json={"approve": "maybe"})
        assert bad.status_code == 422


class TestApiKeys:
    @pytest.mark.parametrize(
        ("headers", "message"),
        [
            ({}, "missing API key: send the header 'Authorization: Bearer KEY'"),
            ({"Authorization": "Bearer hg-not-a-real-key-000000"}, "invalid API key"),
        ],
    )
    def test_bad_or_missing_key_is_401(
        self, client: httpx.Client, headers: dict[str, str], message: str
    ) -> None:
        for method, path in (
            ("POST", "/v1/search"),
            ("POST", "/v1/ask"),
            ("POST", "/v1/chat/completions"),
            ("GET", "/v1/threads/x"),
        ):
            response = client.request(method, path, headers=headers, json={"query": "travel"})
            assert response.status_code == 401, path
            assert error_of(response) == {"type": "authentication_error", "message": message}
            assert response.headers["www-authenticate"] == "Bearer"


class TestTenantIsolation:
    @pytest.mark.parametrize("tenant", ["A", "B"])
    def test_search_sees_only_the_keys_tenant(self, client: httpx.Client, tenant: str) -> None:
        response = client.post(
            "/v1/search", headers=HEADERS[tenant], json={"query": "travel policy per diem", "top_k": 10}
        )
        assert response.status_code == 200
        body = response.json()
        sources = {r["source"] for r in body["results"]}
        assert sources and sources <= TENANT_SOURCES[tenant]
        assert [r["rank"] for r in body["results"]] == list(range(1, len(body["results"]) + 1))
        assert set(body) >= {"query", "reranked", "notes", "timings_ms", "results"}

    def test_request_filters_cannot_widen(self, client: httpx.Client) -> None:
        widen = {
            "operator": "OR",
            "conditions": [
                {"field": "meta.tenant", "operator": "==", "value": "B"},
                {"field": "meta.source_id", "operator": "==", "value": "globex-travel.md"},
            ],
        }
        response = client.post(
            "/v1/search", headers=HEADERS["A"], json={"query": "Globex travel policy", "filters": widen}
        )
        assert response.status_code == 200 and response.json()["results"] == []
        narrow = {"field": "meta.source_id", "operator": "==", "value": "acme-expenses.md"}
        body = client.post(
            "/v1/search", headers=HEADERS["A"], json={"query": "travel", "filters": narrow}
        ).json()
        assert {r["source"] for r in body["results"]} == {"acme-expenses.md"}

    @pytest.mark.parametrize("tenant", ["A", "B"])
    def test_ask_and_chat_see_only_the_keys_tenant(self, client: httpx.Client, tenant: str) -> None:
        result = client.post("/v1/ask", headers=HEADERS[tenant], json={"question": QUESTION}).json()
        assert result["status"] == "completed" and result["route"] == "retrieve"
        assert {e["source"] for e in result["evidence"]} <= TENANT_SOURCES[tenant] and result["evidence"]
        assert set(result["evidence_ids"]) <= {e["id"] for e in result["evidence"]}

        chat = {"model": "haygraph", "messages": [{"role": "user", "content": QUESTION}]}
        completion = client.post("/v1/chat/completions", headers=HEADERS[tenant], json=chat).json()
        assert {e["source"] for e in completion["haygraph"]["evidence"]} <= TENANT_SOURCES[tenant]
        streamed = client.post("/v1/chat/completions", headers=HEADERS[tenant], json={**chat, "stream": True})
        last = [d for _, d in parse_sse(streamed.text) if isinstance(d, dict) and "haygraph" in d][-1]
        assert {e["source"] for e in last["haygraph"]["evidence"]} <= TENANT_SOURCES[tenant]
        other = "B" if tenant == "A" else "A"
        text = completion["choices"][0]["message"]["content"] + streamed.text
        assert not any(source in text for source in TENANT_SOURCES[other])


class TestStreaming:
    def test_sse_progress_then_tokens_then_result(self, client: httpx.Client) -> None:
        response = client.post("/v1/ask/stream", headers=HEADERS["A"], json={"question": QUESTION})
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        events = parse_sse(response.text)
        kinds = [k for k, _ in events]
        assert kinds[-1] == "result" and "token" in kinds
        first_token = kinds.index("token")
        assert set(kinds[:first_token]) == {"progress"} and set(kinds[first_token:-1]) == {"token"}
        assert [d["node"] for k, d in events if k == "progress"] == [
            "analyze",
            "retrieve",
            "evaluate",
            "generate",
        ]
        result = events[-1][1]
        assert "".join(d["text"] for k, d in events if k == "token") == result["answer"]
        assert result["evidence_ids"] and all(f"[{i}]" in result["answer"] for i in result["evidence_ids"])

    def test_chat_stream_format(self, client: httpx.Client) -> None:
        chat = {"model": "haygraph", "stream": True, "messages": [{"role": "user", "content": QUESTION}]}
        events = parse_sse(client.post("/v1/chat/completions", headers=HEADERS["B"], json=chat).text)
        assert events[-1] == (None, "[DONE]")
        chunks = [d for _, d in events[:-1]]
        assert all(c["object"] == "chat.completion.chunk" and c["model"] == "haygraph" for c in chunks)
        assert len({c["id"] for c in chunks}) == 1
        assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
        assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
        result = chunks[-1]["haygraph"]
        assert text.startswith(result["answer"]) and all(f"[{i}]" in text for i in result["evidence_ids"])


class TestThreads:
    def test_threads_are_namespaced_per_tenant(self, client: httpx.Client) -> None:
        first = client.post(
            "/v1/ask", headers=HEADERS["A"], json={"question": QUESTION, "thread_id": "trip-1"}
        )
        assert first.status_code == 200
        view = client.get("/v1/threads/trip-1", headers=HEADERS["A"]).json()
        assert view["turns"] == 1 and view["messages"][0] == {"role": "user", "content": QUESTION}
        assert view["last_result"]["evidence_ids"] == first.json()["evidence_ids"]
        missing = client.get("/v1/threads/trip-1", headers=HEADERS["B"])
        assert missing.status_code == 404 and error_of(missing)["type"] == "not_found"
        # B's own "trip-1" is a different thread: its first turn, not A's second.
        client.post("/v1/ask", headers=HEADERS["B"], json={"question": "Hello!", "thread_id": "trip-1"})
        assert client.get("/v1/threads/trip-1", headers=HEADERS["B"]).json()["turns"] == 1
        header_thread = {"model": "haygraph", "messages": [{"role": "user", "content": "Thanks!"}]}
        client.post(
            "/v1/chat/completions", headers={**HEADERS["A"], "X-Thread-Id": "trip-1"}, json=header_thread
        )
        assert client.get("/v1/threads/trip-1", headers=HEADERS["A"]).json()["turns"] == 2

    def test_one_off_questions_are_not_stored(self, client: httpx.Client) -> None:
        before = client.get("/readyz").json()
        client.post("/v1/ask", headers=HEADERS["A"], json={"question": QUESTION})
        assert client.get("/readyz").json()["active_runs"] == before["active_runs"] == 0


class TestBadInput:
    def post(self, client: httpx.Client, path: str, **kw: Any) -> httpx.Response:
        return client.post(path, headers={**HEADERS["A"], "Content-Type": "application/json"}, **kw)

    def test_malformed_json_is_400(self, client: httpx.Client) -> None:
        response = self.post(client, "/v1/ask", content=b'{"question": "hi",')
        assert response.status_code == 400 and error_of(response)["type"] == "invalid_json"

    @pytest.mark.parametrize(
        ("path", "body", "message"),
        [
            ("/v1/ask", {}, "question: Field required"),
            ("/v1/ask", {"question": 5}, "question: Input should be a valid string"),
            ("/v1/ask", {"question": "hi", "thred_id": "x"}, "thred_id: Extra inputs are not permitted"),
            ("/v1/search", {"query": "x", "top_k": 0}, "top_k: Input should be greater than or equal to 1"),
            (
                "/v1/search",
                {"query": "x", "mode": "fuzzy"},
                "mode: Input should be 'hybrid', 'bm25' or 'dense'",
            ),
            (
                "/v1/chat/completions",
                {"model": "haygraph", "messages": []},
                "messages: List should have at least 1 item after validation, not 0",
            ),
        ],
    )
    def test_wrong_types_missing_and_unknown_fields_are_422(
        self, client: httpx.Client, path: str, body: dict[str, Any], message: str
    ) -> None:
        response = self.post(client, path, json=body)
        assert response.status_code == 422
        assert error_of(response) == {"type": "invalid_request", "message": message}

    def test_oversized_body_is_413(self, client: httpx.Client) -> None:
        response = self.post(client, "/v1/ask", json={"question": "x" * 70_000})
        assert response.status_code == 413
        assert error_of(response) == {
            "type": "request_too_large",
            "message": "request body is larger than the limit of 65536 bytes",
        }

    def test_oversized_chunked_body_is_413(self, client: httpx.Client) -> None:
        def chunks() -> Any:
            yield b'{"question": "'
            for _ in range(20):
                yield b"x" * 4096
            yield b'"}'

        response = self.post(client, "/v1/ask", content=chunks())
        assert response.status_code == 413 and error_of(response)["type"] == "request_too_large"

    def test_unknown_route_and_method(self, client: httpx.Client) -> None:
        response = client.get("/v1/nothing-here", headers=HEADERS["A"])
        assert (
            response.status_code == 404
            and error_of(response)["message"] == "no route GET /v1/nothing-here; see /docs"
        )
        assert client.get("/v1/ask", headers=HEADERS["A"]).status_code == 405

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ({"question": "hi", "thread_id": "bad id/1"}, "thread id"),
            (
                {
                    "question": "hi",
                    "thread_id": "v-1",
                    "filters": {"field": "meta.x", "operator": "~", "value": 1},
                },
                "invalid filters",
            ),
        ],
    )
    def test_invalid_request_writes_no_thread(
        self, client: httpx.Client, body: dict[str, Any], message: str
    ) -> None:
        response = self.post(client, "/v1/ask", json=body)
        assert response.status_code == 400 and message in error_of(response)["message"]
        assert client.get("/v1/threads/v-1", headers=HEADERS["A"]).status_code == 404

    def test_unknown_model_and_no_user_message(self, client: httpx.Client) -> None:
        response = self.post(
            client,
            "/v1/chat/completions",
            json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]},
        )
        assert response.status_code == 404 and "'gpt-4o' does not exist" in error_of(response)["message"]
        response = self.post(
            client,
            "/v1/chat/completions",
            json={"model": "haygraph", "messages": [{"role": "system", "content": "x"}]},
        )
        assert response.status_code == 400 and error_of(response)["type"] == "invalid_request"

    def test_unusable_query_is_400_and_unusable_question_a_status(self, client: httpx.Client) -> None:
        response = self.post(client, "/v1/search", json={"query": "   "})
        assert response.status_code == 400 and error_of(response)["message"] == "query is empty"
        result = self.post(client, "/v1/ask", json={"question": "   "}).json()
        assert result["status"] == "needs_clarification"
