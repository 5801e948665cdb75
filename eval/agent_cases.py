"""Answerability protocols on real data: which questions to ask, over which store, with which gold.

Each protocol yields an `AgentProtocol`: the documents to index (gold passages of the "absent" half
removed) and the cases to ask. A case is *present* (its gold source is in the store: it must be
answered, citing gold) or *absent* (its gold was removed, or the handbook holds no answer: it must be
refused).

- **CMRC 2018** (`cmrc_protocol`): passages are split by a hash of their id into ``tune`` and
  ``test``; `n` passages of the chosen part are sampled (seeded), one question each; a seeded random
  half of them is *absent*. The store holds every passage of the part except the absent gold ones,
  so the other passages are the distractors.
- **SciFact** (`scifact_protocol`): claims with qrels from the chosen split (``train`` for tuning,
  ``test``); the store holds the present claims' gold abstracts plus a seeded sample of other abstracts.
- **Handbook** (`handbook_protocol`): the labelled answerable and unanswerable cases of
  ``eval/cases/handbook_cases.jsonl`` over the bundled handbook.
- **Handbook, cross-language** (`handbook_cross_protocol`): the handbook's tune cases asked in the
  other language (``eval/cases/handbook_cross_cases.jsonl``, translated by hand); gold sources and
  answer strings stay in the document's language. Figures are grouped by direction: each case's
  `lang` is its ``direction`` (``en->zh``: an English question over a Chinese document).
- **Handbook, paraphrased** (`handbook_paraphrase_protocol`): questions over the bundled handbook
  written later, without looking at the labelled ones, the way employees type them — colloquial, with
  filler words and synonyms the pages do not use ("how long until I can try again", 多久能拿到,
  弄丢了要赔多少) — plus near misses (``eval/cases/handbook_paraphrase_cases.jsonl``, tune/test halves).
  It measures how far the decision fitted on the labelled phrasing carries to other wording.
- **Real documentation** (`docs_protocol`): hand-written developer questions
  (``eval/cases/docs_cases.jsonl``) over a public project's English and Chinese documentation (the
  Vue docs, kept as a dataset folder beside the other shared datasets: its ``pages/`` is indexed);
  answerable ones with gold page and answer strings, near-miss unanswerable ones (same topic, the
  asked-for option, version or number is in no page). The hold-out (``--protocol holdout-docs``) is the
  same over the Apache APISIX documentation (``eval/cases/holdout_docs_cases.jsonl``, written by
  someone who never ran the agent on it, before the reader was tuned; measured once at the end).
- **Ant Design hold-out** (`holdout_antd_protocol`, ``--protocol holdout-antd``): a second hold-out,
  written for issue 47 before the decision changed and without running the agent on it, over 30 Ant
  Design pages kept in the repository (``eval/datasets/antd-docs``, MIT): API-table and guide
  questions in both languages, near misses, and questions across languages. Setting ``same`` asks the
  same-language cases over both languages' pages; ``en->zh`` (``zh->en``) asks the English (Chinese)
  questions whose gold is a Chinese (English) page over that language's pages alone, so the other
  language's copy of the page cannot answer them.
- **XQuAD** (`xquad_protocol`): the reader's benchmark asked end to end: `n` questions of one setting
  (``en``, ``zh``, ``zh->en``: a Chinese question over the English store, ``en->zh``), all answerable,
  over a store of that setting's passage language (the 240 paragraphs of XQuAD's 48 articles, default
  config); a correct answer holds a gold answer string and cites the question's paragraph.

Everything is deterministic for a given seed; nothing here loads a model.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from haystack import Document

from haygraph.eval.errors import EvalError
from haygraph.retrieval.converters import read_beir_corpus

Part = Literal["tune", "test"]

CASES_DIR = Path(__file__).resolve().parent / "cases"
CASES_FILE = CASES_DIR / "handbook_cases.jsonl"
"""The labelled handbook questions (kind, language, expected sources and facts, tune/test split)."""
CROSS_CASES_FILE = CASES_DIR / "handbook_cross_cases.jsonl"
"""The handbook's tune questions translated into the other language (``x-<id>``, with ``direction``)."""
PARAPHRASE_CASES_FILE = CASES_DIR / "handbook_paraphrase_cases.jsonl"
"""Colloquial handbook questions and near misses written after the labelled set (same fields)."""
DOCS_CASES_FILE = CASES_DIR / "docs_cases.jsonl"
"""The real-documentation questions (same fields as the handbook's, plus ``absent_phrase``)."""
DOCS_DATASET = "vue-docs"
"""The documentation dataset's folder name in the shared datasets folder."""
HOLDOUT_CASES_FILE = CASES_DIR / "holdout_docs_cases.jsonl"
"""The hold-out documentation questions (APISIX docs; same fields, plus ``absent_check``)."""
HOLDOUT_DATASET = "apisix-docs"
"""The hold-out documentation dataset's folder name in the shared datasets folder."""
HOLDOUT_ANTD_CASES_FILE = CASES_DIR / "holdout_antd_cases.jsonl"
"""The Ant Design hold-out questions (same fields, plus ``direction``, ``table_cell``, ``absent_check``)."""
HOLDOUT_ANTD_DATASET = Path(__file__).resolve().parent / "datasets" / "antd-docs"
"""The Ant Design pages, in the repository (``pages/en``, ``pages/zh``; README.md, LICENSE)."""
HOLDOUT_ANTD_SETTINGS = ("same", "en->zh", "zh->en")
XQUAD_DATASET = "xquad"
"""A folder holding google-deepmind/xquad's ``xquad.en.json`` and ``xquad.zh.json``."""
XQUAD_SETTINGS = ("en", "zh", "zh->en", "en->zh")


@dataclass(frozen=True)
class AgentCase:
    """One question of a protocol and what a good reply to it holds."""

    id: str
    question: str
    lang: str
    """The group figures are reported under: the question's language, or (cross-language) its direction."""
    absent: bool
    """True when the store holds no answer: the reply must be a refusal."""
    gold_sources: tuple[str, ...] = ()
    """Source ids of which at least one must be cited (present cases)."""
    answers: tuple[str, ...] = ()
    """Answer strings, any of which (CMRC) or all of which (handbook, `all_answers`) must be in the answer."""
    all_answers: bool = False
    excludes: tuple[str, ...] = ()
    """Strings a correct answer must not hold (the formats protocol: other rows of the asked table)."""


@dataclass
class AgentProtocol:
    """A protocol's store contents and cases; `documents` None = index `paths` (files) instead."""

    name: str
    cases: list[AgentCase]
    documents: list[Document] | None = None
    paths: list[Path] = field(default_factory=list)


def passage_part(doc_id: str) -> Part:
    """The part a passage belongs to: ``tune`` or ``test`` by the first byte of the SHA-1 of its id."""
    return "tune" if hashlib.sha1(doc_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise EvalError(f"{path} not found: give the dataset folder (BEIR format)")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, list[str]]:
    if not path.is_file():
        raise EvalError(f"{path} not found: the dataset has no such qrels split")
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")[:3]
        if int(score) > 0:
            out.setdefault(qid, []).append(did)
    return out


def _doc_id(doc: Document) -> str:
    """The dataset's own id of a corpus document (its ``_id``, kept as ``source_id``)."""
    return str(doc.meta["source_id"])


def _check_n(n: int, dataset: Path) -> None:
    if not (dataset / "corpus.jsonl").is_file():
        raise EvalError(f"{dataset / 'corpus.jsonl'} not found: give the dataset folder (BEIR format)")
    if n < 2:
        raise EvalError(f"--n must be >= 2 (half the questions are asked with their gold removed), got {n}")


def cmrc_protocol(
    dataset: Path, part: Part = "test", n: int = 200, seed: int = 0, distractors: int | None = None
) -> AgentProtocol:
    """The CMRC 2018 protocol over `dataset` (corpus.jsonl, queries.jsonl, answers.jsonl, qrels/test.tsv).

    `distractors` None keeps every other passage of the part in the store; a number keeps that many
    (seeded sample), for CI-sized runs.
    """
    _check_n(n, dataset)
    corpus = [d for d in read_beir_corpus(dataset / "corpus.jsonl") if passage_part(_doc_id(d)) == part]
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(dataset / "queries.jsonl")}
    answers = {str(a["_id"]): [str(x) for x in a["answers"]] for a in _jsonl(dataset / "answers.jsonl")}
    by_passage: dict[str, list[str]] = {}
    for qid, gold in _qrels(dataset / "qrels" / "test.tsv").items():
        for did in gold:
            by_passage.setdefault(did, []).append(qid)
    rng = random.Random(seed)
    candidates = sorted(_doc_id(d) for d in corpus if by_passage.get(_doc_id(d)))
    sample = rng.sample(candidates, min(n, len(candidates)))
    absent = set(rng.sample(sample, len(sample) // 2))
    cases = []
    for did in sample:
        qid = rng.choice(sorted(by_passage[did]))
        cases.append(
            AgentCase(
                id=qid,
                question=queries[qid],
                lang="zh",
                absent=did in absent,
                gold_sources=(did,),
                answers=tuple(answers.get(qid, [])),
            )
        )
    kept = [d for d in corpus if _doc_id(d) not in absent]
    if distractors is not None:
        others = sorted(_doc_id(d) for d in kept if _doc_id(d) not in set(sample))
        chosen = set(sample) | set(rng.sample(others, min(distractors, len(others))))
        kept = [d for d in kept if _doc_id(d) in chosen]
    return AgentProtocol("cmrc", cases, documents=kept)


def scifact_protocol(
    dataset: Path,
    split: Literal["train", "test"] = "test",
    n: int = 100,
    distractors: int = 400,
    seed: int = 0,
) -> AgentProtocol:
    """The SciFact protocol: `n` claims of `split`, half with their gold abstracts removed."""
    _check_n(n, dataset)
    qrels = _qrels(dataset / ("train/qrels.tsv" if split == "train" else "qrels/test.tsv"))
    qfile = dataset / ("train/queries.jsonl" if split == "train" else "queries.jsonl")
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(qfile)}
    rng = random.Random(seed)
    qids = rng.sample(sorted(q for q in qrels if q in queries), min(n, len(qrels)))
    absent = set(rng.sample(qids, len(qids) // 2))
    removed = {d for q in absent for d in qrels[q]}
    corpus = {_doc_id(d): d for d in read_beir_corpus(dataset / "corpus.jsonl")}
    wanted = {d for q in qids if q not in absent for d in qrels[q]}
    others = sorted(set(corpus) - wanted - removed)
    wanted |= set(rng.sample(others, min(distractors, len(others))))
    cases = [
        AgentCase(id=q, question=queries[q], lang="en", absent=q in absent, gold_sources=tuple(qrels[q]))
        for q in qids
    ]
    return AgentProtocol("scifact", cases, documents=[corpus[d] for d in sorted(wanted) if d in corpus])


def _labelled_cases(path: Path, part: Part | Literal["all"], group: str = "lang") -> list[AgentCase]:
    """The answerable / unanswerable cases of `part` in a labelled JSONL, reported under field `group`."""
    return [
        AgentCase(
            id=str(r["id"]),
            question=str(r["question"]),
            lang=str(r[group]),
            absent=r["kind"] == "unanswerable",
            gold_sources=tuple(str(s) for s in r["expected_sources"]),
            answers=tuple(str(s) for s in r["answer_contains"]),
            all_answers=True,
        )
        for r in _jsonl(path)
        if r["kind"] in ("answerable", "unanswerable") and (part == "all" or r["split"] == part)
    ]


def handbook_protocol(handbook: Path, part: Part | Literal["all"] = "test") -> AgentProtocol:
    """The labelled answerable / unanswerable handbook cases of `part` over the handbook folder."""
    return AgentProtocol("handbook", _labelled_cases(CASES_FILE, part), paths=[handbook])


def handbook_cross_protocol(handbook: Path) -> AgentProtocol:
    """The handbook's tune cases asked in the other language, grouped by direction (``en->zh``...)."""
    return AgentProtocol(
        "handbook-cross", _labelled_cases(CROSS_CASES_FILE, "all", group="direction"), paths=[handbook]
    )


def handbook_paraphrase_protocol(handbook: Path, part: Part | Literal["all"] = "test") -> AgentProtocol:
    """The paraphrased (colloquial) handbook cases of `part` over the handbook folder."""
    return AgentProtocol(
        "handbook-paraphrase", _labelled_cases(PARAPHRASE_CASES_FILE, part), paths=[handbook]
    )


def docs_protocol(
    dataset: Path, part: Part | Literal["all"] = "test", cases: Path = DOCS_CASES_FILE, name: str = "docs"
) -> AgentProtocol:
    """The real-documentation `cases` of `part` over ``dataset/pages`` (source ids like ``en/guide/x.md``)."""
    pages = dataset / "pages"
    if not pages.is_dir():
        raise EvalError(
            f"{pages} not found: give the documentation dataset folder (README.md, LICENSE, pages/)"
        )
    return AgentProtocol(name, _labelled_cases(cases, part), paths=[pages])


def holdout_antd_protocol(
    part: Part | Literal["all"] = "test", setting: str = "same", dataset: Path = HOLDOUT_ANTD_DATASET
) -> AgentProtocol:
    """The Ant Design hold-out's cases of `part` in `setting`, figures grouped by ``direction``.

    ``same``: the English and Chinese questions over ``dataset/pages`` (both languages; source ids like
    ``en/button.md``). ``en->zh`` / ``zh->en``: the cross-language questions of that direction over
    the gold language's folder alone (``pages/zh`` for ``en->zh``; source ids like ``button.md``, so
    the gold ids lose their language prefix). Every case is in the ``test`` part.
    """
    if setting not in HOLDOUT_ANTD_SETTINGS:
        raise EvalError(f"unknown hold-out setting {setting!r}; valid: {', '.join(HOLDOUT_ANTD_SETTINGS)}")
    pages = dataset / "pages"
    if not pages.is_dir():
        raise EvalError(f"{pages} not found: give the Ant Design dataset folder (README.md, LICENSE, pages/)")
    cases = _labelled_cases(HOLDOUT_ANTD_CASES_FILE, part, group="direction")
    if setting == "same":
        return AgentProtocol("holdout-antd", [c for c in cases if "->" not in c.lang], paths=[pages])
    gold = setting.split("->")[1]
    cross = [
        replace(c, gold_sources=tuple(s.removeprefix(f"{gold}/") for s in c.gold_sources))
        for c in cases
        if c.lang == setting
    ]
    return AgentProtocol(f"holdout-antd-{setting}", cross, paths=[pages / gold])


def docs_cross_protocol(
    dataset: Path, asked: str, part: Part | Literal["all"] = "tune", cases: Path = DOCS_CASES_FILE
) -> AgentProtocol:
    """The documentation cases of `part` in language `asked` (en, zh), asked over the other language's pages.

    The store holds only ``pages/<other>`` (source ids relative to it: ``guide/x.md``), so an answer
    must be read across languages; a case's gold page ``en/guide/x.md`` becomes ``guide/x.md`` of the
    other language. An answerable case is kept when every answer string is in that page (an option
    name, a number, a default written the same way in both); a near miss is kept as it is (its fact
    is in no page). Cases are grouped by direction (``en->zh``: an English question over Chinese pages).
    """
    if asked not in ("en", "zh"):
        raise EvalError(f"unknown question language {asked!r}; valid: en, zh")
    other = "zh" if asked == "en" else "en"
    pages = dataset / "pages" / other
    if not pages.is_dir():
        raise EvalError(
            f"{pages} not found: give the documentation dataset folder (README.md, LICENSE, pages/)"
        )
    kept = []
    for case in _labelled_cases(cases, part):
        if case.lang != asked:
            continue
        gold = tuple(s.split("/", 1)[1] for s in case.gold_sources)
        if not case.absent:
            texts = [(pages / s).read_text(encoding="utf-8") for s in gold if (pages / s).is_file()]
            if not texts or not all(any(a in t for t in texts) for a in case.answers):
                continue
        kept.append(
            AgentCase(
                id=f"x-{case.id}",
                question=case.question,
                lang=f"{asked}->{other}",
                absent=case.absent,
                gold_sources=gold,
                answers=case.answers,
                all_answers=True,
            )
        )
    return AgentProtocol(f"docs-cross-{asked}", kept, paths=[pages])


def xquad_protocol(folder: Path, setting: str, n: int = 30, seed: int = 0) -> AgentProtocol:
    """`n` seeded questions of XQuAD `setting` over its passage language's paragraphs (all answerable).

    A paragraph's source id is ``xquad-<article>-<paragraph>`` (the same in both languages).
    """
    if setting not in XQUAD_SETTINGS:
        raise EvalError(f"unknown XQuAD setting {setting!r}; valid: {', '.join(XQUAD_SETTINGS)}")
    asked, passages = (setting, setting) if "->" not in setting else setting.split("->")
    data: dict[str, Any] = {}
    for lang in {asked, passages}:
        path = folder / f"xquad.{lang}.json"
        if not path.is_file():
            raise EvalError(f"{path} not found: give the folder holding google-deepmind/xquad's files")
        data[lang] = json.loads(path.read_text(encoding="utf-8"))["data"]
    questions = {
        qa["id"]: qa["question"] for article in data[asked] for p in article["paragraphs"] for qa in p["qas"]
    }
    documents = []
    rows: list[tuple[str, str, tuple[str, ...]]] = []
    for a, article in enumerate(data[passages]):
        for k, p in enumerate(article["paragraphs"]):
            source = f"xquad-{a:02d}-{k:02d}"
            meta = {"source_id": source, "source": source, "title": article["title"]}
            documents.append(Document(content=p["context"], meta=meta))
            rows.extend((qa["id"], source, tuple(x["text"] for x in qa["answers"])) for qa in p["qas"])
    rng = random.Random(seed)
    cases = [
        AgentCase(qid, questions[qid], setting, absent=False, gold_sources=(source,), answers=golds)
        for qid, source, golds in rng.sample(sorted(rows), min(n, len(rows)))
    ]
    return AgentProtocol(f"xquad-{setting}", cases, documents=documents)
