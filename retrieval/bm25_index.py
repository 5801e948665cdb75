"""A sparse-matrix BM25 index (bm25s) with our language-aware tokenizer.

Haystack's stock InMemoryBM25Retriever scores every document in a Python loop (about 74 ms per query
at 20k documents, measured here); bm25s precomputes a sparse term-document score matrix so a query is
a handful of sparse row sums (under 1 ms at 20k). This is why we wrap it instead of using the stock one.
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.config import BM25Config
from haygraph.retrieval.tokenize import BM25Tokenizer

logger = logging.getLogger(__name__)

_TERM_CACHE_SIZE = 100_000


class BM25Index:
    """BM25 scores for every document of a corpus, computed with one sparse lookup per query."""

    def __init__(
        self,
        tokenizer: BM25Tokenizer,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        self.tokenizer = tokenizer
        self.k1 = k1
        self.b = b
        self.method = method
        self._bm25: Any = None
        self.num_docs = 0
        self.doc_freq: dict[str, int] = {}
        self._term_sets: dict[str, frozenset[str]] = {}  # text -> its terms, for term_coverage
        self._term_max: np.ndarray | None = None  # best score of each term in any document, for score_bound

    @classmethod
    def from_config(cls, config: BM25Config) -> BM25Index:
        """An (unbuilt) index template with the tokenizer and parameters of `config`."""
        tokenizer = BM25Tokenizer(config.language, config.stemming, config.stopwords)
        return cls(tokenizer, config.k1, config.b, config.method)

    def params(self) -> dict[str, Any]:
        """Everything that determines the index content, used to decide whether a saved index fits."""
        return {"tokenizer": self.tokenizer.to_dict(), "k1": self.k1, "b": self.b, "method": self.method}

    def build(self, texts: list[str]) -> BM25Index:
        """Tokenize and index `texts` (position i = document i of the store)."""
        import bm25s

        self.num_docs = len(texts)
        if not texts:
            self._bm25 = None
            return self
        # Token ids are assigned while tokenizing, one document at a time, and bm25s is given (ids, vocab):
        # no list of token strings for the whole corpus is ever held (at 100k chunks that list and bm25s's
        # own conversion of it to ids were the write path's largest allocation).
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        counts: Counter[int] = Counter()
        for text in texts:
            ids = [vocab.setdefault(token, len(vocab)) for token in self.tokenizer(text)]
            corpus_ids.append(ids)
            counts.update(set(ids))
        terms = list(vocab)
        self.doc_freq = {terms[i]: n for i, n in counts.items()}
        if not self.doc_freq:  # no searchable term at all (only stop words, symbols or one-letter words)
            self._bm25, self._term_max = None, None
            return self
        bm25 = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        bm25.index((corpus_ids, vocab), show_progress=False)
        self._bm25 = bm25
        self._term_max = None
        return self

    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every document for `query`, or None when no query term is in the vocabulary."""
        if self._bm25 is None:
            return None
        token_ids = self._bm25.get_tokens_ids(self.tokenizer(query))
        if not token_ids:
            return None
        return np.asarray(self._bm25.get_scores_from_ids(token_ids), dtype=np.float32)

    def score_bound(self, query: str) -> float:
        """Upper bound of any document's BM25 score for `query`: the sum over its terms of their best scores.

        Dividing a score by it gives a query-normalized BM25 score in [0, 1] that does not depend on the
        other results of the list (unlike min-max), so it can feed an absolute relevance model. 0 when no
        query term is in the vocabulary.
        """
        if self._bm25 is None:
            return 0.0
        token_ids = self._bm25.get_tokens_ids(self.tokenizer(query))
        if not token_ids:
            return 0.0
        if self._term_max is None:
            data = np.asarray(self._bm25.scores["data"])
            indptr = np.asarray(self._bm25.scores["indptr"])
            starts, ends = indptr[:-1], indptr[1:]
            nonempty = ends > starts
            term_max = np.zeros(starts.shape[0], dtype=np.float64)
            if data.size:
                term_max[nonempty] = np.maximum.reduceat(data, starts[nonempty])
            self._term_max = term_max
        return float(self._term_max[np.asarray(token_ids, dtype=np.int64)].sum())

    def idf(self, term: str) -> float:
        """Lucene BM25 idf, ln(1 + (N - df + 0.5) / (df + 0.5)); a term absent from the corpus gets df = 0."""
        df = self.doc_freq.get(term, 0)
        return math.log(1 + (self.num_docs - df + 0.5) / (df + 0.5))

    def term_coverage(self, query: str, text: str) -> float:
        """Share of the query's idf mass whose terms occur in `text`, in [0, 1] (0 for a query without terms).

        An absolute, query-level measure (not relative to the result list): a chunk that contains every
        informative query term scores 1, one that lacks the rare terms scores low. Terms unknown to the
        corpus carry the highest idf, so a question about something the corpus never mentions scores low.
        """
        terms = self._terms(query)
        if not terms:
            return 0.0
        present = self._terms(text)
        total = sum(self.idf(t) for t in terms)
        return sum(self.idf(t) for t in terms & present) / total if total > 0 else 0.0

    def _terms(self, text: str) -> frozenset[str]:
        """Return the set of terms of `text`, cached.

        Retrieved chunks recur across queries; tokenizing every hit again on each query (jieba, stemming)
        cost ~100 ms per query at top_k=100 in English and ~1 s in Chinese (measured by the eval harness).
        """
        terms = self._term_sets.get(text)
        if terms is None:
            if len(self._term_sets) >= _TERM_CACHE_SIZE:
                self._term_sets.clear()
            terms = self._term_sets[text] = frozenset(self.tokenizer(text))
        return terms

    def save(self, directory: Path) -> None:
        """Write the index and its parameters into `directory` (created)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "haygraph_bm25.json").write_text(
            json.dumps(
                {"params": self.params(), "num_docs": self.num_docs, "doc_freq": self.doc_freq},
                ensure_ascii=False,
            ),
            encoding="utf-8",
        )
        if self._bm25 is not None:
            self._bm25.save(str(directory), show_progress=False)

    @classmethod
    def load(cls, directory: Path, expected_params: dict[str, Any] | None = None) -> BM25Index | None:
        """Load a saved index if it was built with `expected_params` (any, when None).

        Returns None when there is no saved index or it was built with other parameters; raises
        ValueError (or the underlying OSError/JSON error) when the saved files are unusable.
        """
        meta_file = directory / "haygraph_bm25.json"
        if not meta_file.is_file():
            return None
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or not isinstance(meta.get("params"), dict) or "doc_freq" not in meta:
            raise ValueError("not a haygraph BM25 index description")
        if expected_params is not None and meta["params"] != expected_params:
            return None
        params = meta["params"]
        k1, b = params.get("k1"), params.get("b")
        numbers = (k1, b)
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in numbers
        ):
            raise ValueError(f"k1 and b must be finite numbers, but got k1={k1!r}, b={b!r}")
        if k1 <= 0 or not 0 <= b <= 1:
            raise ValueError(f"k1 must be > 0 and b in [0, 1], but got k1={k1!r}, b={b!r}")
        index = cls(BM25Tokenizer(**params["tokenizer"]), k1, b, params["method"])
        index.num_docs = int(meta["num_docs"])
        index.doc_freq = {str(k): int(v) for k, v in (meta.get("doc_freq") or {}).items()}
        if index.num_docs and index.doc_freq:  # `build` makes no bm25s index when no term is searchable
            import bm25s

            index._bm25 = bm25s.BM25.load(str(directory), show_progress=False)
        return index
