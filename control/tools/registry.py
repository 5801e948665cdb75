"""`ToolRegistry`: the tools a deployment knows, and the subset a session may see and call."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from haygraph.control.errors import ToolRegistrationError
from haygraph.control.tools.contract import ANY_INTENT, ToolContract


class ToolRegistry:
    """Name -> `ToolContract`, in registration order.

    The registry knows every tool; what a session may call is decided by its allow-list
    (`allowed`, `schemas_for`), and what the model is shown is further narrowed to the tools
    relevant to the routed intent.
    """

    def __init__(self, contracts: Iterable[ToolContract] = ()) -> None:
        self._contracts: dict[str, ToolContract] = {}
        for contract in contracts:
            self.register(contract)

    def register(self, contract: ToolContract) -> ToolContract:
        """Add `contract`; raises `ToolRegistrationError` if the name is taken or it is no contract."""
        if not isinstance(contract, ToolContract):
            raise ToolRegistrationError(f"expected a ToolContract, but got {type(contract).__name__}")
        if contract.name in self._contracts:
            raise ToolRegistrationError(f"a tool named {contract.name!r} is already registered")
        self._contracts[contract.name] = contract
        return contract

    def get(self, name: str) -> ToolContract | None:
        """Return the contract called `name`, or None if there is none."""
        return self._contracts.get(name)

    def names(self) -> list[str]:
        """Return the registered tool names in registration order."""
        return list(self._contracts)

    def __contains__(self, name: object) -> bool:
        return name in self._contracts

    def __len__(self) -> int:
        return len(self._contracts)

    def __iter__(self) -> Iterator[ToolContract]:
        return iter(self._contracts.values())

    def allowed(self, allow_list: Iterable[str]) -> list[ToolContract]:
        """Return the registered contracts whose names are in `allow_list` (registration order)."""
        allow = set(allow_list)
        return [c for c in self._contracts.values() if c.name in allow]

    def contracts_for(self, intent: str, allow_list: Iterable[str]) -> list[ToolContract]:
        """Return the allowed contracts relevant to `intent` (listed in their `intents`, or `*`)."""
        return [c for c in self.allowed(allow_list) if intent in c.intents or ANY_INTENT in c.intents]

    def schemas_for(self, intent: str, allow_list: Iterable[str]) -> list[dict[str, Any]]:
        """Return the model-facing schemas of the allowed tools relevant to `intent`.

        Only these are injected into the model's context: tools of other intents, and tools outside
        the session's allow-list, are never shown.
        """
        return [c.model_schema() for c in self.contracts_for(intent, allow_list)]

    def entity_patterns(self) -> tuple[tuple[str, str], ...]:
        """Return (entity kind, pattern) of every registered offline trigger's entity, without duplicates.

        These kinds are extracted from every message and remembered across turns, like dates or ids.
        """
        found: dict[tuple[str, str], None] = {}
        for contract in self._contracts.values():
            entity = contract.offline_trigger.entity if contract.offline_trigger is not None else None
            if entity is not None:
                found[(entity.kind, entity.pattern)] = None
        return tuple(found)
