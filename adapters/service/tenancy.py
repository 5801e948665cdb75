"""Tenant isolation in the service: filters checked as bad requests, per-tenant thread namespaces.

The tenant filter and its merge live in `haygraph.adapters.tenancy` (one mechanism for every retrieval
surface); they are re-exported here. A tenant-bound caller's filter is ANDed with the request's own
filters, so a request can narrow what it sees but never widen it; `ScopedRetriever` applies that merge
inside the control plane's `Retriever`, so the graph's retrieve/expand nodes and the knowledge-search
tool are restricted whatever filters they pass.
"""

from __future__ import annotations

import re
from typing import Any

from haygraph.adapters.errors import ScopeError
from haygraph.adapters.service.errors import BadRequestError
from haygraph.adapters.tenancy import TENANT_FIELD, ScopedRetriever, merge_filters, tenant_filter
from haygraph.adapters.tenancy import check_filters as check_scope_filters

__all__ = [
    "TENANT_FIELD",
    "THREAD_ID",
    "ScopedRetriever",
    "check_filters",
    "merge_filters",
    "tenant_filter",
    "thread_key",
]

THREAD_ID = re.compile(r"^[\w.@+=-]{1,128}$", re.ASCII)
"""Thread ids a client may use: ASCII letters, digits, `_ . @ + = -`, at most 128 characters (no `:`)."""


def check_filters(filters: Any, *, name: str = "filters") -> dict[str, Any] | None:
    """Validate request filters (Haystack syntax) with Haystack's own matcher (`BadRequestError`)."""
    try:
        return check_scope_filters(filters, name=name)
    except ScopeError as exc:
        raise BadRequestError(str(exc)) from exc


def thread_key(tenant: str | None, thread_id: str) -> str:
    """The checkpointer thread id of `thread_id` in `tenant`'s namespace (`BadRequestError` if invalid).

    Thread ids contain no `:`, so `<tenant>::<thread>` is unambiguous and two tenants can never name
    the same stored thread.
    """
    if not isinstance(thread_id, str) or not THREAD_ID.match(thread_id):
        raise BadRequestError(
            f"thread id {str(thread_id)[:40]!r} is invalid: use 1-128 letters, digits or _ . @ + = -"
        )
    return f"{tenant or ''}::{thread_id}"
