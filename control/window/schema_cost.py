"""Token cost of tool schemas: what injecting only the routed intent's tools saves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from haygraph.control.window.tokens import TokenCounter


def schema_tokens(schemas: Sequence[Mapping[str, Any]], counter: TokenCounter) -> int:
    """Return the tokens of `schemas`, each counted as the compact JSON the model receives."""
    return sum(counter.count_json(dict(schema)) for schema in schemas)


@dataclass(frozen=True)
class SchemaSaving:
    """Schema tokens of a selected subset against the whole registry."""

    selected_tokens: int
    registry_tokens: int

    @property
    def saved_tokens(self) -> int:
        """Tokens not sent because only the subset was injected."""
        return self.registry_tokens - self.selected_tokens

    @property
    def saved_ratio(self) -> float:
        """Share of the registry's schema tokens saved (0.0 for an empty registry)."""
        return self.saved_tokens / self.registry_tokens if self.registry_tokens else 0.0

    def to_dict(self) -> dict[str, float | int]:
        """Return the saving as plain data for reports."""
        return {
            "selected_tokens": self.selected_tokens,
            "registry_tokens": self.registry_tokens,
            "saved_tokens": self.saved_tokens,
            "saved_ratio": round(self.saved_ratio, 4),
        }


def schema_saving(
    selected: Sequence[Mapping[str, Any]], registry: Sequence[Mapping[str, Any]], counter: TokenCounter
) -> SchemaSaving:
    """Count the schema tokens of `selected` and of the whole `registry` with the same counter."""
    return SchemaSaving(schema_tokens(selected, counter), schema_tokens(registry, counter))
