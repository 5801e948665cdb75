"""Stable chunk ids (source id + content hash) and content-hash deduplication within a source.

The chunk id is the evidence id that answers cite, so it must not change between runs, machines or
Python versions: it is ``f"{source_id}::{content_hash}"`` where the hash is a truncated SHA-256 of the
normalized text (NFKC, whitespace collapsed, lowercased). A chunk whose document carries a ``tenant``
in its meta hashes the tenant with the text, so the same file indexed for two tenants gives two
chunks (same format, different ids) and neither tenant's copy replaces the other's.

Deduplication is scoped to one source of one tenant: identical text in two files, or in two
tenants, keeps both (both sources stay searchable and removable on their own); the embedding cache
still embeds that text once.
"""

from __future__ import annotations

import hashlib
import logging
import unicodedata
from dataclasses import replace
from typing import Any

from haystack import Document, component
from haystack.core.serialization import default_from_dict, default_to_dict

from haygraph.retrieval.errors import InputError

__all__ = ["ChunkIdentifier", "ContentDeduplicator", "chunk_digest", "content_hash", "normalize_for_hash"]

logger = logging.getLogger(__name__)

HASH_LENGTH = 16


def normalize_for_hash(text: str) -> str:
    r"""Normalize text for hashing: Unicode NFKC, whitespace runs -> one space, stripped, lowercased.

    >>> normalize_for_hash("  Ｈｅｌｌｏ\n\t World ")
    'hello world'
    """
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def content_hash(text: str) -> str:
    """Return the first 16 hex digits of the SHA-256 of `normalize_for_hash(text)` (UTF-8)."""
    return hashlib.sha256(normalize_for_hash(text).encode("utf-8")).hexdigest()[:HASH_LENGTH]


def chunk_digest(text: str, tenant: str | None = None) -> str:
    """The hash part of a chunk id: `content_hash(text)`, or with a tenant the SHA-256 of tenant + text."""
    if tenant is None:
        return content_hash(text)
    data = f"{tenant}\x00{normalize_for_hash(text)}".encode()
    return hashlib.sha256(data).hexdigest()[:HASH_LENGTH]


def _tenant(doc: Document) -> str | None:
    tenant = doc.meta.get("tenant")
    if tenant is not None and (not isinstance(tenant, str) or not tenant):
        raise InputError(f"document {doc.id}: meta['tenant'] must be a non-empty string, got {tenant!r}")
    return tenant


@component
class ChunkIdentifier:
    """Give every chunk the stable id ``f"{meta['source_id']}::{chunk_digest(content, meta.get('tenant'))}"``.

    Without a tenant the digest is `content_hash(content)`. Returns copies of the input documents with
    that ``id`` and with ``meta["content_hash"]`` (always the plain content hash) set. Two chunks of one
    source (and tenant) with the same normalized text get the same id; run `ContentDeduplicator` before
    writing so that only one of them is stored.
    """

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkIdentifier:
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Assign ids and content hashes.

        :param documents: Chunks with text content and ``meta["source_id"]``.
        :raises InputError: A document has no text content or no ``source_id``, or a tenant that is not
            a non-empty string.
        :returns: ``{"documents": copies with new ids}``.
        """
        identified: list[Document] = []
        for doc in documents:
            if doc.content is None:
                raise InputError(f"document {doc.id} has no text content; cannot derive a chunk id")
            source_id = doc.meta.get("source_id")
            if source_id is None or str(source_id) == "":
                raise InputError(f"document {doc.id} has no meta['source_id']; cannot derive a chunk id")
            tenant = _tenant(doc)
            digest = content_hash(doc.content)
            meta = {**doc.meta, "content_hash": digest}
            id_digest = digest if tenant is None else chunk_digest(doc.content, tenant)
            identified.append(replace(doc, id=f"{source_id}::{id_digest}", meta=meta))
        return {"documents": identified}


@component
class ContentDeduplicator:
    """Within each source of each tenant, keep the first chunk of each content hash and drop later copies.

    The key is ``(meta["tenant"], meta["source_id"], content hash)``: overlapping or repeated text inside
    one source is stored once, while identical text in two sources or two tenants keeps both (so no
    source silently disappears and tenants never share a chunk). Uses ``meta["content_hash"]`` when
    present (as set by `ChunkIdentifier`), otherwise computes it with `content_hash` and returns a copy
    carrying it. Documents without text content and without a hash are passed through untouched. The
    number of dropped documents is logged.
    """

    def to_dict(self) -> dict[str, Any]:
        """Serialize this component to a dictionary."""
        return default_to_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContentDeduplicator:
        """Deserialize the component from a dictionary."""
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Drop documents whose content hash was already seen in the same source and tenant, keeping order.

        :param documents: Documents to deduplicate; they are not modified.
        :returns: ``{"documents": the first document of each (tenant, source, content hash)}``.
        """
        seen: set[tuple[str, str, str]] = set()
        kept: list[Document] = []
        for doc in documents:
            digest = doc.meta.get("content_hash")
            if digest is None:
                if doc.content is None:
                    kept.append(doc)
                    continue
                digest = content_hash(doc.content)
                doc = replace(doc, meta={**doc.meta, "content_hash": digest})
            key = (repr(doc.meta.get("tenant")), repr(doc.meta.get("source_id")), digest)
            if key in seen:
                continue
            seen.add(key)
            kept.append(doc)
        dropped = len(documents) - len(kept)
        if dropped:
            logger.info("Dropped %d duplicate document(s) out of %d", dropped, len(documents))
        return {"documents": kept}
