"""Token budget: split a context window into shares and pack each part's items into its share.

`allocate_budget` is a pure function over token counts (the prompt assembler measures the texts
and does the cutting). The rules, in order:

1. The output reserve (`floor(window * output_reserve)`) and the fixed costs (system prompt,
   question, entities block — whatever the caller passes in `fixed`) are charged first. If they do
   not fit in the window, `WindowTooSmallError`.
2. Each variable part (tool schemas, tool results, history, chunks) is allowed
   `floor(window * share)`, granted in `config.priority` order and capped by what is still
   available, so when fixed costs overflow the system share the last parts in the priority order
   are squeezed first.
3. Each non-chunk part keeps the longest prefix of its items (callers order items by importance)
   that fits its allowance.
4. What the system share and the non-chunk parts leave unused flows to the retrieved chunks.
   Chunks are packed in rank order; the first chunk that does not fit is dropped together with
   every lower-ranked one, so a kept chunk is never ranked below a dropped one. Only when the
   top-ranked chunk alone exceeds the whole chunk allowance is it kept, truncated to the
   allowance (`truncated_to`), provided at least `min_truncated_chunk_tokens` are available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from haygraph.control.errors import BudgetConfigError, WindowTooSmallError

PartName = Literal["tool_schemas", "tool_results", "history", "chunks"]
PARTS: tuple[PartName, ...] = get_args(PartName)
_SHARE_FIELDS = ("system", "tool_schemas", "history", "chunks", "tool_results", "output_reserve")


@dataclass(frozen=True)
class BudgetConfig:
    """A context window and how it is shared; every share is a fraction of the whole window."""

    context_window: int = 8192
    system: float = 0.10
    tool_schemas: float = 0.15
    history: float = 0.20
    chunks: float = 0.40
    tool_results: float = 0.10
    output_reserve: float = 0.05
    #: Order in which the variable parts are granted their share when space is short.
    priority: tuple[PartName, ...] = ("chunks", "tool_results", "tool_schemas", "history")
    #: Smallest allowance worth keeping a truncated top chunk for.
    min_truncated_chunk_tokens: int = 16

    def __post_init__(self) -> None:
        if isinstance(self.context_window, bool) or not isinstance(self.context_window, int):
            raise BudgetConfigError(f"context_window must be an int, but got {self.context_window!r}")
        if self.context_window <= 0:
            raise BudgetConfigError(f"context_window must be > 0, but got {self.context_window}")
        for name in _SHARE_FIELDS:
            value = getattr(self, name)
            if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise BudgetConfigError(f"share {name!r} must be between 0 and 1, but got {value!r}")
        total = sum(getattr(self, name) for name in _SHARE_FIELDS)
        if total > 1.0 + 1e-9:
            shares = ", ".join(f"{name}={getattr(self, name)}" for name in _SHARE_FIELDS)
            raise BudgetConfigError(
                f"shares must sum to at most 1.0 (100%), but sum to {total:.4f}: {shares}"
            )
        if sorted(self.priority) != sorted(PARTS):
            raise BudgetConfigError(
                f"priority must order exactly the parts {list(PARTS)}, got {self.priority}"
            )
        if self.min_truncated_chunk_tokens < 1:
            raise BudgetConfigError(
                f"min_truncated_chunk_tokens must be >= 1, but got {self.min_truncated_chunk_tokens}"
            )

    def nominal(self, share: str) -> int:
        """Return `floor(context_window * share)` for a share field name."""
        if share not in _SHARE_FIELDS:
            raise BudgetConfigError(f"unknown share {share!r}; valid: {list(_SHARE_FIELDS)}")
        return math.floor(self.context_window * getattr(self, share) + 1e-9)

    @property
    def limit(self) -> int:
        """Tokens the prompt may use: the window minus the output reserve."""
        return self.context_window - self.nominal("output_reserve")


@dataclass(frozen=True)
class PartAllocation:
    """What one variable part was allowed and what it used."""

    nominal: int
    allowed: int
    used: int
    kept: int
    dropped: int
    truncated_to: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """Return the part as a plain dict (nominal is reported as `share`)."""
        out: dict[str, Any] = {
            "share": self.nominal,
            "allowed": self.allowed,
            "used": self.used,
            "kept": self.kept,
            "dropped": self.dropped,
        }
        if self.truncated_to is not None:
            out["truncated_to"] = self.truncated_to
        return out


@dataclass(frozen=True)
class BudgetAllocation:
    """The outcome of `allocate_budget`; `to_dict()` is the `context_budget` state field."""

    window: int
    output_reserve: int
    limit: int
    fixed: dict[str, int]
    system_share: int
    parts: dict[str, PartAllocation] = field(default_factory=dict)

    @property
    def fixed_total(self) -> int:
        """Sum of the fixed costs."""
        return sum(self.fixed.values())

    @property
    def total(self) -> int:
        """Fixed costs plus every part's use: the planned prompt size."""
        return self.fixed_total + sum(part.used for part in self.parts.values())

    def to_dict(self) -> dict[str, Any]:
        """Return the allocation as plain, JSON-able data."""
        return {
            "window": self.window,
            "output_reserve": self.output_reserve,
            "limit": self.limit,
            "fixed": dict(self.fixed),
            "fixed_total": self.fixed_total,
            "system": {"share": self.system_share, "used": self.fixed_total},
            "parts": {name: part.to_dict() for name, part in self.parts.items()},
            "total": self.total,
        }


def pack_prefix(costs: Sequence[int], allowance: int) -> tuple[int, int]:
    """Return (kept, used): the longest prefix of `costs` whose sum stays within `allowance`."""
    used = 0
    for kept, cost in enumerate(costs):
        if used + cost > allowance:
            return kept, used
        used += cost
    return len(costs), used


def allocate_budget(
    config: BudgetConfig, *, fixed: Mapping[str, int], item_costs: Mapping[str, Sequence[int]]
) -> BudgetAllocation:
    """Allocate the window (see the module docstring for the rules).

    Args:
        config: Window and shares.
        fixed: Fixed costs in tokens by name (e.g. system, question, entities); all charged.
        item_costs: Token cost of each item per part name (a subset of `PARTS`), in importance
            order: tool schemas by relevance, history newest first, tool results as given,
            chunks in rank order. Missing parts have no items.

    Returns:
        The allocation: per part the nominal share, the allowance, the tokens used, how many
        items were kept (always a prefix) and dropped, and for chunks a possible truncation.

    Raises:
        BudgetConfigError: A negative cost or an unknown part name.
        WindowTooSmallError: The fixed costs and the output reserve exceed the window.

    """
    unknown = set(item_costs) - set(PARTS)
    if unknown:
        raise BudgetConfigError(f"unknown budget parts {sorted(unknown)}; valid: {list(PARTS)}")
    for name, value in [*fixed.items(), *((p, c) for p, cs in item_costs.items() for c in cs)]:
        if value < 0:
            raise BudgetConfigError(f"token costs must be >= 0, but {name!r} costs {value}")

    reserve = config.nominal("output_reserve")
    fixed_total = sum(fixed.values())
    if fixed_total + reserve > config.context_window:
        raise WindowTooSmallError(
            window=config.context_window, fixed_total=fixed_total, output_reserve=reserve
        )
    available = config.limit - fixed_total

    nominal = {part: config.nominal(part) for part in PARTS}
    allowed: dict[str, int] = {}
    remaining = available
    for part in config.priority:
        allowed[part] = min(nominal[part], remaining)
        remaining -= allowed[part]

    parts: dict[str, PartAllocation] = {}
    leftover = max(0, config.nominal("system") - fixed_total)
    used_elsewhere = 0
    for part in PARTS:
        if part == "chunks":
            continue
        costs = list(item_costs.get(part, ()))
        kept, used = pack_prefix(costs, allowed[part])
        parts[part] = PartAllocation(nominal[part], allowed[part], used, kept, len(costs) - kept)
        leftover += allowed[part] - used
        used_elsewhere += used

    chunk_costs = list(item_costs.get("chunks", ()))
    chunk_allowed = min(allowed["chunks"] + leftover, available - used_elsewhere)
    kept, used = pack_prefix(chunk_costs, chunk_allowed)
    truncated_to = None
    if kept == 0 and chunk_costs and chunk_allowed >= config.min_truncated_chunk_tokens:
        kept, used, truncated_to = 1, chunk_allowed, chunk_allowed
    parts["chunks"] = PartAllocation(
        nominal["chunks"], chunk_allowed, used, kept, len(chunk_costs) - kept, truncated_to
    )
    return BudgetAllocation(
        window=config.context_window,
        output_reserve=reserve,
        limit=config.limit,
        fixed=dict(fixed),
        system_share=config.nominal("system"),
        parts=parts,
    )
