"""Model mode: routing, query rewriting and grounded generation with a LangChain chat model.

Every call uses structured output (`model.with_structured_output(Schema)`); anything that is not a
valid instance of the schema raises `ModelOutputError`. The nodes catch every failure of these
helpers and fall back to the offline rules / extractive answer, so a model never crashes a run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from control.errors import ConfigError, ModelOutputError
from control.rules import RouteDecision

logger = logging.getLogger(__name__)

SchemaT = TypeVar("SchemaT", bound=BaseModel)

ROUTER_SYSTEM = (
    "You route the user's latest message for a knowledge-base assistant. Choose exactly one route:\n"
    "- retrieve: a question that the document knowledge base can answer (policies, manuals, facts).\n"
    "- tool: a live lookup is needed. Available tool: query_order(order_id: exactly 12 digits, "
    'detail_level: "summary" | "full") for the status of one specific order. Set tool_name and '
    "tool_args; use only numbers the user actually gave, never guess one.\n"
    "- answer: greeting, thanks or small talk that needs no facts.\n"
    "- clarify: the request needs information the user did not give (e.g. an order question without "
    "a 12-digit order number); put the question to ask in `clarification`, in the user's language.\n"
    "Do not answer the question yourself."
)
REWRITE_SYSTEM = (
    "Rewrite the user's question into 1 to 3 short search queries for a document knowledge base. "
    "Resolve references using the conversation and known facts, drop greetings and filler, keep every "
    "entity exactly (numbers, ids, dates, product names). Use the language of the question. "
    "Never answer the question."
)


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


def structured_call(model: BaseChatModel, schema: type[SchemaT], messages: Sequence[BaseMessage]) -> SchemaT:
    """Invoke `model` with structured output `schema`; raise `ModelOutputError` unless it validates."""
    result: Any = model.with_structured_output(schema).invoke(list(messages))
    if isinstance(result, schema):
        return result
    if isinstance(result, dict):
        try:
            return schema.model_validate(result)
        except ValidationError as exc:
            raise ModelOutputError(f"{schema.__name__} output failed validation: {exc}") from exc
    raise ModelOutputError(f"expected {schema.__name__} from the model, got {type(result).__name__}")


def _facts(entities: dict[str, list[str]] | None) -> str:
    if not entities:
        return ""
    return "Known facts: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in entities.items() if v) + "\n"


def model_route(
    model: BaseChatModel,
    question: str,
    *,
    history: Sequence[AnyMessage] = (),
    entities: dict[str, list[str]] | None = None,
) -> RouteDecision:
    """Ask the model for a `RouteDecision`; a tool route must name a tool and clarify gets a question."""
    messages = [SystemMessage(content=ROUTER_SYSTEM), *history]
    messages.append(HumanMessage(content=f"{_facts(entities)}Message: {question}"))
    decision = structured_call(model, RouteDecision, messages)
    if decision.route == "tool" and not decision.tool_name:
        raise ModelOutputError("route 'tool' without tool_name")
    return decision


def model_rewrite(
    model: BaseChatModel,
    question: str,
    *,
    history: Sequence[AnyMessage] = (),
    entities: dict[str, list[str]] | None = None,
) -> list[str]:
    """Ask the model for 1–3 retrieval queries (blank ones dropped, duplicates removed)."""
    messages = [SystemMessage(content=REWRITE_SYSTEM), *history]
    messages.append(HumanMessage(content=f"{_facts(entities)}Question: {question}"))
    result = structured_call(model, RewrittenQueries, messages)
    queries = list(dict.fromkeys(q.strip() for q in result.queries if q.strip()))
    if not queries:
        raise ModelOutputError("rewrite returned only blank queries")
    return queries[:3]


def model_generate(model: BaseChatModel, messages: Sequence[BaseMessage]) -> GroundedAnswer:
    """Ask the model for a `GroundedAnswer` to the prepared generation messages."""
    return structured_call(model, GroundedAnswer, messages)
