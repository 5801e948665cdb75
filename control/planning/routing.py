"""Offline routing (no model): chit-chat -> answer, a tool's offline trigger -> tool / clarify, else retrieve.

Pure functions: they drive the graph when `Context.model` is None and are the fallback when a model
fails. The router knows no domain: which messages call which tool is declared by each contract's
`OfflineTrigger` (`haygraph.control.tools.triggers`), and the router walks the registry in
registration order. Routing is deliberately conservative: anything that is not clearly chit-chat or
a request a registered tool declares is treated as a knowledge question.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from haygraph.control.language import words_only
from haygraph.control.outcomes import Route
from haygraph.control.planning.chitchat import chitchat_kind
from haygraph.control.tools.contract import ToolContract
from haygraph.control.tools.triggers import OfflineTrigger
from haygraph.control.tools.types import ToolCall


class RouteDecision(BaseModel):
    """A routing decision, from the rules or (as structured output) from a chat model."""

    model_config = ConfigDict(extra="forbid")

    route: Route = Field(
        description=(
            "retrieve: a question answerable from the knowledge base; tool: needs a live lookup or "
            "action one of the tools provides; answer: greeting, thanks or chit-chat; clarify: "
            "required information (e.g. an id or number a tool needs) is missing, ask the user for it."
        )
    )
    reason: str = Field(default="", description="One short sentence explaining the choice.")
    intent: str | None = Field(
        default=None,
        description="For route=tool (or clarify about a tool request): the intent whose tools are "
        "needed, one of the intents listed in the instructions.",
    )
    tool_name: str | None = Field(default=None, description="For route=tool: the tool to call.")
    tool_args: dict[str, Any] | None = Field(default=None, description="For route=tool: its arguments.")
    clarification: str | None = Field(
        default=None, description="For route=clarify: the question to ask the user, in the user's language."
    )

    @property
    def tool_call(self) -> ToolCall | None:
        """The requested call (id "call_1"), or None when the route is not "tool"."""
        if self.route != "tool" or not self.tool_name:
            return None
        return ToolCall(id="call_1", name=self.tool_name, args=dict(self.tool_args or {}))


def route_question(
    text: str,
    entities: Mapping[str, Sequence[str]] | None = None,
    contracts: Iterable[ToolContract] = (),
) -> RouteDecision:
    """Route a cleaned question: chit-chat -> answer, a tool's trigger -> tool/clarify, the rest -> retrieve.

    `contracts` are the registered tools in registration order (pass the `ToolRegistry`); the first
    whose `offline_trigger` matches decides (rules: `haygraph.control.tools.triggers`). `entities`
    are the ones remembered from earlier turns, so "where is it?" after an order number was given
    calls the tool with that number. Tools outside the session's allow-list are matched too: the
    executor then refuses the call, and the user is told this session may not do that.
    """
    if chitchat_kind(text):
        return RouteDecision(route="answer", reason="greeting or chit-chat")
    for contract in contracts:
        if contract.offline_trigger is not None:
            decision = _match(contract, contract.offline_trigger, text, entities or {})
            if decision is not None:
                return decision
    return RouteDecision(route="retrieve", reason="knowledge question")


def _match(
    contract: ToolContract, trigger: OfflineTrigger, text: str, entities: Mapping[str, Sequence[str]]
) -> RouteDecision | None:
    entity = trigger.entity
    on_topic = trigger.keywords.found_in(text)
    if entity is not None:
        values = entity.find_all(text)
        bare = trigger.bare_entity and not words_only(entity.without_values(text))
        if values and (on_topic or bare):
            return _call(contract, trigger, values[0], f"{entity.kind} value in the message")
    specific = trigger.specific is None or trigger.specific.found_in(text)
    general = trigger.general is not None and trigger.general.found_in(text)
    if not (on_topic and specific and not general):
        return None
    if entity is None:
        return _call(contract, trigger, None, f"{contract.name} request")
    known = list(entities.get(entity.kind) or [])
    if known:
        return _call(contract, trigger, known[-1], f"{entity.kind} value remembered from earlier")
    return RouteDecision(
        route="clarify",
        intent=contract.trigger_intent,
        reason=f"{contract.name} request without a valid {entity.argument}",
        clarification=entity.clarification(text, entity.find_malformed(text)),
    )


def _call(contract: ToolContract, trigger: OfflineTrigger, value: str | None, reason: str) -> RouteDecision:
    args: dict[str, Any] = {}
    if trigger.entity is not None and value is not None:
        args[trigger.entity.argument] = value
    args.update(trigger.args)
    return RouteDecision(
        route="tool", intent=contract.trigger_intent, reason=reason, tool_name=contract.name, tool_args=args
    )
