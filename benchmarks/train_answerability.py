"""Train the answerability decision (`haygraph.control.planning.decision`) on the tune parts only.

Run from the repository root:

    python -m benchmarks.train_answerability [--cmrc-n 300] [--scifact-n 200] [--out FILE] [--work DIR]

Data (never a test part): the CMRC 2018 *tune* passages (`haygraph.eval.agent_cases.cmrc_protocol`,
half of the sampled questions with their gold passage removed), the handbook cases of split ``tune``,
the same cases asked in the other language (``handbook-cross``), the paraphrased handbook cases of split
``tune`` (``handbook-paraphrase``), the real-documentation cases of split
``tune`` (when the ``vue-docs`` dataset is there, or ``--docs DIR``) and SciFact *train* claims (half
with their gold abstracts removed). For every case and every query
mode (hybrid, bm25, dense) the question is retrieved as the offline agent does — the rewritten query
(top 3), then the expansion (the original question, top 5, merged in) — and each stage's evidence
becomes a row of the model's features (`protocol_examples`). Label 1 = the gold source is among that
evidence (answerable from it), 0 = it is not, its gold was removed or the handbook holds no answer;
present questions whose gold neither stage retrieved are left out (nothing to learn about the decision).

Retrieval results are cached per protocol in ``<work>/<name>-<seed>.stages.json`` (delete them to
retrieve again), so refitting after a feature change takes seconds.

A scikit-learn `LogisticRegression` (balanced classes, no separate intercept: each language block has
its own bias feature; each signal's weight keeps its sign, `SIGN`) is fitted; handbook and
documentation rows weigh `--handbook-weight` (8: they are few and are the product's own kind of
documents). The threshold is chosen on held-out probabilities (5-fold, grouped by case, one
decision per turn: the agent answers when either stage passes) as the one with the best macro
balanced accuracy over protocol/language groups among those whose mean refusal over the groups
reaches `--min-refusal` (default 0.7; it was 0.85 until the real-documentation near misses
joined the groups: no threshold in range reaches 0.85 over them, and the fallback, the most refusing
threshold 0.7, answered 0.2 of the held-out English handbook questions); those
held-out rates are written with the weights. The weights are written as JSON (default: the shipped
package data file).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression

from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.adapters.meaning_encoder import E5MeaningEncoder
from haygraph.control.evidence import Evidence, evidence_key, merge_evidence
from haygraph.control.planning.decision.model import MEANING_WEIGHTS_FILE, READER_WEIGHTS_FILE, WEIGHTS_FILE
from haygraph.control.planning.decision.signals import (
    FEATURE_NAMES,
    answerability_features,
    answerability_signals,
    reader_signals,
)
from haygraph.control.planning.meaning import MeaningEncoder
from haygraph.control.planning.rewrite import rewrite_query
from haygraph.control.reading import Reading
from haygraph.eval.agent_cases import (
    AgentProtocol,
    cmrc_protocol,
    docs_cross_protocol,
    docs_protocol,
    handbook_cross_protocol,
    handbook_paraphrase_protocol,
    handbook_protocol,
    scifact_protocol,
)
from haygraph.eval.agent_harness import MODES, build_store
from haygraph.eval.index_prep import datasets_root, resolve_dataset
from haygraph.retrieval import sample_handbook_path
from haygraph.retrieval.knowledge_base import KnowledgeBase


def protocol_examples(protocol: AgentProtocol, store: Path) -> list[dict[str, Any]]:
    """Retrieve for every case of `protocol` in every query mode as the agent does: the rows to learn from.

    The agent decides twice when the first evidence is judged not answerable: on the first retrieval
    (the rewritten query: its top 3 are evidence, the rest of its 5 and the multilingual store's
    other-language chunks candidates) and again after the expansion (the original question, top 5,
    merged in). Each stage is one row: protocol, case id, language, mode, ``stage`` (``first`` /
    ``expanded``), the rewritten query (what the evaluate step scores), the question, the label (1 =
    what the agent reads holds a gold source: the evidence, or an other-language candidate its reader
    reads; 0 = it does not, or the gold was removed / the handbook holds no answer), the evidence and
    the candidates (JSON). Present cases whose gold neither stage retrieved are left out (nothing to
    learn about the decision).
    """
    from haygraph.adapters.haystack_retriever import CROSS_LANGUAGE
    from haygraph.control.language import is_chinese

    build_store(protocol, store)
    kb = KnowledgeBase.open(store)
    rows: list[dict[str, Any]] = []
    for mode in MODES:
        retriever = HaystackRetriever(
            kb, kb.config.query.model_copy(update={"mode": mode}), cross_language=CROSS_LANGUAGE
        )
        for case in protocol.cases:
            query = rewrite_query(case.question)[0]
            items = retriever.retrieve(query, top_k=5)
            first, spare = items[:3], items[3:]
            more = retriever.retrieve(case.question, top_k=5)
            expanded = merge_evidence(first, more[:5])
            spare_more = merge_evidence(spare, [e for e in more[5:] if e not in expanded])
            gold = set(case.gold_sources)

            stages = (("first", first, spare), ("expanded", expanded, spare_more))
            asked = is_chinese(case.question)
            read = [read_sources(e, c, asked) for _stage, e, c in stages]
            if not case.absent and not (read[0] | read[1]) & gold:
                continue
            for (stage, evidence, candidates), sources in zip(stages, read, strict=True):
                label = 0 if case.absent else int(bool(sources & gold))
                rows.append(
                    {
                        "protocol": protocol.name,
                        "id": case.id,
                        "lang": case.lang,
                        "mode": mode,
                        "stage": stage,
                        "query": query,
                        "question": case.question,
                        "label": label,
                        "evidence": [e.model_dump(mode="json") for e in evidence],
                        "candidates": [e.model_dump(mode="json") for e in candidates],
                    }
                )
    return rows


def read_sources(evidence: list[Evidence], candidates: list[Evidence], chinese: bool) -> set[str]:
    """The sources the agent's reader reads: the top 3 evidence items and the best other-language items.

    As `haygraph.control.graph.nodes.read_evidence` picks them (`chinese`: the question is Chinese).
    """
    from haygraph.control.graph.nodes import CROSS_READ
    from haygraph.control.language import is_chinese

    top = sorted(evidence, key=evidence_key, reverse=True)[:3]
    others = [
        e for e in merge_evidence(evidence, candidates) if is_chinese(e.text) != chinese and e not in top
    ]
    return {e.source for e in [*top, *others[:CROSS_READ]]}


def cached_examples(protocol: AgentProtocol, work: Path, seed: int) -> list[dict[str, Any]]:
    """`protocol_examples`, cached as ``<work>/<name>-<seed>.stages.json`` (delete it to retrieve again)."""
    cache = work / f"{protocol.name}-{seed}.stages.json"
    if cache.is_file():
        cached: list[dict[str, Any]] = json.loads(cache.read_text(encoding="utf-8"))
        return cached
    rows = protocol_examples(protocol, work / f"{protocol.name}-{seed}")
    cache.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return rows


def signals_of(row: dict[str, Any], encoder: MeaningEncoder | None = None) -> dict[str, float]:
    """The decision's signals for one collected row, without the reader's (those are `reader_signals`).

    The meaning signals need `encoder`; without it they are 0.
    """
    evidence = [Evidence.model_validate(e) for e in row["evidence"]]
    return answerability_signals(row["query"], evidence, encoder)


def features_of(
    row: dict[str, Any], signals: dict[str, float], reading: Reading | None = None
) -> list[float]:
    """The model's inputs for one collected row: its cached `signals` plus the reader's from `reading`."""
    items = [Evidence.model_validate(e) for e in [*row["evidence"], *(row.get("candidates") or [])]]
    merged = {**signals, **reader_signals(row["query"], reading, items)}
    return list(answerability_features(row["query"], merged))


def row_key(row: dict[str, Any]) -> str:
    """A collected row's identity: protocol, case, mode, stage."""
    return f"{row['protocol']}/{row['id']}/{row['mode']}/{row['stage']}"


def reading_policy() -> str:
    """A short digest of how the evaluate step picks and reads items (the readings cache's second key)."""
    from haygraph.control.graph import nodes

    source = "".join(inspect.getsource(f) for f in (nodes.reading_input, nodes.read_evidence))
    constants = repr((nodes.TOP_EVIDENCE, nodes.CROSS_READ))
    return hashlib.sha256((source + constants).encode("utf-8")).hexdigest()[:8]


def cached_readings(examples: list[dict[str, Any]], reader_path: str, work: Path) -> dict[str, Reading]:
    """The reader's reading of every row's top evidence, as the evaluate step reads it (cached by model).

    The cache file is named by the reader weights' sha256 and by what `reading_policy` hashes, so another
    model, or another choice of the items read, reads again.
    """
    from haygraph.adapters.evidence_reader import EvidenceReader
    from haygraph.control.graph.nodes import reading_input
    from haygraph.retrieval.reader.model import file_sha256, model_files

    onnx, _meta = model_files(None if reader_path == "bundled" else reader_path)
    cache = work / f"readings-{file_sha256(onnx)[:16]}-{reading_policy()}.json"
    known: dict[str, Any] = json.loads(cache.read_text(encoding="utf-8")) if cache.is_file() else {}
    reader = EvidenceReader(reader_path)
    started = time.perf_counter()
    same: dict[str, Any] = {}  # rows of one protocol reading the same words over the same items
    for k, row in enumerate(examples):
        key = row_key(row)
        if key in known:
            continue
        evidence = [Evidence.model_validate(e) for e in row["evidence"]]
        candidates = [Evidence.model_validate(e) for e in row.get("candidates") or []]
        if not evidence:
            known[key] = None
            continue
        asked, top, others = reading_input(
            row.get("question") or row["query"], row["query"], evidence, candidates
        )
        input_key = json.dumps([row["protocol"], asked, [e.id for e in [*top, *others]]], ensure_ascii=False)
        if input_key not in same:
            same[input_key] = reader.read(asked, [*top, *others]).model_dump()
        known[key] = same[input_key]
        if k % 200 == 0:
            print(
                f"reader: {k} / {len(examples)} rows ({time.perf_counter() - started:.0f} s)", file=sys.stderr
            )
            cache.write_text(json.dumps(known, ensure_ascii=False), encoding="utf-8")
    cache.write_text(json.dumps(known, ensure_ascii=False), encoding="utf-8")
    return {k: Reading.model_validate(v) for k, v in known.items() if v is not None}


SIGNAL_CODE = (
    "answerability_signals",
    "unit_signals",
    "key_entities",
    "term_share",
    "longest_shared_span",
    "units_by_share",
    "script_shares",
)
"""The functions of `haygraph.control.planning.decision.signals` that compute the cached signals."""


def digest_files(digest: Any, modules: Sequence[ModuleType]) -> None:
    """Feed each module's source file into `digest` (a hashlib object), in order."""
    for module in modules:
        digest.update(Path(str(module.__file__)).read_bytes())


def cached_signals(
    examples: list[dict[str, Any]], encoder: MeaningEncoder | None, path: Path
) -> list[dict[str, float]]:
    """`signals_of` every row (the reader's left out), kept in `path` with a digest of the rows and the code.

    Computing the meaning signals embeds every answer unit (~15 min here); a refit with another reader,
    threshold rule or weights reuses them. A change to the rows or to the modules that compute the
    signals other than the reader's makes a new file (of `decision.signals`, the functions in `SIGNAL_CODE`).
    """
    import inspect

    import haygraph.control.planning.answer_units as units_module
    import haygraph.control.planning.decision.lexicon as lexicon_module
    import haygraph.control.planning.decision.signals as signals_module
    import haygraph.control.planning.extractive as extractive_module
    import haygraph.control.planning.meaning as meaning_module

    digest = hashlib.sha256(
        json.dumps([[r["id"], r["mode"], r["stage"], r["query"]] for r in examples]).encode()
    )
    digest_files(digest, (units_module, lexicon_module, extractive_module, meaning_module))
    for function in SIGNAL_CODE:
        digest.update(inspect.getsource(getattr(signals_module, function)).encode())
    key = digest.hexdigest()
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("key") == key:
            return list(cached["signals"])
    signals = []
    started = time.perf_counter()
    for k, row in enumerate(examples):
        signals.append(signals_of(row, encoder))
        if k % 500 == 0:
            print(
                f"signals: {k} / {len(examples)} rows ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
    path.write_text(json.dumps({"key": key, "signals": signals}), encoding="utf-8")
    return signals


def feature_matrix(
    examples: list[dict[str, Any]], signals: list[dict[str, float]], readings: dict[str, Reading] | None
) -> np.ndarray:
    """The model's inputs of every row: cached signals plus the reader's (0 without `readings`)."""
    readings = readings or {}
    return np.array(
        [features_of(r, s, readings.get(row_key(r))) for r, s in zip(examples, signals, strict=True)]
    )


SIGN: dict[str, int] = {
    "relevance": 1,
    "lexical_relevance": 1,
    "gap": 1,
    "idf_coverage": 1,
    "coverage": 1,
    "span": 1,
    "entities": 1,
    "unit_coverage": 1,
    "type_missing": -1,
    "meaning_unit": 1,
    "meaning_heading": 1,
    "missing_words": -1,
    "reader_margin": 1,
}
"""The sign each signal's weight must have (more of it: more / less answerable); the others are free.

Unconstrained, the signals' overlap (coverage, unit coverage, span, meaning all rise together) gave
English coverage and span negative weights: "The per diem for business travel is ..." scored 0.28
for "What is the per diem for business travel?" (coverage 1.0).
"""


class MonotoneLogistic:
    """`LogisticRegression` whose weights keep the signs of `SIGN`.

    A signal fitted with the wrong sign is dropped (its weight 0) and the rest refitted, as
    `benchmarks.calibrate_relevance` does.
    """

    def __init__(self) -> None:
        self.coef_ = np.zeros((1, len(FEATURE_NAMES)))

    def fit(self, x: np.ndarray, y: np.ndarray, w: np.ndarray) -> MonotoneLogistic:
        """Fit, dropping wrong-signed signals until none is left."""
        signs = np.array([SIGN.get(name.split("_", 1)[1], 0) for name in FEATURE_NAMES])
        keep = np.ones(len(FEATURE_NAMES), dtype=bool)
        while True:
            clf = LogisticRegression(fit_intercept=False, class_weight="balanced", C=1.0, max_iter=5000)
            clf.fit(x[:, keep], y, sample_weight=w)
            coef = np.zeros(len(FEATURE_NAMES))
            coef[keep] = clf.coef_[0]
            wrong = keep & (signs * coef < 0)
            if not wrong.any():
                self.coef_ = coef[None, :]
                return self
            keep &= ~wrong

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """(n, 2) probabilities of the two classes."""
        p = 1.0 / (1.0 + np.exp(-(x @ self.coef_[0])))
        return np.stack([1 - p, p], axis=1)


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> MonotoneLogistic:
    """Balanced-class logistic regression without a separate intercept, weights signed as `SIGN` says.

    Each language block has its own bias feature.
    """
    return MonotoneLogistic().fit(x, y, w)


def fold_of(row: dict[str, Any], folds: int) -> int:
    """A case's cross-validation fold (all modes of one case share it): SHA-1 of protocol and id."""
    digest = hashlib.sha1(f"{row['protocol']}/{row['id']}".encode()).digest()
    return digest[0] % folds


def held_out_probabilities(
    examples: list[dict[str, Any]], x: np.ndarray, y: np.ndarray, w: np.ndarray, folds: int = 5
) -> np.ndarray:
    """Each row's probability from a model fitted without its case (grouped k-fold)."""
    fold = np.array([fold_of(r, folds) for r in examples])
    prob = np.zeros(len(examples))
    for k in range(folds):
        prob[fold == k] = fit(x[fold != k], y[fold != k], w[fold != k]).predict_proba(x[fold == k])[:, 1]
    return prob


def turn_level(
    examples: list[dict[str, Any]], prob: np.ndarray, y: np.ndarray
) -> tuple[list[dict[str, Any]], np.ndarray, np.ndarray]:
    """One entry per turn (protocol, case, mode): the agent answers when any stage passes the threshold.

    So a turn's probability is the largest of its stages' and its label the largest of theirs (a
    present case is answerable once a stage retrieved its gold).
    """
    turns: dict[tuple[str, str, str], int] = {}
    kept: list[dict[str, Any]] = []
    best: list[float] = []
    labels: list[int] = []
    for row, p, label in zip(examples, prob, y, strict=True):
        key = (row["protocol"], row["id"], row["mode"])
        if key not in turns:
            turns[key] = len(kept)
            kept.append(row)
            best.append(float(p))
            labels.append(int(label))
        else:
            i = turns[key]
            best[i] = max(best[i], float(p))
            labels[i] = max(labels[i], int(label))
    return kept, np.array(best), np.array(labels)


def group_rates(
    examples: list[dict[str, Any]], prob: np.ndarray, y: np.ndarray, threshold: float
) -> dict[str, dict[str, float]]:
    """Per protocol/language group: the share of answerable rows kept and of the others refused."""
    out = {}
    for key in sorted({f"{r['protocol']}/{r['lang']}" for r in examples}):
        in_group = np.array([f"{r['protocol']}/{r['lang']}" == key for r in examples])
        pos, neg = in_group & (y == 1), in_group & (y == 0)
        out[key] = {
            "answered": round(float(np.mean(prob[pos] >= threshold)), 3) if pos.any() else float("nan"),
            "refused": round(float(np.mean(prob[neg] < threshold)), 3) if neg.any() else float("nan"),
        }
    return out


SCORE_TOLERANCE = 0.005
"""Macro scores closer than this are taken as equal (`best_threshold`); the same 0.005 below which a rule's
ablation gain counts as none (`benchmarks.ablate_decision`)."""


def best_threshold(
    examples: list[dict[str, Any]],
    prob: np.ndarray,
    y: np.ndarray,
    refusal_weight: float = 1.0,
    min_refusal: float = 0.85,
    tolerance: float = SCORE_TOLERANCE,
) -> float:
    """The threshold in [0.3, 0.7]: best macro weighted accuracy among those that refuse enough.

    A group's score is (answered + `refusal_weight` * refused) / (1 + `refusal_weight`) (1: balanced
    accuracy). Each group (CMRC zh, SciFact en, handbook en, handbook zh) counts the same, so the many
    CMRC and SciFact rows do not decide alone how the handbook's own kind of questions is treated.
    Only thresholds whose mean refusal over the groups is at least `min_refusal` compete (the
    product's promise: refuse rather than answer from evidence that does not hold the answer; the
    score alone is flat over the range on the small handbook groups); if none does, the most
    refusing one. Scores within `tolerance` of the best are no measurable difference (one turn of a
    small group moves the mean by more): among them the most refusing threshold wins, for the same
    promise; then the one nearest 0.5.
    """
    candidates = sorted(np.arange(0.3, 0.71, 0.02), key=lambda v: abs(v - 0.5))
    most, most_refused = 0.7, -1.0
    scored: list[tuple[float, float, float]] = []  # (threshold, score, mean refusal)
    for t in candidates:
        rates = list(group_rates(examples, prob, y, float(t)).values())
        refused = float(np.nanmean([g["refused"] for g in rates]))
        if refused > most_refused + 1e-9:
            most, most_refused = float(t), refused
        if refused < min_refusal:
            continue
        weighted = [(g["answered"] + refusal_weight * g["refused"]) / (1 + refusal_weight) for g in rates]
        scored.append((float(t), float(np.nanmean(weighted)), refused))
    if not scored:
        return round(most, 2)
    top = max(score for _t, score, _r in scored)
    near = [entry for entry in scored if entry[1] >= top - tolerance - 1e-9]
    best = max(near, key=lambda entry: (round(entry[2], 9), -abs(entry[0] - 0.5)))
    return round(best[0], 2)


def tune_protocols(
    cmrc_n: int, scifact_n: int, handbook_weight: float, seed: int, docs: Path | None = None
) -> list[tuple[Any, float]]:
    """The tune/train parts the decision is fitted (and ablated, `benchmarks.ablate_decision`) on.

    (protocol, weight per row): CMRC 2018 tune (`cmrc_n`), SciFact train (`scifact_n`), the handbook's
    tune part, its cross-language and paraphrase cases, and the documentation set's tune part when
    `docs` (default: the datasets' ``vue-docs``) is there, the handbook-like ones at `handbook_weight`.
    """
    handbook = sample_handbook_path()
    protocols: list[tuple[Any, float]] = [
        (cmrc_protocol(resolve_dataset("cmrc2018"), "tune", cmrc_n, seed), 1.0),
        (scifact_protocol(resolve_dataset("scifact"), "train", scifact_n, seed=seed), 1.0),
        (handbook_protocol(handbook, "tune"), handbook_weight),
        (handbook_cross_protocol(handbook), handbook_weight),
        (handbook_paraphrase_protocol(handbook, "tune"), handbook_weight),
    ]
    docs = docs or datasets_root() / "vue-docs"
    if (docs / "pages").is_dir():
        protocols.append((docs_protocol(docs, "tune"), handbook_weight))
        protocols += [(docs_cross_protocol(docs, asked, "tune"), handbook_weight) for asked in ("en", "zh")]
    else:
        print(f"no documentation dataset at {docs}: its tune cases are left out", file=sys.stderr)
    return protocols


def main(argv: list[str] | None = None) -> int:
    """Build the tune stores, collect the rows, fit, and write the weights."""
    parser = argparse.ArgumentParser(description="Train the answerability decision on the tune parts.")
    parser.add_argument("--cmrc-n", type=int, default=300, help="CMRC tune questions (default: 300)")
    parser.add_argument("--scifact-n", type=int, default=200, help="SciFact train claims (default: 200)")
    parser.add_argument(
        "--handbook-weight", type=float, default=8.0, help="weight of a handbook or documentation row"
    )
    parser.add_argument(
        "--refusal-weight", type=float, default=1.0, help="weight of refusing an unanswerable row (threshold)"
    )
    parser.add_argument(
        "--min-refusal", type=float, default=0.7, help="mean held-out refusal the threshold must reach"
    )
    parser.add_argument(
        "--docs", default=None, help="real-documentation dataset (default: <datasets>/vue-docs if present)"
    )
    parser.add_argument(
        "--leave-out", default="", help="protocols whose rows are not fitted (comma-separated names)"
    )
    parser.add_argument(
        "--report", action="store_true", help="also print the held-out rates at every candidate threshold"
    )
    parser.add_argument(
        "--modes",
        default=",".join(MODES),
        help="query modes whose rows are fitted (default: all; the agent's default is hybrid)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", default="/tmp/haygraph-answerability", help="stores and rows are kept here")
    parser.add_argument(
        "--meaning",
        action="store_true",
        help="fit with the meaning signals of the bundled multilingual-e5-small (default --out: the shipped "
        "answerability_meaning.json)",
    )
    parser.add_argument(
        "--reader",
        default=None,
        help="fit with the margin of this extractive reader ('bundled' or a benchmarks.train_reader folder; "
        "default --out: the shipped answerability_reader.json)",
    )
    parser.add_argument(
        "--lead-precision",
        type=float,
        default=0.9,
        help="with --reader: the share of leading span values that must be right (fits lead_margin)",
    )
    parser.add_argument("--out", default=None, help="weights JSON (default: the shipped file)")
    args = parser.parse_args(argv)
    encoder = E5MeaningEncoder() if args.meaning else None
    shipped = READER_WEIGHTS_FILE if args.reader else MEANING_WEIGHTS_FILE if args.meaning else WEIGHTS_FILE
    out = args.out or str(shipped)
    work = Path(args.work)
    started = time.perf_counter()
    protocols = tune_protocols(
        args.cmrc_n, args.scifact_n, args.handbook_weight, args.seed, Path(args.docs) if args.docs else None
    )
    work.mkdir(parents=True, exist_ok=True)
    examples: list[dict[str, Any]] = []
    weights: list[float] = []
    counts: dict[str, Any] = {}
    for protocol, weight in protocols:
        got = cached_examples(protocol, work, args.seed)
        counts[protocol.name] = {"rows": len(got), "positive": sum(r["label"] for r in got)}
        examples.extend(got)
        weights.extend([weight] * len(got))
        print(f"{protocol.name}: {counts[protocol.name]}", file=sys.stderr)
    if args.modes != ",".join(MODES):
        modes = set(args.modes.split(","))
        keep_rows = [(r, wt) for r, wt in zip(examples, weights, strict=True) if r["mode"] in modes]
        examples, weights = [r for r, _ in keep_rows], [wt for _, wt in keep_rows]
        counts = {
            name: {
                "rows": sum(r["protocol"] == name for r in examples),
                "positive": sum(r["label"] for r in examples if r["protocol"] == name),
            }
            for name in counts
        }
        print(f"query modes {args.modes}: {len(examples)} rows", file=sys.stderr)
    readings = cached_readings(examples, args.reader, work) if args.reader else None
    signals = cached_signals(
        examples, encoder, work / f"signals-{'meaning' if args.meaning else 'plain'}.json"
    )
    x = feature_matrix(examples, signals, readings)
    print(f"features of {len(examples)} rows ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    if args.leave_out:
        keep = np.array([r["protocol"] not in args.leave_out.split(",") for r in examples])
        examples = [r for r, k in zip(examples, keep, strict=True) if k]
        x, weights = x[keep], [wt for wt, k in zip(weights, keep, strict=True) if k]
        counts = {name: c for name, c in counts.items() if name not in args.leave_out.split(",")}
    y = np.array([int(r["label"]) for r in examples])
    w = np.array(weights)
    held_out = held_out_probabilities(examples, x, y, w)
    turns, turn_prob, turn_y = turn_level(examples, held_out, y)
    threshold = best_threshold(turns, turn_prob, turn_y, args.refusal_weight, args.min_refusal)
    if args.report:
        for t in np.arange(0.3, 0.71, 0.04):
            rates = group_rates(turns, turn_prob, turn_y, float(t))
            print(
                f"{t:.2f} "
                + " ".join(f"{k}={v['answered']:.2f}/{v['refused']:.2f}" for k, v in rates.items()),
                file=sys.stderr,
            )
    clf = fit(x, y, w)
    lead: dict[str, Any] = {}
    if readings is not None:
        from benchmarks.ablate_answer import answer_table, lead_margin

        cases = {(protocol.name, c.id): c for protocol, _w in protocols for c in protocol.cases}
        _table, points = answer_table(examples, cases, readings, encoder)
        margin = lead_margin(points, args.lead_precision)
        led = [ok for m, ok in points if m >= margin]
        lead = {
            "lead_margin": None if margin == float("inf") else round(margin, 3),
            "lead": {
                "precision_wanted": args.lead_precision,
                "spans_in_gold": len(points),
                "led": len(led),
                "right": round(sum(led) / len(led), 3) if led else None,
            },
        }
    data = {
        "weights": {n: round(float(v), 5) for n, v in zip(FEATURE_NAMES, clf.coef_[0], strict=True)},
        "threshold": threshold,
        "trained_on": counts,
        "held_out": group_rates(turns, turn_prob, turn_y, threshold),
        **lead,
        "command": "python -m benchmarks.train_answerability " + " ".join(argv or sys.argv[1:]),
    }
    Path(out).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    print(
        f"wrote {out}: threshold {threshold} ({time.perf_counter() - started:.0f} s); held out "
        f"(5-fold by case): {json.dumps(data['held_out'])}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
