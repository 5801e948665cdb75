"""Sources in a store: which chunks belong to which source of which tenant, and which files they came from.

A source is identified by ``(tenant, source_id)`` — ``meta["tenant"]`` (None without tenancy) and
``meta["source_id"]`` of its chunks. Sources made from files also record the file's resolved path in
``meta["file_path"]``; that path is what `index` uses to keep a file's id stable and to find the
sources of a directory whose files were deleted. Pure functions over documents, tested without models.
"""

from __future__ import annotations

import json
import reprlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from haystack import Document

from haygraph.retrieval.errors import InputError, UnknownSourceError

SourceKey = tuple[str | None, str]
"""(tenant, source_id)."""

ANY_TENANT: Any = object()
"""`source_documents(ANY_TENANT)` (the default): the sources of every tenant."""

RESERVED_META = frozenset(
    {
        "source_id",
        "source",
        "file_path",
        "title",
        "content_hash",
        "heading_path",
        "heading_prefix",
        "site",
        "url",
    }
)
"""Meta keys set by indexing itself; extra meta given to `KnowledgeBase.index` may not set them."""


def source_key(doc: Document) -> SourceKey:
    """The source a stored chunk belongs to."""
    tenant = doc.meta.get("tenant")
    return (None if tenant is None else str(tenant), str(doc.meta.get("source_id", "")))


def known_sources(documents: Iterable[Document], tenant: str | None) -> dict[str, str]:
    """``{source_id: resolved file path}`` of the sources of `tenant` (``""`` for sources without a file)."""
    known: dict[str, str] = {}
    for doc in documents:
        key = source_key(doc)
        if key[0] == tenant and key[1] not in known:
            file_path = doc.meta.get("file_path")
            known[key[1]] = str(Path(file_path).resolve()) if isinstance(file_path, str) and file_path else ""
    return known


def known_hashes(documents: Iterable[Document], tenant: str | None) -> dict[str, str]:
    """``{source_id: meta["source_hash"]}`` of the file sources of `tenant` that carry one."""
    known: dict[str, str] = {}
    for doc in documents:
        key = source_key(doc)
        digest = doc.meta.get("source_hash")
        if key[0] == tenant and key[1] not in known and isinstance(digest, str):
            known[key[1]] = digest
    return known


def sources_under(
    documents: Iterable[Document], directories: Sequence[Path], tenant: str | None
) -> set[SourceKey]:
    """Sources of `tenant` whose file lies inside one of `directories` (resolved)."""
    roots = [d.resolve() for d in directories]
    found: set[SourceKey] = set()
    checked: set[SourceKey] = set()  # one file per source: resolve each path once
    for doc in documents:
        key = source_key(doc)
        file_path = doc.meta.get("file_path")
        if key[0] != tenant or key in checked or not isinstance(file_path, str) or not file_path:
            continue
        checked.add(key)
        resolved = Path(file_path).resolve()
        if any(resolved.is_relative_to(root) for root in roots):
            found.add(key)
    return found


def match_sources(
    documents: Sequence[Document], names: Sequence[str], tenant: str | None, store: str
) -> set[SourceKey]:
    """The sources `names` refer to: a source id, or the path of an indexed file.

    With `tenant` None a name may match in any tenant, but only in one: a name found in several tenants
    raises `InputError` asking for the tenant. Unknown names raise `UnknownSourceError` (nothing is
    matched then).
    """
    by_id: dict[str, set[SourceKey]] = {}
    by_path: dict[str, set[SourceKey]] = {}
    for doc in documents:
        key = source_key(doc)
        if tenant is not None and key[0] != tenant:
            continue
        by_id.setdefault(key[1], set()).add(key)
        file_path = doc.meta.get("file_path")
        if isinstance(file_path, str) and file_path:
            by_path.setdefault(str(Path(file_path).resolve()), set()).add(key)
    matched: set[SourceKey] = set()
    unknown: list[str] = []
    for name in names:
        keys = by_id.get(name) or by_path.get(str(Path(name).expanduser().resolve()))
        if not keys:
            unknown.append(name)
            continue
        tenants = sorted({"no tenant" if k[0] is None else k[0] for k in keys})
        if len(keys) > 1:
            raise InputError(
                f"source {name!r} exists for several tenants ({', '.join(tenants)}); choose one with "
                "tenant=... (CLI: --tenant)"
            )
        matched |= keys
    if unknown:
        where = f" for tenant {tenant!r}" if tenant is not None else ""
        raise UnknownSourceError(
            f"not in store {store}{where}: {', '.join(repr(n) for n in unknown)} (give source ids as search "
            "results show them, e.g. 'sub/travel.md', or the path of an indexed file); nothing was removed"
        )
    return matched


def check_extra_meta(meta: Any) -> dict[str, Any]:
    """Check extra meta for `index` (``--meta KEY=VALUE``): JSON-able dict, no reserved keys, str tenant."""
    if meta is None:
        return {}
    if not isinstance(meta, dict) or not all(isinstance(k, str) and k for k in meta):
        raise InputError(f"meta must be a dict with non-empty string keys, but got {reprlib.repr(meta)}")
    reserved = sorted(RESERVED_META & set(meta))
    if reserved:
        raise InputError(f"meta may not set {', '.join(reserved)}: indexing sets these itself")
    tenant = meta.get("tenant")
    if tenant is not None and (not isinstance(tenant, str) or not tenant.strip()):
        raise InputError(f"meta['tenant'] must be a non-empty string, but got {reprlib.repr(tenant)}")
    for key, value in meta.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InputError(f"meta[{key!r}] cannot be saved as JSON ({exc})") from exc
    return dict(meta)
