"""Assemble the reader's training set from the public span-QA files `benchmarks.reader_sources` builds.

    python -m benchmarks.reader_data --sources /work/data/reader/train --out /work/data/reader/assembled

Which files go in, and why (licences in ``retrieval/reader/MODEL_CARD.md``), is `INCLUDED`; left out:
BiPaR (CC BY-NC 4.0), SubjQA's restaurants domain (Yelp reviews, non-commercial), CAIL 2019 (no licence
stated). XQuAD, the SQuAD dev sets and the CMRC 2018 dev test part are never in the source files
(`reader_sources` drops them).

Beside the sources' own unanswerable questions (SubjQA, DuReader checklist), unanswerable examples are
made the SQuAD 2.0 way (Rajpurkar, Jia and Liang 2018 asked crowdworkers for questions a paragraph
cannot answer, on the same article): a question is paired with

- another paragraph of the same article (``title``) that does not contain its answer, or, where a
  source has no articles of several paragraphs,
- the paragraph of the same source, among `NEAR_POOL` drawn at random, that shares the most of the
  question's terms and does not contain its answer (a near miss: same kind of text, other fact).

A 2% slice of contexts (by a hash of the context) is held out as ``dev.jsonl`` for watching the training;
the acceptance is measured on SQuAD 2.0 dev and XQuAD (`benchmarks.eval_reader`), never trained on.
Deterministic for a given `--seed`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

INCLUDED = {
    "squadshifts_new_wiki": "CC BY 4.0",
    "squadshifts_reddit": "CC BY 4.0",
    "squadshifts_amazon": "CC BY 4.0",
    "subjqa": "research use (Amazon / TripAdvisor reviews; the Yelp restaurants part is left out)",
    "covid_qa": "Apache-2.0",
    "qed_dev": "CC BY-SA 3.0 (Natural Questions)",
    "tydiqa_goldp_en": "Apache-2.0",
    "cmrc2018_trial": "CC BY-SA 4.0",
    "cmrc2018_dev_tune": "CC BY-SA 4.0 (the dev set's tune part only)",
    "drcd": "CC BY-SA 3.0",
    "drcd_train_part": "CC BY-SA 3.0",
    "dureader_robust_dev": "Apache-2.0 (baidu/DuReader; LUGE terms)",
    "dureader_checklist": "Apache-2.0 (baidu/DuReader; LUGE terms)",
}
"""Source file stems used, with their licence."""

CROSS = {
    "mlqa_dev_cross_qen_ctxzh": ("en->zh", "CC BY-SA 3.0 (MLQA)"),
    "mlqa_dev_cross_qzh_ctxen": ("zh->en", "CC BY-SA 3.0 (MLQA)"),
}
"""Cross-language sources added by ``--cross`` (question language -> passage language, licence). Their
records carry ``pair``, so the dev slice and the learning curve score each direction on its own."""

CROSS_DEV_SHARE = 0.2
"""Share of the cross-language questions held out, by a hash of the question id shared by both directions
(MLQA's), so no question is trained in one direction and measured in the other."""

SUBSAMPLE = {"squadshifts_reddit": 0.5, "squadshifts_amazon": 0.5}
"""Share of a source's questions kept (by a hash of the context, so a paragraph's questions stay together):
forum posts and product reviews are half-weighted against Wikipedia, technical and Chinese text, the
product's own kind of documents (and training on two CPU cores is paid per example)."""

GENERATED_SHARE = 0.3
"""Unanswerable examples made per answerable one, for sources without unanswerable questions of their own."""
GENERATED_SHARE_WITH_OWN = 0.1
"""Likewise for sources that have their own (SubjQA, DuReader checklist)."""
NEAR_POOL = 40
"""Candidate paragraphs drawn for a near miss."""
DEV_SHARE = 0.02

_WORD = re.compile(r"[a-z0-9]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
_STOP = frozenset(
    [
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "is",
        "was",
        "are",
        "were",
        "what",
        "which",
        "who",
        "whom",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
    ]
)


def question_terms(text: str) -> set[str]:
    """Lower-cased words (without a few function words) and Chinese character bigrams of `text`."""
    low = text.lower()
    words = {w for w in _WORD.findall(low) if w not in _STOP}
    han = "".join(_CJK.findall(text))
    return words | {han[i : i + 2] for i in range(len(han) - 1)}


def _contains(context: str, answers: Sequence[dict[str, Any]]) -> bool:
    low = context.lower()
    return any(str(a["text"]).lower() in low for a in answers)


def _share_hash(context: str, salt: str = "") -> float:
    digest = hashlib.sha1((salt + context).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") / 2**32


def _dev(context: str) -> bool:
    return _share_hash(context) < DEV_SHARE


def unanswerable_for(
    row: dict[str, Any], siblings: Sequence[str], pool: Sequence[str], rng: random.Random
) -> dict[str, Any] | None:
    """An unanswerable copy of answerable `row`: a sibling paragraph, else the nearest of a random draw."""
    answers = row["answers"]
    options = [c for c in siblings if c != row["context"] and not _contains(c, answers)]
    kind = "sibling"
    if options:
        context = rng.choice(options)
    else:
        kind = "near"
        terms = question_terms(row["question"])
        drawn = [c for c in rng.sample(list(pool), min(NEAR_POOL, len(pool))) if c != row["context"]]
        drawn = [c for c in drawn if not _contains(c, answers)]
        if not drawn:
            return None
        context = max(drawn, key=lambda c: len(terms & question_terms(c)))
    return {**row, "id": f"{row['id']}:no-{kind}", "context": context, "answers": [], "is_impossible": True}


def _cross_dev(row: dict[str, Any]) -> bool:
    qid = str(row["id"]).split(":", 1)[-1].split(":no-")[0]
    return _share_hash(qid, "cross-dev") < CROSS_DEV_SHARE


def assemble(sources: Path, out: Path, seed: int = 13, cross: bool = False) -> dict[str, dict[str, int]]:
    """Write ``train.jsonl`` and ``dev.jsonl`` under `out`; returns counts per source.

    `cross` adds the cross-language sources (`CROSS`) after the others, so the same-language records,
    their order among themselves aside, are those of the set without them.
    """
    rng = random.Random(seed)
    train: list[dict[str, Any]] = []
    dev: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    for stem in [*INCLUDED, *(CROSS if cross else ())]:
        path = sources / f"{stem}.jsonl"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: build it with python -m benchmarks.reader_sources")
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if stem == "subjqa":
            rows = [r for r in rows if not str(r["id"]).startswith("subjqa:restaurants/")]
        if stem in SUBSAMPLE:
            rows = [r for r in rows if _share_hash(r["context"], "keep") < SUBSAMPLE[stem]]
        own_unanswerable = any(r["is_impossible"] for r in rows)
        share = GENERATED_SHARE_WITH_OWN if own_unanswerable else GENERATED_SHARE
        by_title: dict[str, list[str]] = defaultdict(list)
        contexts: list[str] = []
        seen: set[str] = set()
        for r in rows:
            if r["context"] not in seen:
                seen.add(r["context"])
                contexts.append(r["context"])
                by_title[str(r.get("title", ""))].append(r["context"])
        made = []
        for r in rows:
            if r["is_impossible"] or rng.random() >= share:
                continue
            titled = by_title[str(r.get("title", ""))]
            siblings = titled if 1 < len(titled) <= 200 else []
            neg = unanswerable_for(r, siblings, contexts, rng)
            if neg is not None:
                made.append(neg)
        c = counts[stem] = {"train": 0, "dev": 0, "own unanswerable": 0, "made unanswerable": len(made)}
        for r in rows + made:
            c["own unanswerable"] += bool(r["is_impossible"]) and ":no-" not in str(r["id"])
            if stem in CROSS:
                r["pair"] = CROSS[stem][0]
            if _cross_dev(r) if stem in CROSS else _dev(r["context"]):
                dev.append(r)
                c["dev"] += 1
            else:
                train.append(r)
                c["train"] += 1
    rng.shuffle(train)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("dev", dev)):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8")
    digests = {n: hashlib.sha256((out / f"{n}.jsonl").read_bytes()).hexdigest() for n in ("train", "dev")}
    (out / "counts.json").write_text(json.dumps({"counts": counts, "sha256": digests}, indent=1))
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: prints the counts per source."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", required=True, type=Path, help="folder of the source JSONL files")
    ap.add_argument("--out", required=True, type=Path, help="folder for train.jsonl, dev.jsonl, counts.json")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument(
        "--cross",
        action="store_true",
        help="add the cross-language sources (MLQA en/zh dev, both directions; a fifth of the questions "
        "held out as the dev slice's en->zh and zh->en)",
    )
    args = ap.parse_args(argv)
    counts = assemble(args.sources, args.out, args.seed, cross=args.cross)
    for stem, c in counts.items():
        print(f"{stem:24} " + "  ".join(f"{k} {v}" for k, v in c.items()))
    print(
        "total train", sum(c["train"] for c in counts.values()), "dev", sum(c["dev"] for c in counts.values())
    )


if __name__ == "__main__":
    main()
