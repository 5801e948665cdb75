"""Turn planning: route a question and, for a tool route, choose the calls from the routed intent's tools.

Offline (no model) the rules decide and produce the calls themselves, from the contracts' offline
triggers (`haygraph.control.planning.routing`). With a model, two steps:

1. Routing (`model_route`, structured output): the router sees a catalogue of the session's allowed
   tools grouped by intent, built from the contracts' descriptions, and names an intent.
2. Tool calling: only the allowed tools relevant to that intent are bound to the model
   (`bind_tools`); its `AIMessage.tool_calls` become `ToolCall`s. A plain-text reply instead of a
   call (e.g. asking for a missing id) turns the route into `clarify`.

Any model failure falls back to the rules. The model only ever chooses among the tools it was given
and the executor enforces the allow-list again, so text in documents or messages can never unlock a
tool the session does not allow.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool

from haygraph.control.errors import ModelOutputError
from haygraph.control.planning.model_calls import model_route
from haygraph.control.planning.model_mode import ModelMode
from haygraph.control.planning.routing import RouteDecision, route_question
from haygraph.control.prompts import (
    CATALOGUE_HEAD,
    CATALOGUE_HEAD_ANY,
    CATALOGUE_LINE,
    ROUTE_MESSAGE,
    TOOL_CALL_SYSTEM,
    facts_line,
)
from haygraph.control.tools.contract import ANY_INTENT, ToolContract
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.types import ToolCall

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TurnPlan:
    """What `analyze` does with a question: the route decision, the calls and the routed intent."""

    decision: RouteDecision
    calls: list[ToolCall] = field(default_factory=list)
    intent: str | None = None
    fallback_reason: str | None = None
    """Why the model's plan was replaced by the rules' (`TypeName: message`); None = no fallback."""
    notes: list[str] = field(default_factory=list)
    """Other deviations from the model's plan worth reporting (e.g. tool calls chosen by the rules)."""


def _describe(contract: ToolContract) -> str:
    """Return the contract's model-facing description without its on-failure rule (for the router)."""
    description = str(contract.model_schema()["function"]["description"])
    kept = [line.strip() for line in description.splitlines() if not line.startswith("On failure:")]
    return " ".join(line for line in kept if line)


def tool_catalogue(registry: ToolRegistry, allow_list: Iterable[str]) -> str:
    """Describe the allowed tools for the router, one line per tool, with the intents that offer it.

    Returns "" when the session may use no registered tool.
    """
    lines = []
    for contract in registry.allowed(allow_list):
        intents = [i for i in contract.intents if i != ANY_INTENT]
        label = ", ".join(intents) if intents and ANY_INTENT not in contract.intents else "any"
        lines.append(
            CATALOGUE_LINE.format(name=contract.name, intents=label, description=_describe(contract))
        )
    if not lines:
        return ""
    known = known_intents(registry, allow_list)
    head = CATALOGUE_HEAD.format(intents=", ".join(known)) if known else CATALOGUE_HEAD_ANY
    return head + "\n" + "\n".join(lines)


def known_intents(registry: ToolRegistry, allow_list: Iterable[str]) -> list[str]:
    """Return the explicit intents of the allowed tools, in registration order (`*` excluded)."""
    found: dict[str, None] = {}
    for contract in registry.allowed(allow_list):
        found.update((i, None) for i in contract.intents if i != ANY_INTENT)
    return list(found)


def resolve_intent(decision: RouteDecision, registry: ToolRegistry, allow_list: Sequence[str]) -> str | None:
    """Return the intent whose allowed tools serve `decision`, or None when no allowed tool does.

    The decision's own intent wins when it has allowed tools; otherwise the intent of the allowed
    tool it named. A tool outside the allow-list never yields an intent.
    """
    if decision.intent and registry.contracts_for(decision.intent, allow_list):
        return decision.intent
    contract = registry.get(decision.tool_name) if decision.tool_name else None
    if contract is not None and contract.name in allow_list:
        explicit = [i for i in contract.intents if i != ANY_INTENT]
        if explicit:
            return explicit[0]
        if ANY_INTENT in contract.intents:
            return decision.intent or ANY_INTENT
    return None


def calls_from_message(message: BaseMessage, *, id_prefix: str) -> list[ToolCall]:
    """Convert an AIMessage's `tool_calls` to `ToolCall`s with ids `{id_prefix}{model id or n}`.

    The prefix (the turn) keeps ids unique across turns even when a model reuses its own call ids.
    """
    if not isinstance(message, AIMessage):
        raise ModelOutputError(f"expected an AIMessage from the model, got {type(message).__name__}")
    calls = []
    for index, call in enumerate(message.tool_calls, start=1):
        args = call.get("args")
        calls.append(
            ToolCall(
                id=f"{id_prefix}{call.get('id') or f'call_{index}'}",
                name=call["name"],
                args=dict(args) if isinstance(args, dict) else {},
            )
        )
    return calls


def model_tool_calls(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    question: str,
    *,
    intent: str,
    history: Sequence[AnyMessage] = (),
    facts: str = "",
    id_prefix: str = "",
) -> list[ToolCall] | str:
    """Bind `tools` to the model and return its tool calls, or its plain-text reply when it made none.

    Raises `ModelOutputError` when the model returns neither (or only unparseable tool calls).
    """
    bound = model.bind_tools(list(tools))
    messages: list[BaseMessage] = [SystemMessage(content=TOOL_CALL_SYSTEM.format(intent=intent)), *history]
    messages.append(HumanMessage(content=ROUTE_MESSAGE.format(facts=facts, question=question)))
    reply = bound.invoke(messages)
    calls = calls_from_message(reply, id_prefix=id_prefix)
    if calls:
        return calls
    text = reply.text
    if text.strip():
        return text.strip()
    bad = getattr(reply, "invalid_tool_calls", None)
    raise ModelOutputError(f"no tool call and no reply from the model{' (unparseable calls)' if bad else ''}")


def _rules_plan(text: str, entities: Mapping[str, Sequence[str]], registry: ToolRegistry | None) -> TurnPlan:
    decision = route_question(text, entities, registry if registry is not None else ())
    call = decision.tool_call
    return TurnPlan(decision=decision, calls=[call] if call else [], intent=decision.intent)


def plan_turn(
    text: str,
    *,
    model: BaseChatModel | None = None,
    registry: ToolRegistry | None = None,
    allow_list: Sequence[str] = (),
    history: Sequence[AnyMessage] = (),
    entities: Mapping[str, Sequence[str]] | None = None,
    turn: int = 1,
    mode: ModelMode = ModelMode.NATIVE,
) -> TurnPlan:
    """Route `text` and choose its tool calls (see the module docstring); never raises.

    In `ModelMode.JSON` (a model without tool calling) the model routes, but a tool route's calls
    come from the offline rules (noted in `TurnPlan.notes`).

    `model` None = the offline rules over `registry`'s triggers; `allow_list` is the session's
    (only those tools are shown to a model). `turn` (the turn's number in the thread) makes ids of
    model calls that came without one unique across turns, so side-effect tools keyed on thread +
    call id never replay an earlier turn's call.
    """
    facts_entities = {kind: list(values) for kind, values in (entities or {}).items()}
    if model is None:
        return _rules_plan(text, facts_entities, registry)
    allow = list(allow_list)
    try:
        catalogue = tool_catalogue(registry, allow) if registry is not None else None
        decision = model_route(
            model, text, history=history, entities=facts_entities, catalogue=catalogue, mode=mode
        )
        if decision.route != "tool":
            return TurnPlan(decision=decision, intent=decision.intent)
        if mode is ModelMode.JSON:
            plan = _rules_plan(text, facts_entities, registry)
            return replace(plan, notes=["model has no tool calling: tool calls chosen by the rules"])
        if registry is None:  # no catalogue: the router named the tool and its arguments itself
            call = decision.tool_call
            return TurnPlan(decision=decision, calls=[call] if call else [], intent=decision.intent)
        intent = resolve_intent(decision, registry, allow)
        if intent is None:
            raise ModelOutputError(
                f"route 'tool' for intent {decision.intent!r} / tool {decision.tool_name!r}, "
                "but no allowed tool serves it"
            )
        contracts = registry.contracts_for(intent, allow)
        reply = model_tool_calls(
            model,
            [c.as_langchain_tool() for c in contracts],
            text,
            intent=intent,
            history=history,
            facts=facts_line(facts_entities),
            id_prefix=f"t{turn}_",
        )
    except Exception as exc:
        logger.warning("model routing / tool choice failed, using the rules: %s", exc)
        reason = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
        return replace(_rules_plan(text, facts_entities, registry), fallback_reason=reason)
    if isinstance(reply, str):
        clarify = decision.model_copy(update={"route": "clarify", "intent": intent, "clarification": reply})
        return TurnPlan(decision=clarify, intent=intent)
    routed = decision.model_copy(update={"intent": intent})
    return TurnPlan(decision=routed, calls=reply, intent=intent)
