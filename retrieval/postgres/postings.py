"""BM25 of a PostgreSQL store: postings written with each indexing job, scored in the serving process.

Why not bm25s here (the embedded store's index): bm25s precomputes ``idf × tf-part`` for every posting,
and both factors depend on the whole corpus (N, document frequencies, the average length). Every upload
changes them, so an index built that way has to be rebuilt whole on every store version — minutes at a
million chunks, in every serving process — and it keeps its vocabulary as a Python dict in memory. Here:

- **Writing.** The job's writer tokenizes the chunks it writes (`BM25Tokenizer`: English stemming and
  stop words, jieba for Chinese) and stores their postings — per term, the chunks' document numbers and
  term frequencies — with each chunk's length and tenant as an immutable **segment** (one row of the
  ``<table>__bm25`` table, up to `SEGMENT_DOCS` chunks), in the job's transaction. A deleted or replaced
  chunk leaves a **tombstone** (its document number). Small segments are merged by later writers.
- **Reading.** A serving process copies each segment once into a local cache file
  (`segment_cache_dir`), keeps the small parts in memory (term hashes and offsets, document numbers,
  lengths, tenants: about 30 bytes per chunk) and reads a query term's postings from the file
  (``pread``: the OS page cache holds them, shared by every process on the host, not the process).
- **Scoring** uses bm25s's own formulas (`bm25s.scoring`) with N, the document frequencies and the
  average length of the live chunks of the loaded version, so a chunk's score equals what bm25s gives
  over the same chunks; a query's term order and repeated terms are summed as bm25s sums them.

Terms are kept as 64-bit hashes (BLAKE2b): two distinct terms of one segment sharing a hash is refused
when the segment is built (at a million distinct terms the chance is about 3·10⁻⁸).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import threading
import weakref
from array import array
from collections import Counter, OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.errors import CorruptStoreError, StoreError
from haygraph.retrieval.tokenize import BM25Tokenizer

logger = logging.getLogger(__name__)

SEGMENT_DOCS = 50_000
"""Chunks per segment written by one job (a larger job writes several)."""
MERGE_AT = 10
"""Segments smaller than `SEGMENT_DOCS` merged into one once there are this many."""

MAGIC = b"HGBM25\x00\x01"
POSTING = np.dtype([("doc", "<u4"), ("tf", "<u2")])
"""One posting: the chunk's position in its segment and the term's frequency in it (capped at 65,535)."""
_MAX_TF = 65_535
_SCORE_CACHE = 4
_TERM_CACHE = 100_000


def term_hash(term: str) -> int:
    """The 64-bit key of a term (BLAKE2b of its UTF-8 bytes): the same in every process and version."""
    return int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=8).digest(), "little")


# -- writing -----------------------------------------------------------------------------------------
class SegmentBuilder:
    """Collects the postings of the chunks one job writes; `build` serializes them as a segment."""

    def __init__(self, tokenizer: BM25Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._vocab: dict[str, int] = {}
        self._term = array("I")
        self._doc = array("I")
        self._tf = array("H")
        self._docnos = array("q")
        self._lengths = array("I")
        self._tenants: dict[str | None, int] = {}
        self._tenant = array("I")

    def __len__(self) -> int:
        return len(self._docnos)

    def add(self, docno: int, text: str, tenant: str | None) -> None:
        """Tokenize one chunk (document number `docno`, larger than every one added before)."""
        if self._docnos and docno <= self._docnos[-1]:
            raise ValueError(f"document numbers must increase, but got {docno} after {self._docnos[-1]}")
        position = len(self._docnos)
        tokens = self.tokenizer(text)
        vocab = self._vocab
        counts = Counter(vocab.setdefault(token, len(vocab)) for token in tokens)
        for term, tf in counts.items():
            self._term.append(term)
            self._doc.append(position)
            self._tf.append(min(tf, _MAX_TF))
        self._docnos.append(docno)
        self._lengths.append(len(tokens))
        self._tenant.append(self._tenants.setdefault(tenant, len(self._tenants)))

    def build(self) -> bytes:
        """The segment (`MAGIC`, a JSON header, then the arrays), postings sorted by term hash and chunk."""
        hashes = np.fromiter((term_hash(t) for t in self._vocab), dtype=np.uint64, count=len(self._vocab))
        order = np.argsort(hashes, kind="stable")
        sorted_hashes = hashes[order]
        if sorted_hashes.size > 1 and bool(np.any(sorted_hashes[1:] == sorted_hashes[:-1])):
            raise StoreError("two BM25 terms of one segment share a 64-bit hash; re-index with other text")
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        term = rank[np.frombuffer(self._term, dtype=np.uint32)] if len(self._term) else np.empty(0, np.int64)
        doc = np.frombuffer(self._doc, dtype=np.uint32)
        perm = np.lexsort((doc, term))
        postings = np.empty(len(perm), dtype=POSTING)
        postings["doc"] = doc[perm]
        postings["tf"] = np.frombuffer(self._tf, dtype=np.uint16)[perm]
        indptr = np.zeros(len(order) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term, minlength=len(order)), out=indptr[1:])
        tenants: list[str | None] = [None] * len(self._tenants)
        for name, code in self._tenants.items():
            tenants[code] = name
        arrays: dict[str, np.ndarray] = {
            "terms": sorted_hashes,
            "indptr": indptr,
            "docnos": np.frombuffer(self._docnos, dtype=np.int64),
            "lengths": np.frombuffer(self._lengths, dtype=np.uint32),
            "tenant": np.frombuffer(self._tenant, dtype=np.uint32),
            "postings": postings,
        }
        return pack(arrays, {"tokenizer": self.tokenizer.to_dict(), "tenants": tenants})


def pack(arrays: dict[str, np.ndarray], header: dict[str, Any]) -> bytes:
    """Serialize `arrays` (little-endian, each at an 8-byte aligned offset) after a JSON `header`."""
    layout: dict[str, list[Any]] = {}
    offset = 0
    for name, values in arrays.items():
        layout[name] = [offset, int(values.shape[0]), values.dtype.descr]
        offset += _aligned(values.nbytes)
    meta = json.dumps({**header, "arrays": layout}, ensure_ascii=False).encode("utf-8")
    start = _aligned(len(MAGIC) + 4 + len(meta))
    out = bytearray(start + offset)
    out[: len(MAGIC)] = MAGIC
    out[len(MAGIC) : len(MAGIC) + 4] = len(meta).to_bytes(4, "little")
    out[len(MAGIC) + 4 : len(MAGIC) + 4 + len(meta)] = meta
    for name, values in arrays.items():
        begin = start + layout[name][0]
        out[begin : begin + values.nbytes] = np.ascontiguousarray(values).tobytes()
    return bytes(out)


def _aligned(n: int) -> int:
    return (n + 7) // 8 * 8


def merge(blobs: Sequence[bytes], dead: Sequence[np.ndarray]) -> tuple[bytes, int]:
    """One segment holding the live chunks of `blobs` (`dead[i]`: dead document numbers of blob i).

    Postings are carried over, nothing is tokenized again. Returns the segment and its chunk count.
    """
    parts = [_Parsed(blob) for blob in blobs]
    tokenizer = parts[0].header["tokenizer"] if parts else {}
    tenants: dict[Any, int] = {}
    docnos, lengths, tenant_codes, rows = [], [], [], []
    base = 0
    for part, gone in zip(parts, dead, strict=True):
        if part.header["tokenizer"] != tokenizer:
            raise StoreError("segments built with different BM25 tokenizer settings cannot be merged")
        keep = ~np.isin(part.arrays["docnos"], gone)
        new_pos = np.full(keep.shape[0], -1, dtype=np.int64)
        new_pos[keep] = base + np.arange(int(keep.sum()))
        base += int(keep.sum())
        docnos.append(part.arrays["docnos"][keep])
        lengths.append(part.arrays["lengths"][keep])
        remap = np.array(
            [tenants.setdefault(name, len(tenants)) for name in part.header["tenants"]], np.uint32
        )
        tenant_codes.append(remap[part.arrays["tenant"][keep]] if keep.any() else np.empty(0, np.uint32))
        postings = part.arrays["postings"]
        counts = np.diff(part.arrays["indptr"])
        terms = np.repeat(part.arrays["terms"], counts)
        alive = keep[postings["doc"]] if postings.size else np.empty(0, bool)
        rows.append((terms[alive], new_pos[postings["doc"][alive]], postings["tf"][alive]))
    all_docnos = np.concatenate(docnos) if docnos else np.empty(0, np.int64)
    order = np.argsort(all_docnos, kind="stable")  # segments hold increasing document numbers
    position = np.empty(order.shape[0], dtype=np.int64)
    position[order] = np.arange(order.shape[0])
    terms = np.concatenate([r[0] for r in rows]) if rows else np.empty(0, np.uint64)
    docs = position[np.concatenate([r[1] for r in rows])] if rows else np.empty(0, np.int64)
    tfs = np.concatenate([r[2] for r in rows]) if rows else np.empty(0, np.uint16)
    perm = np.lexsort((docs, terms))
    terms, docs, tfs = terms[perm], docs[perm], tfs[perm]
    unique, counts = np.unique(terms, return_counts=True)
    indptr = np.zeros(unique.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    postings = np.empty(docs.shape[0], dtype=POSTING)
    postings["doc"], postings["tf"] = docs, tfs
    names: list[Any] = [None] * len(tenants)
    for name, code in tenants.items():
        names[code] = name
    arrays = {
        "terms": unique.astype(np.uint64),
        "indptr": indptr,
        "docnos": all_docnos[order],
        "lengths": np.concatenate(lengths)[order] if lengths else np.empty(0, np.uint32),
        "tenant": np.concatenate(tenant_codes)[order] if tenant_codes else np.empty(0, np.uint32),
        "postings": postings,
    }
    return pack(arrays, {"tokenizer": tokenizer, "tenants": names}), int(order.shape[0])


def segment_docnos(blob: bytes) -> np.ndarray:
    """The document numbers of the chunks of a serialized segment."""
    return _Parsed(blob).arrays["docnos"]


class _Parsed:
    """A serialized segment held in memory (the writer's merges)."""

    def __init__(self, blob: bytes) -> None:
        self.header, start = read_header(blob, len(blob))
        self.arrays = {
            name: np.frombuffer(blob, dtype=_dtype(descr), count=count, offset=start + offset)
            for name, (offset, count, descr) in self.header["arrays"].items()
        }


def read_header(head: bytes, size: int) -> tuple[dict[str, Any], int]:
    """(the header, the offset of the first array) of a segment whose first bytes are `head`."""
    if len(head) < len(MAGIC) + 4 or head[: len(MAGIC)] != MAGIC:
        raise CorruptStoreError("not a haygraph BM25 segment (wrong magic bytes)")
    length = int.from_bytes(head[len(MAGIC) : len(MAGIC) + 4], "little")
    if len(MAGIC) + 4 + length > len(head):
        return {}, len(MAGIC) + 4 + length  # the caller reads more
    header = json.loads(head[len(MAGIC) + 4 : len(MAGIC) + 4 + length].decode("utf-8"))
    start = _aligned(len(MAGIC) + 4 + length)
    for offset, count, descr in header["arrays"].values():
        if start + offset + count * _dtype(descr).itemsize > size:
            raise CorruptStoreError("a BM25 segment is shorter than its header says")
    return header, start


def _dtype(descr: Any) -> np.dtype:
    return (
        np.dtype([tuple(field) for field in descr])
        if len(descr) > 1 or descr[0][0]
        else np.dtype(descr[0][1])
    )


# -- reading -----------------------------------------------------------------------------------------
class Segment:
    """One segment's local cache file: the small arrays in memory, the postings read from the file."""

    def __init__(self, seg_id: int, path: Path) -> None:
        self.id = seg_id
        self.path = path
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        size = os.fstat(self._fd).st_size
        header, start = read_header(os.pread(self._fd, 65536, 0), size)
        if not header:
            header, start = read_header(os.pread(self._fd, start, 0), size)
        self.header = header
        self.tokenizer: dict[str, Any] = header["tokenizer"]
        self.tenants: list[str | None] = header["tenants"]
        arrays = header["arrays"]

        def load(name: str) -> np.ndarray:
            offset, count, descr = arrays[name]
            dtype = _dtype(descr)
            data = os.pread(self._fd, count * dtype.itemsize, start + offset)
            return np.frombuffer(data, dtype=dtype, count=count)

        self.terms = load("terms")
        self.indptr = load("indptr")
        self.docnos = load("docnos")
        self.lengths = load("lengths")
        self.tenant = load("tenant")
        self._postings_at = start + arrays["postings"][0]
        self.size = int(self.docnos.shape[0])

    def postings(self, key: int) -> np.ndarray | None:
        """The postings (`POSTING` records) of the term with hash `key`, or None."""
        i = int(np.searchsorted(self.terms, np.uint64(key)))
        if i >= self.terms.shape[0] or int(self.terms[i]) != key:
            return None
        begin, end = int(self.indptr[i]), int(self.indptr[i + 1])
        data = os.pread(
            self._fd, (end - begin) * POSTING.itemsize, self._postings_at + begin * POSTING.itemsize
        )
        return np.frombuffer(data, dtype=POSTING)


_OPEN: dict[tuple[str, int], Segment] = {}
_OPEN_LOCK = threading.Lock()


def open_segment(store_id: str, seg_id: int, path: Path) -> Segment:
    """The process's one `Segment` object for a cached file (segments never change once written)."""
    key = (store_id, seg_id)
    with _OPEN_LOCK:
        seg = _OPEN.get(key)
        if seg is None:
            seg = _OPEN[key] = Segment(seg_id, path)
        return seg


def is_open(store_id: str, seg_id: int) -> bool:
    """Whether this process already opened (and checked) that segment's cache file."""
    with _OPEN_LOCK:
        return (store_id, seg_id) in _OPEN


def forget_segments(store_id: str, keep: Iterable[int]) -> None:
    """Drop the process's handles on segments of `store_id` not in `keep` (merged away)."""
    kept = set(keep)
    with _OPEN_LOCK:
        for key in [k for k in _OPEN if k[0] == store_id and k[1] not in kept]:
            del _OPEN[key]


@dataclass
class _QueryTerms:
    """What one query needs from the postings: per term, the live global positions and their scores."""

    scores: np.ndarray | None
    bound: float
    df: dict[str, int]


class SegmentIndex:
    """BM25 over the live chunks of a set of segments (one store version), with bm25s's formulas.

    Positions are global: segment i's chunks follow segment i-1's. Implements what the query pipeline
    asks of a BM25 index (`scores`, `score_bound`, `term_coverage`, `idf`), plus `position_of` /
    `docnos_at` to map between positions and the table's document numbers, and `tenant_mask`.
    """

    def __init__(
        self,
        segments: list[Segment],
        dead: np.ndarray,
        tokenizer: BM25Tokenizer,
        k1: float = 1.2,
        b: float = 0.75,
        method: str = "lucene",
    ) -> None:
        from bm25s.scoring import _select_idf_scorer, _select_tfc_scorer

        for seg in segments:
            if seg.tokenizer != tokenizer.to_dict():
                raise StoreError(
                    f"the store's BM25 postings were built with tokenizer settings {seg.tokenizer}, the "
                    "query "
                    f"uses {tokenizer.to_dict()}; keep the store's bm25 settings or re-index"
                )
        self.segments = segments
        self.tokenizer = tokenizer
        self.k1, self.b, self.method = k1, b, method
        self._idf_fn = _select_idf_scorer(method)
        self._tfc_fn = _select_tfc_scorer(method)
        self._nonoccurrence = method in ("bm25l", "bm25+")
        self.offsets = np.zeros(len(segments) + 1, dtype=np.int64)
        np.cumsum([s.size for s in segments], out=self.offsets[1:])
        self.alive = [~np.isin(s.docnos, dead) if dead.size else np.ones(s.size, bool) for s in segments]
        self._live = np.concatenate(self.alive) if self.alive else np.empty(0, bool)
        self._tenant_masks: OrderedDict[frozenset[str | None], np.ndarray] = OrderedDict()
        self.num_docs = int(sum(int(a.sum()) for a in self.alive))
        total = sum(int(s.lengths[a].sum(dtype=np.int64)) for s, a in zip(segments, self.alive, strict=True))
        self.avg_len = total / self.num_docs if self.num_docs else 0.0
        self.size = int(self.offsets[-1])
        self._cache: OrderedDict[str, _QueryTerms] = OrderedDict()
        self._lock = threading.Lock()
        self._term_sets: dict[str, frozenset[str]] = {}

    # -- the BM25Index protocol -----------------------------------------------------------------------
    def scores(self, query: str) -> np.ndarray | None:
        """BM25 score of every position for `query` (0 for dead chunks), or None when no term is known."""
        return self._query(query).scores

    def score_bound(self, query: str) -> float:
        """Sum over the query's terms of their best score in any live chunk (see `BM25Index.score_bound`)."""
        return self._query(query).bound

    def idf(self, term: str, df: int | None = None) -> float:
        """Lucene idf of `term` over the live chunks (a term absent from them has df 0)."""
        if df is None:
            df = self.doc_freq(term)
        return math.log(1 + (self.num_docs - df + 0.5) / (df + 0.5))

    def doc_freq(self, term: str) -> int:
        """How many live chunks hold `term`."""
        key = term_hash(term)
        total = 0
        for seg, alive in zip(self.segments, self.alive, strict=True):
            postings = seg.postings(key)
            if postings is not None:
                total += int(alive[postings["doc"]].sum())
        return total

    def term_coverage(self, query: str, text: str) -> float:
        """Share of the query's idf mass whose terms occur in `text` (see `BM25Index.term_coverage`)."""
        terms = self._terms(query)
        if not terms:
            return 0.0
        known = self._query(query).df  # the query's terms found in no live chunk have df 0
        idf = {t: self.idf(t, known.get(t, 0)) for t in terms}
        present = self._terms(text)
        total = sum(idf.values())
        return sum(idf[t] for t in terms & present) / total if total > 0 else 0.0

    # -- positions -------------------------------------------------------------------------------------
    def position_of(self, docnos: Sequence[int]) -> list[int | None]:
        """The live global position of each document number (None: not in this version, or dead)."""
        wanted = np.asarray(docnos, dtype=np.int64)
        out: list[int | None] = [None] * len(wanted)
        for i, (seg, alive) in enumerate(zip(self.segments, self.alive, strict=True)):
            if not seg.size:
                continue
            idx = np.searchsorted(seg.docnos, wanted)
            idx[idx >= seg.size] = 0
            hit = (seg.docnos[idx] == wanted) & alive[idx]
            for j in np.flatnonzero(hit):
                out[j] = int(self.offsets[i] + idx[j])
        return out

    def docnos_at(self, positions: Sequence[int]) -> list[int]:
        """The document numbers at global `positions`."""
        pos = np.asarray(positions, dtype=np.int64)
        seg = np.searchsorted(self.offsets, pos, side="right") - 1
        return [int(self.segments[s].docnos[p - self.offsets[s]]) for s, p in zip(seg, pos, strict=True)]

    def tenant_mask(self, tenants: set[str | None]) -> np.ndarray:
        """True at the positions whose chunk's tenant is one of `tenants` (kept for a few tenant sets)."""
        key = frozenset(tenants)
        with self._lock:
            mask = self._tenant_masks.get(key)
        if mask is None:
            parts = []
            for seg in self.segments:
                allowed = np.array([name in key for name in seg.tenants], dtype=bool)
                parts.append(allowed[seg.tenant] if seg.size else np.empty(0, bool))
            mask = np.concatenate(parts) if parts else np.empty(0, bool)
            mask.setflags(write=False)
            with self._lock:
                self._tenant_masks[key] = mask
                while len(self._tenant_masks) > 16:
                    self._tenant_masks.popitem(last=False)
        return mask

    def live_mask(self) -> np.ndarray:
        """True at every live position (read-only)."""
        self._live.setflags(write=False)
        return self._live

    # -- scoring ---------------------------------------------------------------------------------------
    def _query(self, query: str) -> _QueryTerms:
        with self._lock:
            cached = self._cache.get(query)
            if cached is not None:
                self._cache.move_to_end(query)
                return cached
        result = self._score(query)
        with self._lock:
            self._cache[query] = result
            while len(self._cache) > _SCORE_CACHE:
                self._cache.popitem(last=False)
        return result

    def _score(self, query: str) -> _QueryTerms:
        tokens = self.tokenizer(query)
        if not tokens or not self.num_docs:
            return _QueryTerms(None, 0.0, {})
        gathered: dict[str, tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], int]] = {}
        for term in dict.fromkeys(tokens):
            key = term_hash(term)
            idx, tf, lengths = [], [], []
            for i, (seg, alive) in enumerate(zip(self.segments, self.alive, strict=True)):
                postings = seg.postings(key)
                if postings is None:
                    continue
                live = postings[alive[postings["doc"]]]
                if live.size:
                    idx.append(live["doc"].astype(np.int64) + self.offsets[i])
                    tf.append(live["tf"].astype(np.float32))
                    lengths.append(seg.lengths[live["doc"]])
            df = int(sum(a.shape[0] for a in idx))
            if df:
                gathered[term] = (idx, tf, lengths, df)
        if not gathered:
            return _QueryTerms(None, 0.0, {})
        contributions: dict[str, tuple[np.ndarray, np.ndarray, float, float]] = {}
        for term, (idx, tf, lengths, df) in gathered.items():
            idf = np.float32(self._idf_fn(df, N=self.num_docs))
            length = np.concatenate(lengths).astype(np.float64)
            # bm25s adds k1 * (1 - b + b * l_d / l_avg), computed in double, to a float32 tf
            norm = (self.k1 * ((1 - self.b) + self.b * length / self.avg_len)).astype(np.float32)
            tf_all = np.concatenate(tf)
            tfc = self._tfc(tf_all, norm)
            nonocc = 0.0
            if self._nonoccurrence:
                nonocc = float(
                    idf
                    * self._tfc_fn(
                        tf_array=np.float32(0),
                        l_d=self.avg_len,
                        l_avg=self.avg_len,
                        k1=self.k1,
                        b=self.b,
                        delta=0.5,
                    )
                )
            values = (idf * tfc).astype(np.float32)
            if nonocc:
                values = (values - np.float32(nonocc)).astype(np.float32)
            contributions[term] = (np.concatenate(idx), values, float(values.max()), nonocc)
        scores = np.zeros(self.size, dtype=np.float32)
        bound = 0.0
        extra = np.float32(0)
        for token in tokens:  # in the query's order, repeats included, as bm25s sums them
            item = contributions.get(token)
            if item is None:
                continue
            scores[item[0]] += item[1]
            bound += item[2]
            extra += np.float32(item[3])
        if extra:
            scores += extra
        return _QueryTerms(scores, bound, {t: v[3] for t, v in gathered.items()})

    def _tfc(self, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
        """bm25s's term-frequency part for the store's method (norm: k1 * (1 - b + b * l_d / l_avg))."""
        if self.method in ("lucene", "robertson"):
            return tf / (norm + tf)
        if self.method == "atire":
            return (tf * np.float32(self.k1 + 1)) / (tf + norm)
        c = tf / (norm / np.float32(self.k1))  # bm25l and bm25+: tf / (1 - b + b * l_d / l_avg)
        if self.method == "bm25l":
            return (np.float32(self.k1 + 1) * (c + np.float32(0.5))) / (
                np.float32(self.k1) + c + np.float32(0.5)
            )
        return (np.float32(self.k1 + 1) * tf) / (norm + tf) + np.float32(0.5)

    def _terms(self, text: str) -> frozenset[str]:
        terms = self._term_sets.get(text)
        if terms is None:
            if len(self._term_sets) >= _TERM_CACHE:
                self._term_sets.clear()
            terms = self._term_sets[text] = frozenset(self.tokenizer(text))
        return terms


def segment_cache_dir(store_id: str) -> Path:
    """Where a serving process keeps the store's segment files (`$HAYGRAPH_CACHE_DIR/postgres-bm25/…`)."""
    from haygraph.retrieval.embedding_cache import default_cache_dir

    if not store_id.isalnum():
        raise StoreError(f"the store's id {store_id!r} is not a plain identifier")
    return default_cache_dir() / "postgres-bm25" / store_id


def write_cached(path: Path, data: bytes, sha256: str) -> None:
    """Write a downloaded segment to `path` (checked against its digest; atomically replaced)."""
    if hashlib.sha256(data).hexdigest() != sha256:
        raise CorruptStoreError(
            f"a BM25 segment read from the database does not match its digest ({path.name})"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
