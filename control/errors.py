"""Exceptions of the control plane: one base class, one subclass per kind of failure.

The graph itself never raises for bad user input or failing models, retrievers and tools: those
become a `status` in the result. These exceptions are for programming and configuration errors
found before a run starts (an invalid `Context`, a model spec that cannot be resolved).
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
