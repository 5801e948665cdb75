"""`CatalogStore`: the process-local catalog of a store whose documents live in a database server.

The Qdrant and PostgreSQL backends keep the documents in the server and a catalog of them in the process
(an `EmbeddedDocumentStore` never written to disk): the lifecycle code of `KnowledgeBase` (incremental
indexing, removal by source, tenant-aware deduplication) and the relevance stage read it. This base
class remembers which documents were written or deleted since the last save, so each backend's `save`
pushes only those.
"""

from __future__ import annotations

from dataclasses import replace

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from haygraph.retrieval.store import EmbeddedDocumentStore


class CatalogStore(EmbeddedDocumentStore):
    """An in-process catalog that tracks the ids written and deleted since the last `save`."""

    def __init__(self) -> None:
        """An empty catalog with nothing pending."""
        super().__init__(path=None)
        self._written: set[str] = set()
        self._deleted: set[str] = set()

    def write_documents(
        self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE
    ) -> int:
        """Write to the catalog and remember the ids for the next `save`."""
        before = {d.id for d in documents if d.id in self._index}
        written = super().write_documents(documents, policy)
        if written:
            for doc in documents:
                if doc.id not in before or policy == DuplicatePolicy.OVERWRITE:
                    self._written.add(doc.id)
                    self._deleted.discard(doc.id)
        return written

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete from the catalog and remember the ids for the next `save`."""
        present = [i for i in document_ids if i in self._index]
        super().delete_documents(document_ids)
        self._deleted.update(present)
        self._written.difference_update(present)

    def clear(self) -> None:
        """Forget every document; the next `save` deletes them from the server."""
        self._deleted.update(d.id for d in self._docs)
        self._written.clear()
        self._reset()

    def pending(self) -> tuple[list[Document], list[str]]:
        """The documents to write and the ids to delete at the next `save`.

        Each document carries its normalised float32 row as `embedding` (not a list: converting a
        million rows to Python floats and back took longer than writing them).
        """
        written = []
        for doc_id in sorted(self._written):
            pos = self._index.get(doc_id)
            if pos is not None:
                written.append(replace(self._docs[pos], embedding=self._rows[pos]))  # type: ignore[arg-type]
        return written, sorted(self._deleted)

    def _saved(self) -> None:
        """Forget the pending changes (they are in the server now)."""
        self._written.clear()
        self._deleted.clear()
        self.dirty = False
