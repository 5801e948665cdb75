"""The PostgreSQL store's BM25 postings against bm25s (`BM25Index`, the embedded store's): same scores.

No server needed: segments are built, merged and read from files as the store does.
"""

import random
from pathlib import Path

import numpy as np
import pytest

from haygraph.retrieval.bm25_index import BM25Index
from haygraph.retrieval.postgres import postings
from haygraph.retrieval.tokenize import BM25Tokenizer

WORDS = (  # noqa: SIM905 (a word list is easier to read as text)
    "annual leave days carry over travel flight booking hotel expense claim manager approval "
    "office parking garage barrier code dogs calm friday 年假 结转 员工 报销 出差"
).split()
QUERIES = ["annual leave carry over", "garage barrier code code", "员工 年假 结转", "hotel", "unknownword"]


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30))) for _ in range(n)]


def segment(tmp_path: Path, seg_id: int, blob: bytes) -> postings.Segment:
    path = tmp_path / f"{seg_id}.seg"
    path.write_bytes(blob)
    return postings.Segment(seg_id, path)


def build(texts: list[tuple[int, str]], tenant: str | None = None) -> bytes:
    builder = postings.SegmentBuilder(BM25Tokenizer())
    for docno, text in texts:
        builder.add(docno, text, tenant)
    return builder.build()


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire", "bm25l", "bm25+"])
def test_scores_equal_bm25s_over_the_live_chunks(tmp_path: Path, method: str) -> None:
    texts = list(enumerate(corpus(300), start=1))
    dead = np.array([5, 17, 18, 120, 250, 299], dtype=np.int64)
    blobs = [build(texts[:100]), build(texts[100:220]), build(texts[220:])]
    index = postings.SegmentIndex(
        [segment(tmp_path, i, b) for i, b in enumerate(blobs)], dead, BM25Tokenizer(), 1.2, 0.75, method
    )
    live = [t for n, t in texts if n not in set(dead.tolist())]
    expected = BM25Index(BM25Tokenizer(), 1.2, 0.75, method).build(live)
    alive = index.live_mask()
    assert index.num_docs == len(live) == int(alive.sum())
    for query in QUERIES:
        want, got = expected.scores(query), index.scores(query)
        if want is None:
            assert got is None
            continue
        assert got is not None
        assert np.allclose(got[alive], want, rtol=1e-5, atol=1e-6), query
        assert index.score_bound(query) == pytest.approx(expected.score_bound(query), rel=1e-5)
        for text in live[:20]:
            assert index.term_coverage(query, text) == pytest.approx(expected.term_coverage(query, text))


def test_merge_drops_dead_chunks_and_keeps_scores(tmp_path: Path) -> None:
    texts = list(enumerate(corpus(120, seed=3), start=1))
    dead = np.array([2, 40, 41, 90], dtype=np.int64)
    first, second, third = build(texts[:40], "A"), build(texts[40:80], "B"), build(texts[80:])
    merged, size = postings.merge([second, third], [dead[(dead > 40) & (dead <= 80)], dead[dead > 80]])
    assert size == 80 - 2  # 41 and 90 dropped
    before = postings.SegmentIndex(
        [segment(tmp_path, 1, first), segment(tmp_path, 2, second), segment(tmp_path, 3, third)],
        dead,
        BM25Tokenizer(),
    )
    after = postings.SegmentIndex(
        [segment(tmp_path, 1, first), segment(tmp_path, 4, merged)], dead[dead <= 40], BM25Tokenizer()
    )
    assert after.size == 118 and after.num_docs == before.num_docs == 116
    for query in QUERIES[:3]:
        a, b = before.scores(query), after.scores(query)
        assert a is not None and b is not None
        assert np.allclose(a[before.live_mask()], b[after.live_mask()])
    assert after.docnos_at([0, 39, 40, 117]) == [1, 40, 42, 120]  # 41 dropped; 2 and 40 keep a tombstone
    assert after.position_of([42, 41, 2, 999]) == [40, None, None, None]
    assert int(after.tenant_mask({"B"}).sum()) == 40 - 1 and not after.tenant_mask({"B"})[:40].any()


def test_a_damaged_cache_file_is_refused(tmp_path: Path) -> None:
    blob = build([(1, "annual leave")])
    with pytest.raises(postings.CorruptStoreError, match="does not match its digest"):
        postings.write_cached(
            tmp_path / "1.seg", blob[:-8] + b"\0" * 8, postings.hashlib.sha256(blob).hexdigest()
        )
    (tmp_path / "2.seg").write_bytes(b"not a segment at all")
    with pytest.raises(postings.CorruptStoreError, match="not a haygraph BM25 segment"):
        postings.Segment(2, tmp_path / "2.seg")
