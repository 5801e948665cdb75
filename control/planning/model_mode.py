"""Model mode: how structured output is obtained from a chat model, decided once per session.

- ``native``: the model implements LangChain's `bind_tools` or `with_structured_output` itself
  (OpenAI, Anthropic, Ollama, ...): calls use `model.with_structured_output(Schema)` and tool calling
  uses `bind_tools`.
- ``json``: the model only generates text (most local models, e.g. `haygraph.adapters.local_llm`):
  each call asks for one JSON object in the prompt (the schema is shown), the reply is parsed and
  validated with Pydantic, and a reply that fails gets exactly one repair attempt (the error is shown
  to the model); a second failure raises `ModelOutputError`, which the nodes turn into the offline
  fallback with the reason in the result's ``notes``. Tool calls are then chosen by the offline rules.

`detect_model_mode` probes the class without calling the model: LangChain's `BaseChatModel.bind_tools`
raises `NotImplementedError` and its default `with_structured_output` is built on `bind_tools`, so a
model that overrides neither has no native structured output. A model may declare its mode with a
``haygraph_model_mode`` attribute (``"json"`` or ``"native"``), which wins over the probe. Before
this, a text-only model paid three failing structured calls (and warnings) on every turn.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from haygraph.control.errors import ConfigError, ModelOutputError
from haygraph.control.prompts import JSON_INSTRUCTION, JSON_REPAIR

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)

_FENCE_RE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class ModelMode(StrEnum):
    """How structured output is obtained from a chat model (see the module docstring)."""

    NATIVE = "native"
    JSON = "json"

    @classmethod
    def from_str(cls, value: str) -> ModelMode:
        """Parse a mode name; raise `ConfigError` listing the valid names."""
        try:
            return cls(value.strip().lower())
        except ValueError as exc:
            valid = ", ".join(m.value for m in cls)
            raise ConfigError(f"model_mode must be one of auto, {valid}; got {value!r}") from exc


def detect_model_mode(model: BaseChatModel) -> ModelMode:
    """Decide how to get structured output from `model`, without calling it (see the module docstring)."""
    declared = getattr(model, "haygraph_model_mode", None)
    if isinstance(declared, str):
        return ModelMode.from_str(declared)
    cls = type(model)
    native = (
        cls.bind_tools is not BaseChatModel.bind_tools
        or cls.with_structured_output is not BaseChatModel.with_structured_output
    )
    return ModelMode.NATIVE if native else ModelMode.JSON


def resolve_model_mode(model: BaseChatModel, setting: str = "auto") -> ModelMode:
    """Return the mode for `setting` (``auto`` probes with `detect_model_mode`); logged once."""
    mode = detect_model_mode(model) if setting.strip().lower() == "auto" else ModelMode.from_str(setting)
    logger.info("model mode for %s: %s (setting %r)", type(model).__name__, mode.value, setting)
    return mode


def extract_json(text: str) -> Any:
    """Parse the JSON object in a model reply: the whole text, a fenced block, or the outermost braces.

    Raises `ModelOutputError` naming what was wrong when no JSON object can be parsed.
    """
    candidates = [text.strip()]
    candidates += [block.strip() for block in _FENCE_RE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    shown = text.strip()[:200]
    raise ModelOutputError(f"the reply holds no JSON object: {shown!r}")


def _validate(schema: type[SchemaT], text: str) -> SchemaT:
    """Parse and validate one reply; raise `ModelOutputError` with the reason."""
    data = extract_json(text)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        errors = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in exc.errors())
        raise ModelOutputError(f"{schema.__name__} JSON failed validation: {errors}") from exc


def json_call(model: BaseChatModel, schema: type[SchemaT], messages: Sequence[BaseMessage]) -> SchemaT:
    """Ask `model` for a JSON instance of `schema` in plain text, with one repair attempt.

    The schema and the instruction are appended to the system message (or sent as one when there
    is none). Raises `ModelOutputError` ("... after one repair attempt: <reason>") when the repaired
    reply fails too.
    """
    instruction = JSON_INSTRUCTION.format(
        name=schema.__name__, schema=json.dumps(schema.model_json_schema(), ensure_ascii=False)
    )
    prompt = list(messages)
    if prompt and isinstance(prompt[0], SystemMessage):
        prompt[0] = SystemMessage(content=f"{prompt[0].text}\n\n{instruction}")
    else:
        prompt.insert(0, SystemMessage(content=instruction))
    reply = model.invoke(prompt).text
    try:
        return _validate(schema, reply)
    except ModelOutputError as first:
        logger.info("model reply for %s failed (%s); one repair attempt", schema.__name__, first)
        repair = [*prompt, AIMessage(content=reply), HumanMessage(content=JSON_REPAIR.format(error=first))]
        second = model.invoke(repair).text
        try:
            return _validate(schema, second)
        except ModelOutputError as exc:
            raise ModelOutputError(f"{exc} (after one repair attempt)") from exc
