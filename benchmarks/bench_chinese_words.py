"""jieba over the compact dictionary (`chinese_words`) against jieba itself.

Run as ``python -m benchmarks.bench_chinese_words [--limit N]``. Over every document and query of the
shared datasets and every paragraph of the bundled handbook (the texts of ``bench_e5_pieces``), it
counts the texts whose words (``jieba.lcut``) or tagged words (``jieba.posseg.lcut``) differ, and the
strings whose dictionary frequency (``jieba.dt.FREQ.get``) differs — every word cut and every pair of
adjacent Chinese characters; it prints the first differences, the time each takes, and the memory each
adds to a fresh process once loaded (VmRSS, MB).

This is a script that prints figures, not a test (``tests/test_chinese_words.py`` is the test).
"""

from __future__ import annotations

import argparse
import re
import time

from benchmarks.bench_e5_pieces import added_memory, texts

CJK_PAIR = re.compile(r"(?=([\u4e00-\u9fff]{2}))")

LOADERS = {
    "jieba": "import jieba, jieba.posseg; jieba.setLogLevel(60); jieba.posseg.lcut('年假有几天')",
    "compact": "from haygraph import chinese_words; chinese_words.warm_up()",
}


def memory(which: str) -> float:
    """MB that loading `which` (its dictionary, tags and HMM tables) adds to a fresh process."""
    return added_memory(LOADERS[which])


def main(argv: list[str] | None = None) -> int:
    """Compare, time and measure both."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="documents and queries per dataset (0: all)")
    args = parser.parse_args(argv)

    import jieba
    import jieba.posseg

    from haygraph import chinese_words

    jieba.setLogLevel(60)
    chinese_words.warm_up()
    jieba.posseg.lcut("年假有几天")
    print(f"{'texts':32s} {'n':>7s} {'cut':>5s} {'tags':>5s} {'freq':>6s}")
    total = {"n": 0, "cut": 0, "tags": 0, "freq": 0, "strings": 0}
    seconds = {"jieba": 0.0, "compact": 0.0}
    shown = 0
    for source, batch in texts(args.limit).items():
        cut_diff = tag_diff = freq_diff = strings = 0
        for text in batch:
            t0 = time.perf_counter()
            ref_cut = jieba.lcut(text)
            ref_tags = [(p.word, p.flag) for p in jieba.posseg.lcut(text)]
            t1 = time.perf_counter()
            got_cut = chinese_words.cut(text)
            got_tags = chinese_words.tagged(text)
            t2 = time.perf_counter()
            seconds["jieba"] += t1 - t0
            seconds["compact"] += t2 - t1
            probe = set(ref_cut) | set(CJK_PAIR.findall(text))
            strings += len(probe)
            bad = [s for s in probe if chinese_words.frequency(s) != jieba.dt.FREQ.get(s)]
            cut_diff += got_cut != ref_cut
            tag_diff += got_tags != ref_tags
            freq_diff += len(bad)
            if (got_cut != ref_cut or got_tags != ref_tags or bad) and shown < 5:
                shown += 1
                print(f"  differs: {text[:60]!r} frequencies {bad[:3]}")
        total["n"] += len(batch)
        total["cut"] += cut_diff
        total["tags"] += tag_diff
        total["freq"] += freq_diff
        total["strings"] += strings
        print(f"{source:32s} {len(batch):7d} {cut_diff:5d} {tag_diff:5d} {freq_diff:6d}")
    print(
        f"all: {total['n']} texts, {total['cut']} cut and {total['tags']} tagged differently; "
        f"{total['freq']} of {total['strings']} frequencies differ"
    )
    per = {k: 1000 * v / max(total["n"], 1) for k, v in seconds.items()}
    print(f"time per text (cut + tag): jieba {per['jieba']:.2f} ms, compact {per['compact']:.2f} ms")
    print(f"memory once loaded: jieba {memory('jieba'):.0f} MB, compact {memory('compact'):.0f} MB")
    return 0 if total["cut"] == total["tags"] == total["freq"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
