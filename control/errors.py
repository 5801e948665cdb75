"""Exceptions of the control plane: one base class, `ControlError`, and one subclass per kind of failure.

The graph itself never raises for bad user input or failing models, retrievers and tools: those
become a `status` in the result. These exceptions are for programming and configuration errors
found before a run starts (an invalid `Context`, a model spec that cannot be resolved, a malformed
tool contract) and for the context-engineering helpers, whose errors the generate node turns into a
status with one `except ContextError`. Errors that describe a bad value also derive from `ValueError`.

```
ControlError
├── ConfigError                 a setting is invalid or needs a missing optional dependency
├── ModelOutputError            a chat model's output does not match the expected schema
├── ContextError                context engineering (tokens, budget, prompt assembly, history)
│   ├── TokenizerUnavailableError
│   ├── BudgetConfigError       (ValueError)
│   ├── WindowTooSmallError
│   ├── BudgetExceededError
│   ├── HistoryError            (ValueError)
│   ├── ReductionError          (ValueError)
│   └── PromptInputError        (ValueError)
└── ToolError                   the tool layer
    ├── ToolContractError       (ValueError)
    ├── ToolRegistrationError   (ValueError)
    └── ToolFailure             raised by a tool function for a definite failure
```
"""

from __future__ import annotations


class ControlError(Exception):
    """Base class of every error raised by the `control` package."""


class ConfigError(ControlError):
    """A setting is invalid or an optional dependency it needs is missing; the message says the fix."""


class ModelOutputError(ControlError):
    """A chat model returned output that does not match the expected structured schema.

    Raised inside model-mode helpers and caught by the nodes, which fall back to the rules or the
    extractive answer (status `degraded`); it never leaves `invoke`.
    """


# -- context engineering ------------------------------------------------------------------------------


class ContextError(ControlError):
    """Base class of every context-engineering error (token counting, budget, prompt assembly, history)."""


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


# -- tools ----------------------------------------------------------------------------------------------


class ToolError(ControlError):
    """Base class of every error raised by `haygraph.control.tools`; the executor turns them into results."""


class ToolContractError(ToolError, ValueError):
    """A tool contract is malformed (bad name, non-positive timeout, unknown key field, bad trigger, ...)."""


class ToolRegistrationError(ToolError, ValueError):
    """A contract could not be registered (e.g. a tool with the same name is already registered)."""


class ToolFailure(ToolError):
    """Raised by a tool function to report a definite failure that a retry cannot fix.

    The executor turns it into an `error` result with this message, without retrying
    (e.g. "order 202405120099 not found", "order already shipped: the address cannot change").
    Any other exception raised by a tool counts as transient and is retried up to the contract's
    `max_retries`.
    """
