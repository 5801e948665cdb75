"""Overload and rate limits: bounded slots and queue, 429 with Retry-After at once, health always answers."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.adapters.service.admission import Admission, RateLimiter
from haygraph.adapters.service.errors import ServiceConfigError
from haygraph.adapters.service.keys import parse_api_keys
from tests.adapters.service.chat_models import SlowChatModel
from tests.adapters.service.server_helpers import KEY_A, KEY_B, running_server, wait_for
from tests.control.tool_helpers import ScriptedChatModel

QUESTION = "What is the per diem for business travel?"


class TestAdmission:
    def test_slots_then_queue_then_refusal(self) -> None:
        async def scenario() -> list[bool]:
            admission = Admission(max_in_flight=2, max_queue=1, queue_timeout_s=5.0)
            first = [await admission.acquire(), await admission.acquire()]
            queued = asyncio.create_task(admission.acquire())
            await asyncio.sleep(0.01)
            assert admission.stats.waiting == 1
            refused = await admission.acquire()  # slots and queue full: refused at once
            admission.release(0.1)
            return [*first, await queued, refused]

        assert asyncio.run(scenario()) == [True, True, True, False]

    def test_queue_wait_is_bounded(self) -> None:
        async def scenario() -> tuple[bool, float]:
            admission = Admission(max_in_flight=1, max_queue=4, queue_timeout_s=0.2)
            await admission.acquire()
            start = time.monotonic()
            return await admission.acquire(), time.monotonic() - start

        admitted, waited = asyncio.run(scenario())
        assert not admitted and 0.2 <= waited < 1.0

    def test_retry_after_grows_with_the_backlog(self) -> None:
        admission = Admission(max_in_flight=2, max_queue=8, queue_timeout_s=1.0)
        assert admission.retry_after_s() == 1
        admission.stats.in_flight, admission.stats.waiting = 2, 8
        admission._mean_s = 2.0
        assert admission.retry_after_s() == 10


class TestRateLimiter:
    def test_bucket_refills_continuously(self) -> None:
        now = [100.0]
        limiter = RateLimiter(clock=lambda: now[0])
        assert [limiter.take("k", 3) for _ in range(3)] == [0.0, 0.0, 0.0]
        assert limiter.take("k", 3) == pytest.approx(20.0)  # 3/min: one token every 20 s
        assert limiter.take("other", 3) == 0.0  # buckets are per key
        now[0] += 20.0
        assert limiter.take("k", 3) == 0.0

    def test_keys_file_rate_limit(self) -> None:
        ring = parse_api_keys({KEY_A: {"tenant": "A", "requests_per_minute": 30}, KEY_B: {"tenant": "B"}})
        a, b = ring.authenticate(f"Bearer {KEY_A}"), ring.authenticate(f"Bearer {KEY_B}")
        assert (a.requests_per_minute, b.requests_per_minute) == (30, None)
        assert a.key_id and b.key_id and a.key_id != b.key_id and KEY_A not in a.key_id
        with pytest.raises(ServiceConfigError, match="requests_per_minute"):
            parse_api_keys({KEY_A: {"tenant": "A", "requests_per_minute": 0}})


class TestSettings:
    def test_defaults_follow_the_core_count(self, tenant_store: Path) -> None:
        settings = ServiceSettings(store_dir=tenant_store)
        assert settings.in_flight_limit >= 2 and settings.queue_limit == 8 * settings.in_flight_limit

    @pytest.mark.parametrize(
        ("field", "value", "flag"),
        [
            ("max_in_flight", 0, "--max-in-flight"),
            ("max_queue", -1, "--max-queue"),
            ("body_timeout_s", 0, "--body-timeout"),
        ],
    )
    def test_bad_values_name_the_flag(self, tenant_store: Path, field: str, value: float, flag: str) -> None:
        with pytest.raises(ServiceConfigError, match=flag):
            ServiceSettings(store_dir=tenant_store, **{field: value})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def busy_server(tenant_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One slot, one queue place, a 1.5 s chat model; KEY_A limited to 3 requests a minute."""
    keys = tmp_path_factory.mktemp("rate") / "keys.yaml"
    keys.write_text(f'"{KEY_A}": {{tenant: A, requests_per_minute: 3}}\n"{KEY_B}": {{tenant: B}}\n')
    settings = ServiceSettings(
        store_dir=tenant_store, api_keys=keys, max_in_flight=1, max_queue=1, request_timeout_s=10
    )
    with running_server(HaygraphService(settings, model=SlowChatModel(delay_s=1.5))) as url:
        yield url


@pytest.mark.integration
class TestOverloadOnTheServer:
    def test_past_slot_and_queue_429_at_once_and_health_answers(self, busy_server: str) -> None:
        """The refused are answered while the slot and the queue place are still held: at once.

        Judged by order, not by a clock (a shared machine makes any bound flaky): every 429 has come
        back before the first 200, and /readyz still counts one request in flight and one waiting.
        """
        headers = {"Authorization": f"Bearer {KEY_B}"}

        def ask(n: int) -> tuple[int, float, httpx.Response]:
            time.sleep(0.15 * min(n, 2))  # the first takes the slot, the second the queue place
            response = httpx.post(
                f"{busy_server}/v1/ask", json={"question": QUESTION}, headers=headers, timeout=30
            )
            return response.status_code, time.monotonic(), response

        with ThreadPoolExecutor(5) as pool:
            futures = [pool.submit(ask, n) for n in range(5)]
            time.sleep(0.6)
            health = httpx.get(f"{busy_server}/healthz", timeout=5)
            ready = httpx.get(f"{busy_server}/readyz", timeout=5)
            results = [f.result() for f in futures]
        assert health.status_code == 200 and ready.status_code == 200
        assert ready.json()["load"]["in_flight"] == 1 and ready.json()["load"]["waiting"] == 1
        codes = sorted(code for code, _, _ in results)
        assert codes == [200, 200, 429, 429, 429]
        first_answer = min(done for code, done, _ in results if code == 200)
        for code, done, response in results:
            if code == 429:
                assert done < first_answer  # not queued behind the slot
                assert int(response.headers["Retry-After"]) >= 1
                error = response.json()["error"]
                assert error["type"] == "overloaded" and "1 requests in flight" in error["message"]

    def test_rate_limit_per_key(self, busy_server: str) -> None:
        limited = {"Authorization": f"Bearer {KEY_A}"}
        codes = [
            httpx.post(f"{busy_server}/v1/search", json={"query": "per diem"}, headers=limited).status_code
            for _ in range(4)
        ]
        assert codes == [200, 200, 200, 429]
        refused = httpx.post(f"{busy_server}/v1/search", json={"query": "per diem"}, headers=limited)
        assert refused.json()["error"]["type"] == "rate_limited"
        assert 1 <= int(refused.headers["Retry-After"]) <= 20
        other = {"Authorization": f"Bearer {KEY_B}"}
        assert (
            httpx.post(f"{busy_server}/v1/search", json={"query": "per diem"}, headers=other).status_code
            == 200
        )


class TestLoadControlMiddleware:
    """The middleware on plain ASGI callables: the send deadline and the slot given back."""

    @staticmethod
    def scope() -> dict[str, object]:
        return {"type": "http", "method": "POST", "path": "/v1/ask", "headers": []}

    def test_a_client_that_does_not_read_releases_the_slot(self) -> None:
        from haygraph.adapters.service.admission import LoadControlMiddleware

        async def app(scope: object, receive: object, send: object) -> None:
            await send({"type": "http.response.start", "status": 200, "headers": []})  # type: ignore[operator]
            await send({"type": "http.response.body", "body": b"x", "more_body": True})  # type: ignore[operator]

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def stuck_send(message: object) -> None:
            await asyncio.Event().wait()  # the client never takes the bytes

        async def scenario() -> tuple[float, int]:
            admission = Admission(max_in_flight=1, max_queue=0, queue_timeout_s=1.0)
            middleware = LoadControlMiddleware(app, admission, body_timeout_s=1.0, send_timeout_s=0.2)
            start = time.monotonic()
            await middleware(self.scope(), receive, stuck_send)
            return time.monotonic() - start, admission.stats.in_flight

        elapsed, in_flight = asyncio.run(scenario())
        assert 0.2 <= elapsed < 1.0 and in_flight == 0

    def test_a_body_that_never_ends_gets_408_without_a_slot(self) -> None:
        from haygraph.adapters.service.admission import LoadControlMiddleware

        sent: list[dict[str, object]] = []

        async def app(scope: object, receive: object, send: object) -> None:
            raise AssertionError("the app must not run")

        async def receive() -> dict[str, object]:
            await asyncio.sleep(0.05)
            return {"type": "http.request", "body": b"x", "more_body": True}  # one byte, forever

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        async def scenario() -> Admission:
            admission = Admission(max_in_flight=1, max_queue=0, queue_timeout_s=1.0)
            middleware = LoadControlMiddleware(app, admission, body_timeout_s=0.3, send_timeout_s=1.0)
            await middleware(self.scope(), receive, send)  # type: ignore[arg-type]
            return admission

        admission = asyncio.run(scenario())
        assert sent[0]["status"] == 408 and b"request_timeout" in sent[1]["body"]  # type: ignore[operator]
        assert admission.stats.in_flight == 0 and admission._slots is None  # no slot was ever taken


class TestStartUp:
    """What the first requests would load mid-serving is loaded before the port opens."""

    def test_warm_up_turns_run_and_memory_is_settled(
        self, tenant_store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        from haygraph.adapters.service import service as service_module

        warmed: list[str] = []
        monkeypatch.setattr(service_module.meaning, "warm_up", lambda: warmed.append("language"))
        model = ScriptedChatModel(script=[])  # raises if the warm-up calls it
        service = HaygraphService(ServiceSettings(store_dir=tenant_store), model=model)
        service.load()
        caplog.set_level("INFO", logger=service_module.__name__)

        async def scenario() -> int:
            await service.start()
            try:
                return gc.get_freeze_count()
            finally:
                await service.close()

        try:
            frozen = asyncio.run(scenario())
        finally:
            gc.unfreeze()
        assert warmed == ["language"]
        assert "warm-up turns answered" in caplog.text
        assert model.prompts == []  # offline warm-up: the operator's chat model is never called
        assert frozen > 0  # the loaded objects are out of the collector's sight

    def test_a_failing_warm_up_is_logged_and_the_service_starts(
        self, tenant_store: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        from haygraph.adapters.service import service as service_module

        def broken() -> None:
            raise OSError("jieba's tables are unreadable")

        monkeypatch.setattr(service_module.meaning, "warm_up", broken)
        service = HaygraphService(ServiceSettings(store_dir=tenant_store))
        service.load()
        with running_server(service) as url:
            assert httpx.get(f"{url}/readyz").status_code == 200
            answer = httpx.post(f"{url}/v1/ask", json={"question": QUESTION}, timeout=60)
            assert answer.status_code == 200
        gc.unfreeze()
        assert "warm-up turn failed: OSError: jieba's tables are unreadable" in caplog.text

    def test_a_reload_unfreezes_at_once_and_settles_after_the_delay(self) -> None:
        from haygraph.adapters.service.service import MemorySettler

        settler = MemorySettler(delay_s=0.3)
        gc.freeze()
        try:
            settler()
            assert gc.get_freeze_count() == 0  # the replaced version is collectable meanwhile
            time.sleep(0.1)
            settler()  # a second reload restarts the wait
            time.sleep(0.25)
            assert gc.get_freeze_count() == 0
            # the settle collects the whole heap first: seconds on a loaded machine late in a long run
            assert wait_for(lambda: gc.get_freeze_count() > 0, 15.0)
            settler()
            settler.cancel()
            time.sleep(0.5)
            assert gc.get_freeze_count() == 0  # cancelled: nothing froze again
        finally:
            gc.unfreeze()
