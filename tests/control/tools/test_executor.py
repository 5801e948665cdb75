import hashlib
import threading
import time

from pydantic import BaseModel, ConfigDict, Field

from haygraph.control.tools import (
    ContractToolExecutor,
    ToolContract,
    ToolFailure,
    ToolRegistry,
    reduce_result,
    request_id_for,
)
from haygraph.control.tools.types import ToolCall


class EchoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1)
    delay: float = 0.0


class EchoOut(BaseModel):
    text: str
    request_id: str = ""


class BigOut(BaseModel):
    id: str
    status: str
    events: list[str]


def _contract(name, func, *, result_model=EchoOut, key_fields=(), **kw) -> ToolContract:
    return ToolContract(
        name=name,
        purpose="Test tool.",
        when_to_use="Tests.",
        when_not_to_use="Never in production.",
        on_failure="Report the error.",
        args_model=EchoArgs,
        result_model=result_model,
        func=func,
        key_fields=key_fields,
        **kw,
    )


def _echo(args, runtime):
    if args.delay:
        time.sleep(args.delay)
    return {"text": args.text, "request_id": runtime.request_id}


def _executor(*contracts, allow=None, **kw) -> ContractToolExecutor:
    registry = ToolRegistry(contracts)
    return ContractToolExecutor(registry, allow if allow is not None else registry.names(), **kw)


class TestContractToolExecutor:
    def test_valid_call_runs_and_gets_request_id(self):
        [result] = _executor(_contract("echo", _echo)).execute(
            [ToolCall(id="c1", name="echo", args={"text": "hi"})], thread_id="th"
        )
        expected = hashlib.sha256(b"th:c1").hexdigest()[:24]
        assert result.status == "ok" and result.attempts == 1
        assert result.content == {"text": "hi", "request_id": expected}
        assert request_id_for("th", "c1") == expected

    def test_invalid_arguments_carry_the_validation_message(self):
        executor = _executor(_contract("echo", _echo))
        missing, extra, wrong_type = executor.execute(
            [
                ToolCall(id="1", name="echo", args={}),
                ToolCall(id="2", name="echo", args={"text": "x", "admin": True}),
            ],
            thread_id="t",
        ) + executor.execute(
            [ToolCall(id="3", name="echo", args={"text": "x", "delay": "soon"})], thread_id="t"
        )
        assert missing.status == "invalid_arguments" and "text: Field required" in missing.error
        assert extra.status == "invalid_arguments" and "admin: Extra inputs are not permitted" in extra.error
        assert wrong_type.status == "invalid_arguments" and "delay:" in wrong_type.error
        assert missing.attempts == 0

    def test_unknown_and_not_allowed_tools_are_refused_without_running(self):
        ran = []
        contract = _contract("secret", lambda a: ran.append(a) or {"text": "x"})
        unknown, refused = _executor(contract, allow=[]).execute(
            [ToolCall(id="1", name="nope", args={}), ToolCall(id="2", name="secret", args={"text": "x"})],
            thread_id="t",
        )
        assert unknown.status == "unknown_tool" and "'nope'" in unknown.error
        assert refused.status == "not_allowed"
        assert ran == []

    def test_budget_exceeded_stops_cleanly(self):
        ran = []

        def func(args):
            ran.append(args.text)
            return {"text": args.text}

        results = _executor(_contract("echo", func), max_calls_per_turn=2).execute(
            [ToolCall(id=str(i), name="echo", args={"text": f"t{i}"}) for i in range(4)], thread_id="t"
        )
        assert [r.status for r in results] == ["ok", "ok", "budget_exceeded", "budget_exceeded"]
        assert ran == ["t0", "t1"]
        assert [r.call_id for r in results] == ["0", "1", "2", "3"]

    def test_timeout_returns_within_timeout_plus_margin(self):
        release = threading.Event()

        def hang(args):
            release.wait(10)
            return {"text": "late"}

        executor = _executor(_contract("hang", hang, timeout_s=0.3, max_retries=0))
        started = time.perf_counter()
        [result] = executor.execute([ToolCall(id="1", name="hang", args={"text": "x"})], thread_id="t")
        elapsed = time.perf_counter() - started
        release.set()
        assert result.status == "timeout" and result.attempts == 1
        assert "0.3 s" in result.error
        assert elapsed < 0.3 + 0.5

    def test_timeout_is_retried_once(self):
        calls = []

        def slow_then_fast(args):
            calls.append(1)
            if len(calls) == 1:
                time.sleep(1.0)
            return {"text": "ok"}

        [result] = _executor(_contract("s", slow_then_fast, timeout_s=0.2)).execute(
            [ToolCall(id="1", name="s", args={"text": "x"})], thread_id="t"
        )
        assert result.status == "ok" and result.attempts == 2

    def test_fail_once_then_succeed_is_retried(self):
        calls = []

        def flaky(args):
            calls.append(1)
            if len(calls) == 1:
                raise ConnectionError("transient")
            return {"text": "ok"}

        [result] = _executor(_contract("f", flaky)).execute(
            [ToolCall(id="1", name="f", args={"text": "x"})], thread_id="t"
        )
        assert result.status == "ok" and result.attempts == 2 and len(calls) == 2

    def test_failing_twice_gives_error_after_one_retry(self):
        calls = []

        def broken(args):
            calls.append(1)
            raise ConnectionError("down")

        [result] = _executor(_contract("b", broken)).execute(
            [ToolCall(id="1", name="b", args={"text": "x"})], thread_id="t"
        )
        assert result.status == "error" and result.attempts == 2 and len(calls) == 2
        assert "ConnectionError: down" in result.error

    def test_tool_failure_is_not_retried(self):
        calls = []

        def missing(args):
            calls.append(1)
            raise ToolFailure("order 202405129999 not found")

        [result] = _executor(_contract("m", missing)).execute(
            [ToolCall(id="1", name="m", args={"text": "x"})], thread_id="t"
        )
        assert result.status == "error" and result.error == "order 202405129999 not found"
        assert len(calls) == 1

    def test_invalid_result_is_an_error(self):
        [result] = _executor(_contract("bad", lambda a: {"wrong": 1})).execute(
            [ToolCall(id="1", name="bad", args={"text": "x"})], thread_id="t"
        )
        assert (
            result.status == "error"
            and "invalid result" in result.error
            and "text: Field required" in result.error
        )

    def test_large_result_is_reduced_to_key_fields(self):
        def big(args):
            return {"id": "A1", "status": "in_transit", "events": [f"event {i} " * 10 for i in range(200)]}

        contract = _contract("big", big, result_model=BigOut, key_fields=("id", "status"))
        [result] = _executor(contract, result_char_cap=500).execute(
            [ToolCall(id="1", name="big", args={"text": "x"})], thread_id="t"
        )
        assert result.status == "ok"
        assert result.content == {
            "id": "A1",
            "status": "in_transit",
            "truncated": True,
            "omitted": ["events"],
        }


class TestReduceResult:
    def test_small_result_unchanged(self):
        content = {"a": 1, "b": "x"}
        assert reduce_result(content, ("a",), 100) is content

    def test_key_fields_still_too_large_are_shrunk_to_fit(self):
        content = {"id": "x", "events": ["e" * 50] * 100, "other": "y" * 1000}
        reduced = reduce_result(content, ("id", "events"), 400)
        assert reduced["truncated"] is True and reduced["omitted"] == ["other"]
        assert 0 < len(reduced["events"]) < 100
        import json

        assert len(json.dumps(reduced)) <= 400
