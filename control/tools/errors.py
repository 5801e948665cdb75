"""Exceptions of the tool layer: one base class, translated into tool results at the executor."""

from __future__ import annotations

from haygraph.control.errors import ControlError


class ToolError(ControlError):
    """Base class of every error raised by `haygraph.control.tools` (a `ControlError`)."""


class ToolContractError(ToolError, ValueError):
    """A tool contract is malformed (bad name, non-positive timeout, unknown key field, ...)."""


class ToolRegistrationError(ToolError, ValueError):
    """A contract could not be registered (e.g. a tool with the same name is already registered)."""


class ToolFailure(ToolError):
    """Raised by a tool function to report a definite failure that a retry cannot fix.

    The executor turns it into an `error` result with this message, without retrying
    (e.g. "order 202405120099 not found", "order already shipped: the address cannot change").
    Any other exception raised by a tool counts as transient and is retried up to the contract's
    `max_retries`.
    """
