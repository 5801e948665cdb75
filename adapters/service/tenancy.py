"""Tenant isolation: the tenant filter merged into every retrieval, and per-tenant thread namespaces.

A tenant-bound caller's filter `{"field": "meta.tenant", "operator": "==", "value": T}` is combined
with the request's own filters by AND (Haystack filter syntax), so a request can narrow what it sees
but never widen it. `ScopedRetriever` applies that merge inside the control plane's `Retriever`, so
every path that retrieves — the graph's retrieve/expand nodes and the knowledge-search tool — is
restricted, whatever filters it passes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from haystack import Document
from haystack.utils.filters import document_matches_filter

from haygraph.adapters.service.errors import BadRequestError
from haygraph.control import Evidence, Retriever

TENANT_FIELD = "meta.tenant"
THREAD_ID = re.compile(r"^[\w.@+=-]{1,128}$")
"""Thread ids a client may use: letters, digits, `_ . @ + = -`, at most 128 characters (no `:`)."""
_PROBE = Document(content="", meta={})


def tenant_filter(tenant: str) -> dict[str, Any]:
    """The filter that keeps only `tenant`'s chunks."""
    return {"field": TENANT_FIELD, "operator": "==", "value": tenant}


def check_filters(filters: Any, *, name: str = "filters") -> dict[str, Any] | None:
    """Validate request filters (Haystack syntax) with Haystack's own matcher (`BadRequestError`)."""
    if filters is None:
        return None
    if not isinstance(filters, dict) or not filters:
        raise BadRequestError(
            f"{name} must be a Haystack filter object, e.g. "
            '{"field": "meta.source_id", "operator": "==", "value": "leave-policy.md"}'
        )
    try:
        document_matches_filter(filters, _PROBE)
    except Exception as exc:  # FilterError, KeyError, TypeError on malformed filters
        raise BadRequestError(f"invalid {name}: {exc}") from exc
    return filters


def merge_filters(tenant: str | None, filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """AND the tenant's filter with `filters`; without a tenant, `filters` unchanged."""
    if tenant is None:
        return filters
    if not filters:
        return tenant_filter(tenant)
    return {"operator": "AND", "conditions": [tenant_filter(tenant), filters]}


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


class ScopedRetriever:
    """A `Retriever` that restricts every call to one tenant (or passes through without a tenant).

    `base` is called for each retrieval and returns the current retriever, so a knowledge base that
    is reloaded in the meantime is used from the next call on.
    """

    def __init__(self, base: Callable[[], Retriever], tenant: str | None) -> None:
        self.base = base
        self.tenant = tenant

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """Retrieve from the current knowledge base with the tenant filter ANDed to `filters`."""
        return self.base().retrieve(query, top_k=top_k, filters=merge_filters(self.tenant, filters))
