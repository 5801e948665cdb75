"""Model calls: routing, query rewriting and grounded generation with a LangChain chat model.

Every call asks for structured output in the session's model mode
(`haygraph.control.planning.model_mode`): ``native`` uses `model.with_structured_output(Schema)`,
``json`` a JSON prompt validated with Pydantic and repaired once. Anything that is not a valid
instance of the schema raises `ModelOutputError`. The nodes catch every failure of these
helpers and fall back to the offline rules / extractive answer, so a model never crashes a run.
The prompts are in `haygraph.control.prompts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haygraph.control.errors import ConfigError, ModelOutputError
from haygraph.control.planning.model_mode import ModelMode, json_call
from haygraph.control.planning.routing import RouteDecision
from haygraph.control.prompts import (
    NO_CATALOGUE,
    NO_TOOLS,
    REWRITE_MESSAGE,
    REWRITE_SYSTEM,
    ROUTE_MESSAGE,
    ROUTER_SYSTEM,
    facts_line,
)

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)


def router_system(catalogue: str | None) -> str:
    """Return the router instructions with `catalogue` (None = no registry configured; "" = no tools)."""
    if catalogue is None:
        return ROUTER_SYSTEM.format(tools=NO_CATALOGUE)
    return ROUTER_SYSTEM.format(tools=catalogue or NO_TOOLS)


class RewrittenQueries(BaseModel):
    """Structured output of the rewriting call."""

    model_config = ConfigDict(extra="forbid")

    queries: list[str] = Field(min_length=1, max_length=3, description="1-3 search queries, best first.")


class GroundedAnswer(BaseModel):
    """Structured output of the generation call: the answer and the evidence ids it relies on."""

    model_config = ConfigDict(extra="forbid")

    answer: str = Field(
        description="The answer, only from the evidence; empty if the evidence does not answer."
    )
    evidence_ids: list[str] = Field(description="Ids of the evidence used, copied exactly from the prompt.")


def resolve_model(spec: str) -> BaseChatModel:
    """Resolve a "provider:model" string with LangChain's `init_chat_model` (the `langchain` extra)."""
    if ":" not in spec or not all(part.strip() for part in spec.split(":", 1)):
        raise ConfigError(
            f"model must look like 'provider:model' (e.g. 'openai:gpt-4o-mini'), but got {spec!r}"
        )
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ConfigError(
            f"model {spec!r} needs the optional `langchain` package: pip install 'haygraph[langchain]'"
        ) from exc
    try:
        model = init_chat_model(spec)
    except Exception as exc:  # provider package missing, unknown provider, missing credentials, ...
        raise ConfigError(f"cannot initialise chat model {spec!r}: {exc}") from exc
    if not isinstance(model, BaseChatModel):
        raise ConfigError(f"{spec!r} did not resolve to a chat model (got {type(model).__name__})")
    return model


def structured_call(
    model: BaseChatModel,
    schema: type[SchemaT],
    messages: Sequence[BaseMessage],
    *,
    mode: ModelMode = ModelMode.NATIVE,
) -> SchemaT:
    """Invoke `model` for an instance of `schema` in `mode`; raise `ModelOutputError` unless it validates."""
    if mode is ModelMode.JSON:
        return json_call(model, schema, messages)
    result: Any = model.with_structured_output(schema).invoke(list(messages))
    if isinstance(result, schema):
        return result
    if isinstance(result, dict):
        try:
            return schema.model_validate(result)
        except ValidationError as exc:
            raise ModelOutputError(f"{schema.__name__} output failed validation: {exc}") from exc
    raise ModelOutputError(f"expected {schema.__name__} from the model, got {type(result).__name__}")


def model_route(
    model: BaseChatModel,
    question: str,
    *,
    history: Sequence[AnyMessage] = (),
    entities: dict[str, list[str]] | None = None,
    catalogue: str | None = None,
    mode: ModelMode = ModelMode.NATIVE,
) -> RouteDecision:
    """Ask the model for a `RouteDecision`, showing it the tool `catalogue` (see `router_system`).

    Without a catalogue (no registry) a tool route must name its tool; with one it must name an
    intent or a tool (the intent's tools are then offered in a separate tool-calling step).
    """
    messages = [SystemMessage(content=router_system(catalogue)), *history]
    messages.append(HumanMessage(content=ROUTE_MESSAGE.format(facts=facts_line(entities), question=question)))
    decision = structured_call(model, RouteDecision, messages, mode=mode)
    if decision.route == "tool" and catalogue is None and not decision.tool_name:
        raise ModelOutputError("route 'tool' without tool_name")
    if decision.route == "tool" and catalogue is not None and not (decision.intent or decision.tool_name):
        raise ModelOutputError("route 'tool' without intent or tool_name")
    return decision


def model_rewrite(
    model: BaseChatModel,
    question: str,
    *,
    history: Sequence[AnyMessage] = (),
    entities: dict[str, list[str]] | None = None,
    mode: ModelMode = ModelMode.NATIVE,
) -> list[str]:
    """Ask the model for 1–3 retrieval queries (blank ones dropped, duplicates removed)."""
    messages = [SystemMessage(content=REWRITE_SYSTEM), *history]
    messages.append(
        HumanMessage(content=REWRITE_MESSAGE.format(facts=facts_line(entities), question=question))
    )
    result = structured_call(model, RewrittenQueries, messages, mode=mode)
    queries = list(dict.fromkeys(q.strip() for q in result.queries if q.strip()))
    if not queries:
        raise ModelOutputError("rewrite returned only blank queries")
    return queries[:3]


def model_generate(
    model: BaseChatModel, messages: Sequence[BaseMessage], *, mode: ModelMode = ModelMode.NATIVE
) -> GroundedAnswer:
    """Ask the model for a `GroundedAnswer` to the prepared generation messages."""
    return structured_call(model, GroundedAnswer, messages, mode=mode)
