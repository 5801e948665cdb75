"""`ToolContract`: the machine-readable, human-reviewable, runtime-enforced description of a tool.

A contract names the tool, says what it is for, when to use it, when not to, what to do on failure,
and carries the Pydantic argument and result models, the timeout, the retry limit and whether the
tool has side effects. The executor enforces it; `model_schema()` is what a model is shown; its
optional `offline_trigger` tells the rule-based router (no model) when to call it.
"""

from __future__ import annotations

import copy
import functools
import inspect
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import StructuredTool
from pydantic import BaseModel, ValidationError

from haygraph.control.errors import ToolContractError
from haygraph.control.tools.triggers import OfflineTrigger

ANY_INTENT = "*"
"""A contract listing this intent is relevant to every routed intent."""

_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


@functools.lru_cache(maxsize=256)
def _cached_model_schema(contract: ToolContract) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": contract.name,
            "description": contract.description,
            "parameters": contract.parameters_schema(),
        },
    }


@dataclass(frozen=True)
class ToolRuntimeInfo:
    """What a tool may know about the call it serves.

    `request_id` is stable for one (thread, call) pair: a side-effect tool records it together with
    its effect so that a retried or replayed call never repeats the effect. `filters` are the
    session's retrieval filters (e.g. its tenant): a tool that searches must apply them, so a tool can
    never see more than the graph's own retrieval.
    """

    request_id: str
    thread_id: str
    call_id: str
    filters: dict[str, Any] | None = None


ToolFunc = Callable[..., Any]


def format_validation_error(exc: ValidationError, *, max_input_chars: int = 80) -> str:
    r"""Render a pydantic `ValidationError` as one readable line naming each failing field.

    Example: ``order_id: String should match pattern '^[0-9]{12}$' (got '123'); foo: Extra inputs are
    not permitted``.
    """
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        msg = err.get("msg", "invalid value")
        part = f"{loc}: {msg}"
        if err.get("type") not in ("missing", "extra_forbidden") and "input" in err:
            shown = repr(err["input"])
            if len(shown) > max_input_chars:
                shown = shown[: max_input_chars - 3] + "..."
            part += f" (got {shown})"
        parts.append(part)
    return "; ".join(parts) or str(exc)


def _wants_runtime(func: ToolFunc) -> bool:
    """Return True when `func` declares a second positional parameter (the `ToolRuntimeInfo`)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return len(positional) >= 2 or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)


@dataclass(frozen=True)
class ToolContract:
    """One tool: description for the model and reviewer, models and limits for the executor.

    `func` is a synchronous callable taking the validated args model instance — and a
    `ToolRuntimeInfo` as second positional argument when it declares one — and returning an
    instance of `result_model` or a dict that validates against it. It may raise
    `haygraph.control.errors.ToolFailure` for a definite failure (not retried); any other exception is
    treated as transient and retried up to `max_retries` times.

    `intents` are the routed intents the tool serves (the first one is the intent of its offline
    trigger); `key_fields` the result fields kept when a result must be shortened;
    `offline_trigger` (optional) when the offline rules call it — without one the tool is only
    reachable through a chat model.
    """

    name: str
    purpose: str
    when_to_use: str
    when_not_to_use: str
    on_failure: str
    args_model: type[BaseModel]
    result_model: type[BaseModel]
    func: ToolFunc
    timeout_s: float = 3.0
    max_retries: int = 1
    side_effects: bool = False
    intents: tuple[str, ...] = ()
    key_fields: tuple[str, ...] = ()
    offline_trigger: OfflineTrigger | None = None
    _wants_runtime: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME_RE.match(self.name):
            raise ToolContractError(
                f"tool name must match {_NAME_RE.pattern} (letters, digits, '_' or '-'), "
                f"but got {self.name!r}"
            )
        for label in ("purpose", "when_to_use", "when_not_to_use", "on_failure"):
            if not str(getattr(self, label)).strip():
                raise ToolContractError(f"tool {self.name!r}: {label} must not be empty")
        for label in ("args_model", "result_model"):
            model = getattr(self, label)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                raise ToolContractError(
                    f"tool {self.name!r}: {label} must be a pydantic BaseModel subclass, but got {model!r}"
                )
        if not callable(self.func):
            raise ToolContractError(f"tool {self.name!r}: func must be callable, but got {self.func!r}")
        if not self.timeout_s > 0:
            raise ToolContractError(f"tool {self.name!r}: timeout_s must be > 0, but got {self.timeout_s}")
        if self.max_retries < 0:
            raise ToolContractError(
                f"tool {self.name!r}: max_retries must be >= 0, but got {self.max_retries}"
            )
        unknown = [f for f in self.key_fields if f not in self.result_model.model_fields]
        if unknown:
            raise ToolContractError(
                f"tool {self.name!r}: key_fields {unknown} are not fields of "
                f"{self.result_model.__name__} (fields: {sorted(self.result_model.model_fields)})"
            )
        self._check_trigger()
        object.__setattr__(self, "intents", tuple(self.intents))
        object.__setattr__(self, "key_fields", tuple(self.key_fields))
        object.__setattr__(self, "_wants_runtime", _wants_runtime(self.func))

    def _check_trigger(self) -> None:
        trigger = self.offline_trigger
        if trigger is None:
            return
        if not isinstance(trigger, OfflineTrigger):
            raise ToolContractError(
                f"tool {self.name!r}: offline_trigger must be an OfflineTrigger, but got {trigger!r}"
            )
        fields = self.args_model.model_fields
        named = [*trigger.args, *([trigger.entity.argument] if trigger.entity is not None else [])]
        unknown = [name for name in named if name not in fields]
        if unknown:
            raise ToolContractError(
                f"tool {self.name!r}: offline_trigger names arguments {unknown} that are not fields of "
                f"{self.args_model.__name__} (fields: {sorted(fields)})"
            )

    @property
    def trigger_intent(self) -> str | None:
        """The intent of offline calls: the first explicit intent in `intents` (None without one)."""
        return next((intent for intent in self.intents if intent != ANY_INTENT), None)

    @property
    def description(self) -> str:
        """The description shown to a model: purpose plus the three usage rules."""
        return (
            f"{self.purpose.strip()}\n"
            f"When to use: {self.when_to_use.strip()}\n"
            f"When not to use: {self.when_not_to_use.strip()}\n"
            f"On failure: {self.on_failure.strip()}"
        )

    def parameters_schema(self) -> dict[str, Any]:
        """Return the JSON schema of the arguments, generated from `args_model`."""
        schema = self.args_model.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        schema.setdefault("properties", {})
        return schema

    def model_schema(self) -> dict[str, Any]:
        """Return the OpenAI-style tool schema shown to a model (accepted by `bind_tools`).

        Generated once per contract (pydantic schema generation costs ~2 ms) and copied on return.
        """
        return copy.deepcopy(_cached_model_schema(self))

    def validate_args(self, args: Mapping[str, Any]) -> BaseModel:
        """Validate raw arguments against `args_model`; raises `pydantic.ValidationError`."""
        return self.args_model.model_validate(dict(args))

    def run(self, args: BaseModel, runtime: ToolRuntimeInfo) -> Any:
        """Call `func` on validated arguments (with `runtime` if it declares it); return its raw output."""
        return self.func(args, runtime) if self._wants_runtime else self.func(args)

    def validate_result(self, raw: Any) -> BaseModel:
        """Validate a raw tool output against `result_model`; raises `pydantic.ValidationError`."""
        if isinstance(raw, self.result_model):
            return raw
        if isinstance(raw, BaseModel):
            raw = raw.model_dump()
        return self.result_model.model_validate(raw)

    def invoke(self, args: BaseModel, runtime: ToolRuntimeInfo) -> BaseModel:
        """Run the tool and validate its result (no timeout, retry or allow-list: see the executor)."""
        return self.validate_result(self.run(args, runtime))

    def as_langchain_tool(self) -> StructuredTool:
        """Return a langchain-core `StructuredTool` with the same name, description and arguments.

        Meant for `bind_tools`. Invoking it directly validates and runs the tool but bypasses the
        executor's allow-list, timeout and call budget, and each invocation gets a fresh request id;
        inside the graph, calls go through `ContractToolExecutor`.
        """

        def _run(**kwargs: Any) -> dict[str, Any]:
            args = self.validate_args(kwargs)
            call_id = uuid.uuid4().hex
            runtime = ToolRuntimeInfo(request_id=call_id[:24], thread_id="", call_id=call_id)
            return self.invoke(args, runtime).model_dump(mode="json")

        return StructuredTool.from_function(
            func=_run,
            name=self.name,
            description=self.description,
            args_schema=self.args_model,
            infer_schema=False,
        )
