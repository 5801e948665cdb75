"""Shared test data for the retrieval tests: a small store with hand-made 3-d embeddings."""

from pathlib import Path

from haystack import Document

from haygraph.retrieval.store import EmbeddedDocumentStore


def small_docs() -> list[Document]:
    # cosine with the query [1, 0, 0]: d1 1.0, d2 0.8, d3 0.0, d4 -1.0
    return [
        Document(
            id="d1",
            content="leave policy",
            embedding=[1.0, 0.0, 0.0],
            meta={"source_id": "leave.md", "tenant": "acme"},
        ),
        Document(
            id="d2",
            content="expense claim",
            embedding=[0.8, 0.6, 0.0],
            meta={"source_id": "expense.md", "tenant": "acme"},
        ),
        Document(
            id="d3",
            content="leave leave travel",
            embedding=[0.0, 2.0, 0.0],
            meta={"source_id": "travel.md", "tenant": "globex"},
        ),
        Document(
            id="d4",
            content="office guide",
            embedding=[-3.0, 0.0, 0.0],
            meta={"source_id": "office.md", "tenant": "globex"},
        ),
    ]


def small_store() -> EmbeddedDocumentStore:
    store = EmbeddedDocumentStore()
    store.write_documents(small_docs())
    return store


class FakeDocumentEmbedder:
    """Stands in for the sentence-transformers document embedder: a deterministic 8-d vector per text."""

    def warm_up(self) -> None:
        pass

    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        import hashlib
        from dataclasses import replace

        out = []
        for doc in documents:
            digest = hashlib.sha256((doc.content or "").encode()).digest()
            out.append(replace(doc, embedding=[b / 255 + 0.01 for b in digest[:8]]))
        return {"documents": out}


def fake_warm_up(self) -> None:
    """Replacement for `CachedDocumentEmbedder.warm_up` in unit tests: no model, no cache."""
    self._embedder = FakeDocumentEmbedder()
    self._cache = None


def write_texts(root: Path, texts: dict[str, str]) -> Path:
    """Create folder `root` holding one UTF-8 file per (name, text) of `texts`; return `root`."""
    root.mkdir()
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    return root
