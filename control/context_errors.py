"""Errors raised by context engineering (token counting, budget, prompt assembly, history).

All derive from `ContextError` (itself a `haygraph.control.errors.ControlError`), so a caller (the
generate node) can turn any of them into a status with one `except`. Errors that describe a bad
value also derive from `ValueError`.
"""

from __future__ import annotations

from haygraph.control.errors import ControlError


class ContextError(ControlError):
    """Base class of every context-engineering error."""


class TokenizerUnavailableError(ContextError):
    """A tokenizer could not be loaded (missing file, unknown encoding, library not installed)."""


class BudgetConfigError(ContextError, ValueError):
    """A budget configuration or allocation input is invalid (negative share, shares over 100%, ...)."""


class WindowTooSmallError(ContextError):
    """The context window cannot even hold the fixed costs (system, question, entities, reserve)."""

    def __init__(self, *, window: int, fixed_total: int, output_reserve: int) -> None:
        self.window = window
        self.fixed_total = fixed_total
        self.output_reserve = output_reserve
        super().__init__(
            f"context window of {window} tokens is smaller than the fixed costs: "
            f"{fixed_total} tokens of system prompt, question and entities plus an output reserve "
            f"of {output_reserve} tokens ({fixed_total + output_reserve} in all); use a larger window, "
            f"a shorter system prompt or a smaller output_reserve share"
        )


class BudgetExceededError(ContextError):
    """The assembled prompt measured more tokens than the window minus the output reserve."""

    def __init__(self, *, total: int, limit: int) -> None:
        self.total = total
        self.limit = limit
        super().__init__(
            f"assembled prompt has {total} tokens but the limit (window - output reserve) is {limit}"
        )


class HistoryError(ContextError, ValueError):
    """Conversation history cannot be compressed as asked (e.g. a message without an id)."""


class ReductionError(ContextError, ValueError):
    """A tool-result key-field specification is malformed."""


class PromptInputError(ContextError, ValueError):
    """An input of prompt assembly is invalid (e.g. an unknown history role)."""
