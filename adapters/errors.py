"""Errors of `haygraph.adapters` (outside the HTTP service, which has its own `service.errors`).

One base class; each subclass is also the built-in it refines (`ValueError`), so callers that catch
the built-in keep working, and the CLI reports them as one line.
"""

from __future__ import annotations


class AdapterError(Exception):
    """Base class of every error raised by `haygraph.adapters` (outside `haygraph.adapters.service`)."""


class ScopeError(AdapterError, ValueError):
    """A tenant or a filter given to a retrieval surface is invalid; the message names it and the fix."""


class UnusableDatabaseError(AdapterError, ValueError):
    """A database file the adapters keep (the example orders database) is not a usable SQLite database.

    The message names the file and what to do with it.
    """


class TracingConfigError(AdapterError, ValueError):
    """Tracing cannot start: an `OTEL_*` variable's value is unsupported, or the `otel` extra is missing.

    The message names the variable or the extra.
    """
