"""Measure the extractive reader on public benchmarks: SQuAD 2.0 dev, XQuAD (en, zh, across), a held-out dev.

    python -m benchmarks.eval_reader --xquad DIR [--squad2 FILE] [--dev FILE] [--model DIR] [--baseline]

- ``--squad2``: the official SQuAD 2.0 dev file (``dev-v2.0.json``, 11,873 questions): exact match, F1,
  HasAns / NoAns as the official script computes them (`haygraph.eval.qa_metrics`), the no-answer
  decision being the reader's margin below the threshold (``reader.json``'s ``threshold``, and the best
  threshold on the file itself, reported as such: it is fitted on the test data). Beside them
  ``span_f1``: HasAns F1 of the best span whatever its margin, the answers found apart from the
  threshold (the agent refits its answer-or-refuse line on the margins), so two readers compare on it
  even when one only moved its margins.
- ``--xquad``: a folder with ``xquad.en.json`` and ``xquad.zh.json`` (google-deepmind/xquad, CC BY-SA 4.0;
  1,190 parallel questions each): EM / F1 of the best span (XQuAD has no unanswerable questions) per
  setting: ``en`` (en question, en passage), ``zh``, ``zh->en`` (the zh question over the en passage,
  scored against the en answers) and ``en->zh``; MLQA-style tokenisation for Chinese. Beside them,
  ``in_unit``: the share whose gold answer lies inside the answer unit (sentence, list item, row) that
  holds the span — what the agent quotes — and, with ``--baseline``, the same share for today's
  extractive answer (`haygraph.control.planning.extractive.extractive_answer`) over the same passage.
- ``--dev``: JSONL of held-out examples (`benchmarks.reader_data`'s ``dev.jsonl``), per language or
  cross-language pair, scored as ``--squad2``.

Prints a table and writes ``--out`` JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from haygraph.eval.qa_metrics import contains_gold, qa_scores
from haygraph.retrieval.reader.model import ReaderModel

logger = logging.getLogger("eval_reader")


def squad_rows(path: Path) -> list[dict[str, Any]]:
    """(id, question, context, golds, lang) rows of a SQuAD-format JSON file or a JSONL of examples."""
    if path.suffix == ".jsonl":
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            rows.append({
                "id": r["id"], "question": r["question"], "context": r["context"],
                "golds": [a["text"] for a in r["answers"]], "lang": r.get("lang", "en"),
                "source": r.get("source", ""), "group": r.get("pair") or r.get("lang", "en"),
            })  # fmt: skip
        return rows
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [
        {"id": qa["id"], "question": qa["question"], "context": p["context"],
         "golds": [a["text"] for a in qa["answers"]], "lang": "en", "source": path.stem, "group": "en"}
        for article in data for p in article["paragraphs"] for qa in p["qas"]
    ]  # fmt: skip


def read_all(
    reader: ReaderModel, rows: Sequence[dict[str, Any]], question_of: Callable[[dict[str, Any]], str]
) -> list[tuple[str, float]]:
    """(best span text, margin) per row."""
    out = []
    t0 = time.time()
    for k, row in enumerate(rows):
        reading = reader.read(question_of(row), [row["context"]])[0]
        best = reading.best
        out.append((best.text if best else "", reading.margin))
        if (k + 1) % 500 == 0:
            logger.info("%d / %d (%.1f/s)", k + 1, len(rows), (k + 1) / (time.time() - t0))
    return out


def best_threshold(
    rows: Sequence[dict[str, Any]], preds: Sequence[tuple[str, float]], lang: str = "en"
) -> tuple[float, float]:
    """The margin threshold maximising F1 on `rows` (as the official script's best_f1), and that F1."""
    golds = {r["id"]: r["golds"] for r in rows}
    candidates = sorted({round(m, 2) for _t, m in preds})
    best = (0.0, -1.0)
    for thr in candidates[:: max(1, len(candidates) // 200)]:
        pred = {r["id"]: (t if m >= thr else "") for r, (t, m) in zip(rows, preds, strict=True)}
        f1 = qa_scores(pred, golds, lang)["f1"]
        if f1 > best[1]:
            best = (thr, f1)
    return best


def evaluate_squad(reader: ReaderModel, path: Path, threshold: float, n: int) -> dict[str, Any]:
    """SQuAD 2.0-style scores of `path` at `threshold`, and the best threshold on it."""
    rows = squad_rows(path)[: n or None]
    preds = read_all(reader, rows, lambda r: r["question"])
    out: dict[str, Any] = {}
    by_lang: dict[str, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        by_lang[r["group"]].append(k)  # the language, or a cross-language pair ("en->zh")
    for group, idx in by_lang.items():
        sub = [rows[k] for k in idx]
        sp = [preds[k] for k in idx]
        lang = sub[0]["lang"]  # the passages' (and answers') language: how the answers are scored
        golds = {r["id"]: r["golds"] for r in sub}
        at = {r["id"]: (t if m >= threshold else "") for r, (t, m) in zip(sub, sp, strict=True)}
        thr, f1 = best_threshold(sub, sp, lang)
        out[group] = {
            "at_threshold": qa_scores(at, golds, lang),
            "best_threshold": thr,
            "best_f1": f1,
            "span_f1": span_f1(sub, sp, lang),
        }
    return out


def span_f1(rows: Sequence[dict[str, Any]], preds: Sequence[tuple[str, float]], lang: str = "en") -> float:
    """HasAns F1 of the best span whatever its margin; NaN when no row is answerable.

    The answers found, apart from where the answer-or-refuse line falls: the agent fits that line itself
    (`haygraph.control.planning.decision`), so a reader that only moved its margins keeps this figure.
    """
    forced = {r["id"]: t for r, (t, _m) in zip(rows, preds, strict=True)}
    return qa_scores(forced, {r["id"]: r["golds"] for r in rows}, lang).get("HasAns_f1", float("nan"))


def xquad_settings(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The four XQuAD settings as rows: question language -> passage language."""
    per: dict[str, dict[str, dict[str, Any]]] = {}
    for lang in ("en", "zh"):
        data = json.loads((folder / f"xquad.{lang}.json").read_text(encoding="utf-8"))["data"]
        per[lang] = {
            qa["id"]: {
                "question": qa["question"],
                "context": p["context"],
                "golds": [a["text"] for a in qa["answers"]],
            }
            for article in data
            for p in article["paragraphs"]
            for qa in p["qas"]
        }
    ids = sorted(set(per["en"]) & set(per["zh"]))
    out = {}
    for q_lang, c_lang in (("en", "en"), ("zh", "zh"), ("zh", "en"), ("en", "zh")):
        name = q_lang if q_lang == c_lang else f"{q_lang}->{c_lang}"
        out[name] = [
            {"id": i, "question": per[q_lang][i]["question"], "context": per[c_lang][i]["context"],
             "golds": per[c_lang][i]["golds"], "lang": c_lang}
            for i in ids
        ]  # fmt: skip
    return out


def unit_holding(context: str, start: int, end: int) -> str:
    """The answer unit of `context` (what the agent quotes: `extractive.answer_units`) holding start..end.

    Units are located in the passage with the web page's quote locator; the unit whose range holds the
    span's start (the shortest such) is returned, else the span itself.
    """
    from haygraph.control.planning.extractive import answer_units
    from haygraph.control.planning.quote_location import locate_quote

    holding = []
    for unit in answer_units(context):
        where = locate_quote(context, unit)
        if where is not None and where[0] <= start < where[1]:
            holding.append((where[1] - where[0], unit))
    return min(holding)[1] if holding else context[start:end]


def evaluate_xquad(reader: ReaderModel, folder: Path, n: int, baseline: bool) -> dict[str, Any]:
    """EM / F1 per XQuAD setting, the in-unit share, and (``baseline``) today's extractive answer's."""
    out: dict[str, Any] = {}
    for name, rows in xquad_settings(folder).items():
        rows = rows[: n or None]
        preds, in_unit, base = {}, 0, 0
        for r in rows:
            reading = reader.read(r["question"], [r["context"]])[0]
            best = reading.best
            preds[r["id"]] = best.text if best else ""
            if best is not None and contains_gold(
                unit_holding(r["context"], best.start, best.end), r["golds"], r["lang"]
            ):
                in_unit += 1
            if baseline:
                base += _baseline_hit(r)
        scores = qa_scores(preds, {r["id"]: r["golds"] for r in rows}, rows[0]["lang"])
        out[name] = {
            "exact": scores["exact"],
            "f1": scores["f1"],
            "n": len(rows),
            "in_unit": 100.0 * in_unit / len(rows),
        }
        if baseline:
            out[name]["today_in_answer"] = 100.0 * base / len(rows)
        logger.info("%s %s", name, out[name])
    return out


def _baseline_hit(row: dict[str, Any]) -> int:
    from haygraph.control.evidence import Evidence
    from haygraph.control.planning.extractive import extractive_answer

    ev = [Evidence(id="p1", text=row["context"], score=1.0, relevance=1.0, source="xquad")]
    ans = extractive_answer(row["question"], ev)
    return int(ans is not None and contains_gold(ans.answer, row["golds"], row["lang"]))


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="reader folder (default: the shipped weights)")
    ap.add_argument("--squad2", type=Path, help="SQuAD 2.0 dev JSON (official format)")
    ap.add_argument("--xquad", type=Path, help="folder with xquad.en.json and xquad.zh.json")
    ap.add_argument("--dev", type=Path, help="held-out JSONL examples (benchmarks.reader_data's dev.jsonl)")
    ap.add_argument("--n", type=int, default=0, help="first N questions of each set (0: all)")
    ap.add_argument("--threshold", type=float, default=None, help="margin threshold (default: reader.json's)")
    ap.add_argument("--baseline", action="store_true", help="also score today's extractive answer on XQuAD")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the results here as JSON")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    reader = ReaderModel(args.model, threads=args.threads)
    reader.warm_up()
    threshold = (
        args.threshold if args.threshold is not None else float(reader.settings.extra.get("threshold", 0.0))
    )
    results: dict[str, Any] = {"model": str(args.model or "bundled"), "threshold": threshold}
    if args.dev:
        results["dev"] = evaluate_squad(reader, args.dev, threshold, args.n)
    if args.squad2:
        results["squad2"] = evaluate_squad(reader, args.squad2, threshold, args.n)
    if args.xquad:
        results["xquad"] = evaluate_xquad(reader, args.xquad, args.n, args.baseline)
    print(json.dumps(results, indent=1))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
