"""Tenancy and retrieval scope: one mechanism for every retrieval surface (SPEC §9).

A caller bound to a tenant T sees T's chunks and the chunks shared by every tenant (`meta.tenant`
``"*"``, indexed with ``--meta tenant=*``): `{"field": "meta.tenant", "operator": "in", "value": [T, "*"]}`
merged with its own filters by AND — Haystack's `FilterPolicy.MERGE` for a logical filter — so a request can
narrow what it sees but never widen it (a request filter naming another tenant matches nothing).
`ScopedRetriever` applies the merge inside the control plane's `Retriever`, so every path that goes
through it — the graph's retrieve/expand nodes, the `search_knowledge_base` tool, MCP search and
`get_chunk`, the HTTP service — is restricted, whatever filters it passes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from haystack import Document
from haystack.utils.filters import document_matches_filter

from haygraph.adapters.errors import ScopeError
from haygraph.control.evidence import Evidence, Retriever

TENANT_FIELD = "meta.tenant"
SHARED_TENANT = "*"
"""`meta.tenant` of documents every tenant may read (a handbook); no caller is bound to it."""
MAX_TENANT_CHARS = 128
_PROBE = Document(content="", meta={})


def check_tenant(tenant: Any, *, name: str = "tenant") -> str:
    """Return `tenant` if it is a usable tenant name: a non-blank string of at most 128 printable characters.

    Raises `ScopeError` naming `name` otherwise (None is not a tenant: leave the scope unbound instead).
    """
    if not isinstance(tenant, str):
        raise ScopeError(f"{name} must be a string, but got {type(tenant).__name__}")
    if not tenant.strip():
        raise ScopeError(f"{name} must not be empty")
    if len(tenant) > MAX_TENANT_CHARS:
        raise ScopeError(f"{name} must be at most {MAX_TENANT_CHARS} characters, but has {len(tenant)}")
    if any(unicodedata.category(ch)[0] == "C" for ch in tenant):
        raise ScopeError(f"{name} {tenant[:40]!r} contains control or invisible characters")
    if tenant == SHARED_TENANT:
        raise ScopeError(
            f"{name} '*' marks documents shared by every tenant; bind the caller to a tenant name instead"
        )
    return tenant


def check_filters(filters: Any, *, name: str = "filters") -> dict[str, Any] | None:
    """Validate Haystack-syntax filters with Haystack's own matcher; `ScopeError` naming `name` if invalid."""
    if filters is None:
        return None
    if not isinstance(filters, dict) or not filters:
        raise ScopeError(
            f"{name} must be a Haystack filter object, e.g. "
            '{"field": "meta.source_id", "operator": "==", "value": "leave-policy.md"}'
        )
    try:
        document_matches_filter(filters, _PROBE)
    except Exception as exc:  # FilterError, KeyError, TypeError, RecursionError on malformed filters
        raise ScopeError(f"invalid {name}: {' '.join(str(exc).split())[:200]}") from exc
    return filters


def tenant_filter(tenant: str) -> dict[str, Any]:
    """The filter that keeps the chunks `tenant` may read: its own and the shared ones (`SHARED_TENANT`).

    Every store backend runs it where the documents are: the embedded store in the process, Qdrant as
    a payload `match any`, PostgreSQL as ``meta->>'tenant' = ANY(...)``.
    """
    return {"field": TENANT_FIELD, "operator": "in", "value": [tenant, SHARED_TENANT]}


def own_filter(tenant: str) -> dict[str, Any]:
    """The filter that keeps only `tenant`'s own chunks (what it may list, re-index and remove)."""
    return {"field": TENANT_FIELD, "operator": "==", "value": tenant}


def visible_to(tenant: str | None, chunk_tenant: Any) -> bool:
    """Whether a caller bound to `tenant` (None: unbound, sees all) may read a chunk of `chunk_tenant`."""
    return tenant is None or chunk_tenant in (tenant, SHARED_TENANT)


def merge_filters(tenant: str | None, filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """AND the tenant's filter with `filters`; without a tenant, `filters` unchanged."""
    if tenant is None:
        return filters
    if not filters:
        return tenant_filter(tenant)
    return {"operator": "AND", "conditions": [tenant_filter(tenant), filters]}


@runtime_checkable
class ChunkLookup(Protocol):
    """A retriever that can also return one stored chunk by id, restricted by filters."""

    def lookup(self, chunk_id: str, *, filters: dict[str, Any] | None = None) -> Evidence | None:
        """The chunk with id `chunk_id` if it exists and matches `filters`, else None."""
        ...


class ScopedRetriever:
    """A `Retriever` restricted to one tenant (or passing through without one), for search and lookup.

    `base` is a retriever, or a function returning the current one (called on every retrieval), so a
    knowledge base that is reloaded in the meantime is used from the next call on.
    """

    def __init__(self, base: Retriever | Callable[[], Retriever], tenant: str | None = None) -> None:
        self._base = base
        self.tenant = check_tenant(tenant) if tenant is not None else None

    def current(self) -> Retriever:
        """The retriever calls go to now."""
        base = self._base
        return base if isinstance(base, Retriever) else base()

    def warm_up(self) -> None:
        """Warm the retriever it scopes (load its models), so the first question's deadline does not pay."""
        warm_up = getattr(self.current(), "warm_up", None)
        if callable(warm_up):
            warm_up()

    def scope(self, filters: dict[str, Any] | None) -> dict[str, Any] | None:
        """The filters a call with `filters` actually runs with (the tenant's ANDed in)."""
        return merge_filters(self.tenant, filters)

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        """Retrieve from the current knowledge base with the tenant filter ANDed to `filters`."""
        return self.current().retrieve(query, top_k=top_k, filters=self.scope(filters))

    def lookup(self, chunk_id: str, *, filters: dict[str, Any] | None = None) -> Evidence | None:
        """The stored chunk `chunk_id` if it is inside this scope and `filters`, else None.

        A chunk of another tenant is reported exactly like a missing one, so ids cannot be probed.
        """
        base = self.current()
        if not isinstance(base, ChunkLookup):
            return None
        return base.lookup(chunk_id, filters=self.scope(filters))
