"""Public extractive question-answering data for the reader (issue 39): sources, licences, rebuild.

Every source is a file in a public GitHub repository, pinned to a commit, read out of the snapshot that
the search tool's ``fetch`` leaves under ``<mirror>/<owner>+<name>/repo`` (a bare git directory) or
``<mirror>/<owner>+<name>/repo/.git`` (a clone with a work tree): ``git --git-dir <that> show
<commit>:<path>``. Nothing is downloaded here. The data stays outside the repository.

Each record written is one question over one context::

    {"id", "source", "lang", "title", "context", "question",
     "answers": [{"text", "start"}], "is_impossible"}

``lang`` is the language of the context; in the cross-language files (``bipar_cross_*``) the question
is in the other language (the file name says which). Every answer satisfies
``context[start:start + len(text)] == text``: an answer whose offset is off is re-found in the context
(nearest occurrence to the given offset) or dropped, and the counts say how many.

Kinds: ``train`` files go to ``--out``; ``extra`` (answer-sentence sets recast as spans, a different
granularity) to ``--extra-out``; ``eval`` (SQuAD 2.0 dev, whole, never for training) to ``--eval-out``
(with the official-format ``squad2_dev.json`` beside it for ``evaluate-v2.0.py``).

Guards against training on what is measured: English records whose title is one of the 48 SQuAD 1.1
dev articles (the XQuAD articles) are dropped; so is any context equal to a SQuAD 2.0 dev context (that
source is always read, written only with ``--eval-out``) or to a CMRC 2018 dev passage of the ``test``
part (`cmrc_part`); and a (context, question) pair already written is dropped as a duplicate.

Traditional Chinese (DRCD) is converted to simplified with the PyPI package
``opencc-python-reimplemented`` (``OpenCC("t2s")``), imported only when DRCD is built.

Run::

    python -m benchmarks.reader_sources --mirror /work/.mirror --out /work/data/reader/train \
        --extra-out /work/data/reader/extra --eval-out /work/data/reader/eval
"""

from __future__ import annotations

import argparse
import ast
import csv
import dataclasses
import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

Record = dict[str, Any]
Reader = Callable[[str], bytes]

# The 48 articles of the SQuAD 1.1 dev set (rajpurkar/SQuAD-explorer, gh-pages, explore/1.1/dev/):
# XQuAD translates 240 of their paragraphs, so no English training record may come from them.
XQUAD_TITLES = frozenset(
    t.replace("_", " ").casefold()
    for t in (
        "1973_oil_crisis",
        "Amazon_rainforest",
        "American_Broadcasting_Company",
        "Apollo_program",
        "Black_Death",
        "Chloroplast",
        "Civil_disobedience",
        "Computational_complexity_theory",
        "Construction",
        "Ctenophora",
        "Doctor_Who",
        "Economic_inequality",
        "European_Union_law",
        "Force",
        "French_and_Indian_War",
        "Fresno,_California",
        "Genghis_Khan",
        "Geology",
        "Harvard_University",
        "Huguenot",
        "Immune_system",
        "Imperialism",
        "Intergovernmental_Panel_on_Climate_Change",
        "Islamism",
        "Jacksonville,_Florida",
        "Kenya",
        "Martin_Luther",
        "Newcastle_upon_Tyne",
        "Nikola_Tesla",
        "Normans",
        "Oxygen",
        "Packet_switching",
        "Pharmacy",
        "Prime_number",
        "Private_school",
        "Rhine",
        "Scottish_Parliament",
        "Sky_(United_Kingdom)",
        "Southern_California",
        "Steam_engine",
        "Super_Bowl_50",
        "Teacher",
        "United_Methodist_Church",
        "University_of_Chicago",
        "Victoria_(Australia)",
        "Victoria_and_Albert_Museum",
        "Warsaw",
        "Yuan_dynasty",
    )
)


class SourceError(RuntimeError):
    """A snapshot, commit or file of a source is missing, or its content is not what the converter expects."""


def cmrc_part(doc_id: str) -> str:
    """The CMRC agent-protocol part of a passage id: same rule as ``eval.agent_cases.passage_part``."""
    return "tune" if hashlib.sha1(doc_id.encode("utf-8")).digest()[0] % 2 == 0 else "test"


@dataclass
class Stats:
    """What one source produced and what it dropped (counts by reason)."""

    contexts: int = 0
    questions: int = 0
    answerable: int = 0
    unanswerable: int = 0
    answers_refound: int = 0
    answers_trimmed: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        """Plain counts, for printing and the manifest."""
        return {
            "contexts": self.contexts,
            "questions": self.questions,
            "answerable": self.answerable,
            "unanswerable": self.unanswerable,
            "answers_refound": self.answers_refound,
            "answers_trimmed": self.answers_trimmed,
            "dropped": dict(sorted(self.dropped.items())),
        }


@dataclass(frozen=True)
class Source:
    """One output file: its repository, pinned commit, input paths, licence and converter."""

    name: str
    kind: str  # "train" | "extra" | "eval"
    repo: str
    commit: str
    paths: tuple[str, ...]
    licence: str
    citation: str
    convert: Callable[[Source, Reader, Stats], Iterator[Record]]
    note: str = ""


# --- span checks ------------------------------------------------------------------------------------


def _fix_answer(context: str, text: str, start: int, stats: Stats) -> tuple[str, int] | None:
    """The answer as a verified (text, start), or None when its text is not in the context."""
    if text and start >= 0 and context[start : start + len(text)] == text:
        return text, start
    stripped = text.strip()
    if stripped and stripped != text:
        lead = len(text) - len(text.lstrip())
        if start >= 0 and context[start + lead : start + lead + len(stripped)] == stripped:
            stats.answers_trimmed += 1
            return stripped, start + lead
        text = stripped
    if not text:
        return None
    hits = [m.start() for m in re.finditer(re.escape(text), context)]
    if not hits:
        return None
    stats.answers_refound += 1
    return text, min(hits, key=lambda h: abs(h - start))


def _record(
    source: Source,
    stats: Stats,
    *,
    qid: str,
    lang: str,
    title: str,
    context: str,
    question: str,
    answers: Iterable[tuple[str, int]],
    impossible: bool,
) -> Record | None:
    """A checked record, or None (counted in `stats.dropped`) when it cannot be used."""
    question = question.strip()
    if not question or not context.strip():
        stats.dropped["empty question or context"] += 1
        return None
    kept: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    if not impossible:
        for text, start in answers:
            fixed = _fix_answer(context, text, start, stats)
            if fixed is None:
                stats.dropped["answer not in context (answer)"] += 1
                continue
            if fixed not in seen:
                seen.add(fixed)
                kept.append({"text": fixed[0], "start": fixed[1]})
        if not kept:
            stats.dropped["no answer found in context (question)"] += 1
            return None
    stats.questions += 1
    if impossible:
        stats.unanswerable += 1
    else:
        stats.answerable += 1
    return {
        "id": f"{source.name}:{qid}",
        "source": source.name,
        "lang": lang,
        "title": title,
        "context": context,
        "question": question,
        "answers": kept,
        "is_impossible": impossible,
    }


# --- converters --------------------------------------------------------------------------------------


def _squad(
    source: Source,
    read: Reader,
    stats: Stats,
    *,
    lang: str,
    to_text: Callable[[str], str] | None = None,
    keep_paragraph: Callable[[dict[str, Any]], bool] | None = None,
) -> Iterator[Record]:
    """SQuAD-format files (``data[].paragraphs[].qas[]``); `to_text` converts script (t2s)."""
    for path in source.paths:
        # Ids repeat across the files of some sets (CAIL dev and test): qualify them by file.
        prefix = f"{Path(path).stem}/" if len(source.paths) > 1 else ""
        for article in json.loads(read(path))["data"]:
            title = str(article.get("title") or article.get("id") or article.get("caseid") or "")
            for pi, para in enumerate(article["paragraphs"]):
                if keep_paragraph is not None and not keep_paragraph(para):
                    stats.dropped["paragraph outside the allowed part"] += len(para["qas"])
                    continue
                orig = str(para["context"])
                context = to_text(orig) if to_text else orig
                same_length = len(context) == len(orig)
                n_before = stats.questions
                for qa in para["qas"]:
                    impossible = str(qa.get("is_impossible", "false")).lower() == "true"
                    answers: list[tuple[str, int]] = []
                    yes_no = False
                    for a in qa.get("answers") or []:
                        text, start = str(a["text"]), int(a["answer_start"])
                        if text in ("YES", "NO") and start < 0:
                            yes_no = True
                            continue
                        if to_text:
                            # Script conversion: when it kept the context's length and the original
                            # offset held, the converted span is the same slice; otherwise re-find.
                            if same_length and orig[start : start + len(text)] == text:
                                text = context[start : start + len(text)]
                            else:
                                text = to_text(text)
                        answers.append((text, start))
                    if not impossible and not answers:
                        stats.dropped["yes/no answer, not a span" if yes_no else "no answer given"] += 1
                        continue
                    question = str(qa["question"])
                    rec = _record(
                        source,
                        stats,
                        qid=prefix + str(qa.get("id") or f"{title}/{pi}/{len(answers)}"),
                        lang=lang,
                        title=to_text(title) if to_text else title,
                        context=context,
                        question=to_text(question) if to_text else question,
                        answers=answers,
                        impossible=impossible,
                    )
                    if rec is not None:
                        yield rec
                if stats.questions > n_before:
                    stats.contexts += 1


def _squad_en(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    return _squad(source, read, stats, lang="en")


def _squad_zh(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    return _squad(source, read, stats, lang="zh")


def _mlqa_cross(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """MLQA's cross-language dev files: the first path's question in one language over the other's passage.

    The second path is the English-context file of the same question ids; its English article titles
    guard the Chinese-context records too (the English ones are guarded by `convert` itself), so no
    record of either direction comes from a SQuAD 1.1 dev / XQuAD article.
    """
    english_title: dict[str, str] = {}
    for path in source.paths[1:]:
        for article in json.loads(read(path))["data"]:
            for para in article["paragraphs"]:
                for qa in para["qas"]:
                    english_title[str(qa["id"])] = str(article.get("title") or "")
    lang = "zh" if "context-zh" in source.paths[0] else "en"
    only = dataclasses.replace(source, paths=source.paths[:1])
    for rec in _squad(only, read, stats, lang=lang):
        qid = rec["id"].split(":", 1)[1]
        if english_title.get(qid, "").replace("_", " ").casefold() in XQUAD_TITLES:
            stats.dropped["guard: SQuAD 1.1 dev / XQuAD article"] += 1  # `convert` recounts the rest
            continue
        yield rec


def _covid_qa(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """COVID-QA: SQuAD format, articles untitled (the paragraph's ``document_id`` is the title)."""
    for path in source.paths:
        doc = json.loads(read(path))
        for article in doc["data"]:
            for para in article["paragraphs"]:
                article.setdefault("title", f"CORD-19 {para.get('document_id', '')}".strip())
    # Re-serialise so the generic reader sees titles.
    return _squad(source, lambda p: json.dumps(doc).encode(), stats, lang="en")


def _cmrc_dev_tune(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """CMRC 2018 dev, only the passages of the agent protocol's ``tune`` part."""
    return _squad(source, read, stats, lang="zh", keep_paragraph=lambda p: cmrc_part(str(p["id"])) == "tune")


def _drcd(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """DRCD (traditional Chinese) converted to simplified with opencc-python-reimplemented ``t2s``."""
    try:
        from opencc import OpenCC  # type: ignore[import-not-found]
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SourceError("DRCD needs the PyPI package opencc-python-reimplemented (t2s conversion)") from exc
    t2s = OpenCC("t2s").convert
    return _squad(source, read, stats, lang="zh", to_text=t2s)


def _subjqa(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """SubjQA CSVs: one row per (question, review); ``ANSWERNOTFOUND`` rows are unanswerable."""
    marker = " ANSWERNOTFOUND"
    for path in source.paths:
        domain, split = path.split("/")[1], Path(path).stem
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        for row in csv.DictReader(io.StringIO(read(path).decode("utf-8"))):
            review = row["review"]
            context = review[: -len(marker)] if review.endswith(marker) else review
            key = (row["review_id"], row["question"].strip())
            g = groups.setdefault(
                key, {"context": context, "item": row["item_id"], "answers": [], "rows": 0, "found": 0}
            )
            g["rows"] += 1
            if row["human_ans_spans"] == "ANSWERNOTFOUND":
                continue
            g["found"] += 1
            start, end = ast.literal_eval(row["human_ans_indices"])
            g["answers"].append((review[int(start) : int(end)], int(start)))
        contexts: set[str] = set()
        for (review_id, question), g in groups.items():
            rec = _record(
                source,
                stats,
                qid=f"{domain}/{split}/{review_id}/{hashlib.sha1(question.encode()).hexdigest()[:10]}",
                lang="en",
                title=f"{domain} review of {g['item']}",
                context=g["context"],
                question=question,
                answers=g["answers"],
                impossible=g["found"] == 0,
            )
            if rec is not None:
                contexts.add(review_id)
                yield rec
        stats.contexts += len(contexts)


def _qed(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """QED (Natural Questions paragraphs): the original NQ short answers, character offsets."""
    contexts: set[str] = set()
    for path in source.paths:
        for line in read(path).decode("utf-8").splitlines():
            if not line.strip():
                continue
            ex = json.loads(line)
            context = str(ex["paragraph_text"])
            answers = [
                (str(a["string"]), int(a["start"]))
                for group in ex.get("original_nq_answers", [])
                for a in group
            ]
            if not answers:
                stats.dropped["no short answer"] += 1
                continue
            rec = _record(
                source,
                stats,
                qid=str(ex["example_id"]),
                lang="en",
                title=str(ex.get("title_text", "")),
                context=context,
                question=str(ex["question_text"]),
                answers=answers,
                impossible=False,
            )
            if rec is not None:
                contexts.add(context)
                yield rec
    stats.contexts += len(contexts)


def _wikiqa(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """WikiQA: the candidate sentences of a question, joined, are the context; a correct one is the span.

    A question with no correct sentence is unanswerable (WikiQA's "answer triggering" case). The train
    part is the raw ``WikiQA-train.txt`` (question, sentence, label; one question's rows are
    consecutive); dev and test are the raw TSVs.
    """
    for path in source.paths:
        text = read(path).decode("utf-8")
        groups: dict[str, dict[str, Any]] = {}
        if path.endswith(".tsv"):
            for row in csv.DictReader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE):
                g = groups.setdefault(
                    row["QuestionID"], {"q": row["Question"], "title": row["DocumentTitle"], "sents": []}
                )
                g["sents"].append((row["Sentence"], row["Label"] == "1"))
        else:
            last_q, n = None, 0
            for line in text.splitlines():
                parts = line.split("\t")
                if len(parts) != 3:
                    stats.dropped["malformed line"] += 1
                    continue
                if parts[0] != last_q:
                    n += 1
                    last_q = parts[0]
                g = groups.setdefault(f"train-{n}", {"q": parts[0], "title": "", "sents": []})
                g["sents"].append((parts[1], parts[2] == "1"))
        for qid, g in groups.items():
            context, answers = "", []
            for sent, good in g["sents"]:
                sent = sent.strip()
                if context:
                    context += " "
                if good:
                    answers.append((sent, len(context)))
                context += sent
            rec = _record(
                source,
                stats,
                qid=qid,
                lang="en",
                title=g["title"],
                context=context,
                question=g["q"],
                answers=answers,
                impossible=not answers,
            )
            if rec is not None:
                stats.contexts += 1
                yield rec


def _json_stream(data: bytes) -> Iterator[dict[str, Any]]:
    """The JSON objects of a file holding them back to back (``{...}{...}``), as cPromptSource keeps them."""
    text, dec, i = data.decode("utf-8"), json.JSONDecoder(), 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        obj, i = dec.raw_decode(text, i)
        yield obj


def _drcd_stream(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """DRCD train part as cPromptSource keeps it: an article an object, one paragraph, one question; t2s."""

    def article(obj: dict[str, Any]) -> dict[str, Any]:
        para, qa = obj["paragraphs"], obj["paragraphs"]["qas"]
        answers = [
            {"text": t, "answer_start": a}
            for t, a in zip(qa["answers"]["text"], qa["answers"]["answer_starts"], strict=True)
        ]
        qas = [{"id": f"{para.get('id') or obj['id']}-q", "question": qa["question"], "answers": answers}]
        return {
            "id": obj["id"],
            "title": obj["title"],
            "paragraphs": [{"context": para["context"], "qas": qas}],
        }

    wrapped = {"data": [article(obj) for path in source.paths for obj in _json_stream(read(path))]}
    payload = json.dumps(wrapped, ensure_ascii=False).encode("utf-8")
    return _drcd(source, lambda _path: payload, stats)


def _dureader(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """DuReader robust / checklist as cPromptSource keeps them: flat objects, answers as lists.

    That copy lost the offsets (``answer_start`` is -1 throughout), so each answer is found in the context
    (counted as re-found); an empty answer text is DuReader's "no answer".
    """
    contexts: set[str] = set()
    for path in source.paths:
        for obj in _json_stream(read(path)):
            texts = [str(t) for t in obj["answers"]["text"]]
            starts = [int(x) for x in obj["answers"]["answer_start"]]
            impossible = not any(t.strip() for t in texts)
            rec = _record(
                source,
                stats,
                qid=str(obj["id"]),
                lang="zh",
                title="",
                context=str(obj["context"]),
                question=str(obj["question"]),
                answers=[(t, s) for t, s in zip(texts, starts, strict=True) if t.strip()],
                impossible=impossible,
            )
            if rec is not None:
                contexts.add(rec["context"])
                yield rec
    stats.contexts += len(contexts)


_XLSX = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def _xlsx_rows(data: bytes) -> list[list[str]]:
    """The first sheet of an .xlsx as rows of strings (stdlib only: shared strings and inline values)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        shared = [
            "".join(t.text or "" for t in si.iter(f"{_XLSX}t"))
            for si in ElementTree.fromstring(z.read("xl/sharedStrings.xml")).iter(f"{_XLSX}si")
        ]
        sheet = ElementTree.fromstring(z.read("xl/worksheets/sheet1.xml"))
    rows: list[list[str]] = []
    for row in sheet.iter(f"{_XLSX}row"):
        cells: dict[int, str] = {}
        for c in row.iter(f"{_XLSX}c"):
            col = 0
            for ch in re.match(r"[A-Z]+", c.get("r", "A"))[0]:  # type: ignore[index]
                col = col * 26 + ord(ch) - 64
            v = c.find(f"{_XLSX}v")
            value = "" if v is None or v.text is None else v.text
            if c.get("t") == "s":
                value = shared[int(value)]
            elif c.get("t") == "inlineStr":
                value = "".join(t.text or "" for t in c.iter(f"{_XLSX}t"))
            cells[col - 1] = value
        rows.append([cells.get(i, "") for i in range(max(cells) + 1)] if cells else [])
    return rows


def _squad2_dev_xlsx(source: Source, read: Reader, stats: Stats) -> Iterator[Record]:
    """SQuAD 2.0 dev from a full spreadsheet copy (11,873 questions).

    The spreadsheet keeps each context as the Python list of its lines and the answers and offsets as
    Python lists (a single answer as a bare value); they are read back with `ast.literal_eval`.
    Checked against the CS224N half of the official dev set (chrischute/squad ``data/dev-v2.0.json``):
    all 6,078 of its questions have the same context, question and answers here.
    """
    rows = _xlsx_rows(read(source.paths[0]))
    header = rows[0]
    col = {
        name: header.index(name)
        for name in ("title", "context", "question", "ids", "answers", "answer_start")
    }
    col["is_impossible"] = header.index("is_impossible")
    contexts: set[str] = set()
    for row in rows[1:]:
        if not row:
            continue
        row = row + [""] * (len(header) - len(row))
        impossible = row[col["is_impossible"]].strip().lower() in ("true", "1")
        answers: list[tuple[str, int]] = []
        if not impossible:
            texts, starts = row[col["answers"]], row[col["answer_start"]]
            if texts.startswith("["):
                pairs = zip(ast.literal_eval(texts), ast.literal_eval(starts), strict=True)
            else:  # one answer is stored as a bare value
                pairs = zip([texts], [starts], strict=True)
            answers = [(str(t), int(s)) for t, s in pairs]
        # The context cell is the Python list of the context's lines.
        context = row[col["context"]]
        if context.startswith(("['", '["')):
            context = "\n".join(ast.literal_eval(context))
        rec = _record(
            source,
            stats,
            qid=row[col["ids"]],
            lang="en",
            title=row[col["title"]],
            context=context,
            question=row[col["question"]],
            answers=answers,
            impossible=impossible,
        )
        if rec is not None:
            contexts.add(rec["context"])
            yield rec
    stats.contexts = len(contexts)


# --- the table ---------------------------------------------------------------------------------------

_CC_BY_SA_3 = "CC BY-SA 3.0"
# MLQA (Lewis et al. 2020) en/zh dev files, in a repository that copied xtreme's download (the
# commit before its data was removed; the next one holds LFS pointers only). The test files are over
# 4 MiB and absent from the snapshot; they would be for measuring only anyway.
_MLQA = "wuhjie/few_shots_that_matters_wu"
_MLQA_COMMIT = "6bfe6324e428ec21a777b5543cd8e50ec82dcb3c"
_MLQA_DIR = "data/mlqa/MLQA_V1/dev"
_MLQA_LICENCE = "CC BY-SA 3.0 (MLQA's own README; the copy carries no licence file)"
_MLQA_CITE = (
    "Lewis, Oguz, Rinott, Riedel, Schwenk. MLQA: Evaluating Cross-lingual Extractive Question Answering. "
    "ACL 2020."
)
_BIPAR = "sharejing/BiPaR"
_BIPAR_COMMIT = "f6f01ee166871bf8a9b47afeb5f418f48bc61815"
_BIPAR_LICENCE = "CC BY-NC 4.0 (NON-COMMERCIAL; README 'Data License')"
_BIPAR_CITE = (
    "Jing, Xiong, Yan. BiPaR: A Bilingual Parallel Dataset for Multilingual and Cross-lingual Reading "
    "Comprehension on Novels. EMNLP-IJCNLP 2019."
)
_SHIFTS = "modestyachts/squadshifts-website"
_SHIFTS_COMMIT = "b7cc4d50af791c36c49417fb94dd739d6a9e7bef"
_SHIFTS_LICENCE = "CC BY 4.0 (per the dataset's Hugging Face card; the website repo states none)"
_SHIFTS_CITE = (
    "Miller, Krauth, Recht, Schmidt. The Effect of Natural Distribution Shift on Question Answering "
    "Models. ICML 2020."
)
_CPS = "YFHuangxxxx/cPromptSource"
_CPS_COMMIT = "f63a3234e2f103b396dd3bac00219efcbc437229"
_DUREADER_LICENCE = (
    "Baidu LUGE (千言) dataset; the copy carries no licence file (baidu/DuReader, its home, is Apache-2.0); "
    "check LUGE's terms before commercial use"
)
_CMRC_CITE = (
    "Cui et al. A Span-Extraction Dataset for Chinese Machine Reading Comprehension. EMNLP-IJCNLP 2019."
)

SOURCES: tuple[Source, ...] = (
    # English
    Source(
        name="squadshifts_new_wiki",
        kind="train",
        repo=_SHIFTS,
        commit=_SHIFTS_COMMIT,
        paths=("datasets/new_wiki_v1.0.json",),
        licence=_SHIFTS_LICENCE,
        citation=_SHIFTS_CITE,
        convert=_squad_en,
        note="SQuAD-style questions on 48 newer Wikipedia articles (none of them a SQuAD dev/XQuAD article).",
    ),
    Source(
        name="squadshifts_reddit",
        kind="train",
        repo=_SHIFTS,
        commit=_SHIFTS_COMMIT,
        paths=("datasets/reddit_v1.0.json",),
        licence=_SHIFTS_LICENCE,
        citation=_SHIFTS_CITE,
        convert=_squad_en,
        note="Reddit posts.",
    ),
    Source(
        name="squadshifts_amazon",
        kind="train",
        repo=_SHIFTS,
        commit=_SHIFTS_COMMIT,
        paths=("datasets/amazon_reviews_v1.0.json",),
        licence=_SHIFTS_LICENCE,
        citation=_SHIFTS_CITE,
        convert=_squad_en,
        note="Amazon product reviews. nyt_v1.0.json is over 4 MiB.",
    ),
    Source(
        name="subjqa",
        kind="train",
        repo="megagonlabs/SubjQA",
        commit="6ea88c77802798b4a09a8218bd6bbde5b9cf4278",
        paths=tuple(
            f"SubjQA/{d}/splits/{s}.csv"
            for d in ("books", "electronics", "grocery", "movies", "restaurants", "tripadvisor")
            for s in ("train", "dev", "test")
            if not (d in ("books", "movies") and s == "train")
        ),
        licence=(
            "Per domain, the licence of the underlying review data (Amazon reviews, TripAdvisor, Yelp): "
            "research use; Yelp's terms are non-commercial"
        ),
        citation=(
            "Bjerva, Bhutani, Golshan, Tan, Augenstein. SubjQA: A Dataset for Subjectivity and Review "
            "Comprehension. EMNLP 2020."
        ),
        convert=_subjqa,
        note="Review QA with real unanswerable questions. books/movies train.csv are over 4 MiB.",
    ),
    Source(
        name="covid_qa",
        kind="train",
        repo="deepset-ai/COVID-QA",
        commit="fb2eb5e249618457e5359806601086c635c8eb8f",
        paths=("data/question-answering/200423_covidQA.json",),
        licence="Apache-2.0 (repository LICENSE); contexts are CORD-19 papers",
        citation=(
            "Möller et al. COVID-QA: A Question Answering Dataset for COVID-19. ACL 2020 NLP-COVID workshop."
        ),
        convert=_covid_qa,
        note=(
            "An earlier (2020-04-23) release of COVID-QA.json, which is over 4 MiB. Contexts are whole "
            "papers."
        ),
    ),
    Source(
        name="qed_dev",
        kind="train",
        repo="google-research-datasets/QED",
        commit="2492920337122918bbfc7d12c1268b9af796c6cf",
        paths=("qed-dev.jsonlines",),
        licence="Natural Questions data: CC BY-SA 3.0 (no licence file in the repo)",
        citation=(
            "Lamm et al. QED: A Framework and Dataset for Explanations in Question Answering. TACL 2021."
        ),
        convert=_qed,
        note="NQ questions with Wikipedia paragraphs. qed-train.jsonlines is over 4 MiB.",
    ),
    Source(
        name="tydiqa_goldp_en",
        kind="train",
        repo="sagorbrur/tydiqa-language-specific",
        commit="55c6649475e0765f717a6d32a173c6664096a8ce",
        paths=(
            "language_data/english/english_tydiqa_train.json",
            "language_data/english/english_tydiqa_dev.json",
        ),
        licence="Apache-2.0 (TyDi QA; the fork's LICENSE); passages from Wikipedia",
        citation=(
            "Clark et al. TyDi QA: A Benchmark for Information-Seeking Question Answering in Typologically "
            "Diverse Languages. TACL 2020."
        ),
        convert=_squad_en,
        note="TyDi QA GoldP, English part, split out of the official GoldP files by the fork.",
    ),
    # Chinese
    Source(
        name="cmrc2018_trial",
        kind="train",
        repo="ymcui/cmrc2018",
        commit="c0eb1b6ba219847457e6af3180da722bbeb656af",
        paths=("squad-style-data/cmrc2018_trial.json",),
        licence="CC BY-SA 4.0 (repository LICENCE)",
        citation=_CMRC_CITE,
        convert=_squad_zh,
    ),
    Source(
        name="cmrc2018_dev_tune",
        kind="train",
        repo="ymcui/cmrc2018",
        commit="c0eb1b6ba219847457e6af3180da722bbeb656af",
        paths=("squad-style-data/cmrc2018_dev.json",),
        licence="CC BY-SA 4.0 (repository LICENCE)",
        citation=_CMRC_CITE,
        convert=_cmrc_dev_tune,
        note=(
            "Only the agent protocol's tune-part passages (sha1(paragraph id)[0] % 2 == 0); the test "
            "part is dropped and counted."
        ),
    ),
    Source(
        name="drcd",
        kind="train",
        repo="DRCKnowledgeTeam/DRCD",
        commit="b944790de5af02c5fbb7cd9cb1473d27d169eebf",
        paths=("DRCD_dev.json", "DRCD_test.json"),
        licence=_CC_BY_SA_3 + " (README)",
        citation=(
            "Shao, Liu, Lai, Tseng, Tsai. DRCD: a Chinese Machine Reading Comprehension Dataset. "
            "arXiv:1806.00920, 2018."
        ),
        convert=_drcd,
        note=(
            "Traditional -> simplified with opencc-python-reimplemented t2s. DRCD_training.json is over "
            "4 MiB."
        ),
    ),
    Source(
        name="cail2019_cjrc",
        kind="train",
        repo="china-ai-law-challenge/CAIL2019",
        commit="010ebcedb4a1faf0ae25576254d134fa518e4830",
        paths=("阅读理解/data/dev_ground_truth.json", "阅读理解/data/test_ground_truth.json"),
        licence="No licence stated (competition data from public court judgments); research use",
        citation=(
            "Duan et al. CJRC: A Reliable Human-Annotated Benchmark DataSet for Chinese Judicial Reading "
            "Comprehension. CCL 2019."
        ),
        convert=_squad_zh,
        note=(
            "Legal judgments, real unanswerable questions; YES/NO answers are not spans and are dropped. "
            "big_train_data.json is over 4 MiB."
        ),
    ),
    Source(
        name="drcd_train_part",
        kind="train",
        repo=_CPS,
        commit=_CPS_COMMIT,
        paths=("promptsource/datasets/DRCD/train.json",),
        licence=_CC_BY_SA_3 + " (DRCD's README; the copy carries no licence file)",
        citation=(
            "Shao, Liu, Lai, Tseng, Tsai. DRCD: a Chinese Machine Reading Comprehension Dataset. "
            "arXiv:1806.00920, 2018."
        ),
        convert=_drcd_stream,
        note=(
            "Part of DRCD_training.json kept by cPromptSource: one paragraph and one question of each of "
            "the 1,960 training articles. Traditional -> simplified (opencc-python-reimplemented t2s)."
        ),
    ),
    Source(
        name="dureader_robust_dev",
        kind="train",
        repo=_CPS,
        commit=_CPS_COMMIT,
        paths=("promptsource/datasets/dureader-robust/dev-r.json",),
        licence=_DUREADER_LICENCE,
        citation=(
            "Tang et al. DuReader_robust: A Chinese Dataset Towards Evaluating Robustness and "
            "Generalization of Machine Reading Comprehension in Real-World Applications. ACL 2021."
        ),
        convert=_dureader,
        note=(
            "Search-engine passages. The train file (train-r.json) is over 4 MiB. Offsets re-found (copy "
            "lost them)."
        ),
    ),
    Source(
        name="dureader_checklist",
        kind="train",
        repo=_CPS,
        commit=_CPS_COMMIT,
        paths=(
            "promptsource/datasets/dureader_checklist/train-r.json",
            "promptsource/datasets/dureader_checklist/dev-r.json",
        ),
        licence=_DUREADER_LICENCE,
        citation=(
            "Baidu. DuReader Checklist (LUGE / 千言), "
            "https://github.com/baidu/DuReader/tree/master/DuReader-Checklist."
        ),
        convert=_dureader,
        note="Real unanswerable questions (empty answer). Offsets re-found (copy lost them).",
    ),
    # BiPaR (non-commercial): monolingual and cross-language
    Source(
        name="bipar_en",
        kind="train",
        repo=_BIPAR,
        commit=_BIPAR_COMMIT,
        paths=("Monolingual/EN/Monolingual_EN_valid.json", "Monolingual/EN/Monolingual_EN_test.json"),
        licence=_BIPAR_LICENCE,
        citation=_BIPAR_CITE,
        convert=_squad_en,
        note="Novels (English side). Train files are over 4 MiB.",
    ),
    Source(
        name="bipar_zh",
        kind="train",
        repo=_BIPAR,
        commit=_BIPAR_COMMIT,
        paths=("Monolingual/ZH/Monolingual_ZH_valid.json", "Monolingual/ZH/Monolingual_ZH_test.json"),
        licence=_BIPAR_LICENCE,
        citation=_BIPAR_CITE,
        convert=_squad_zh,
        note="Novels (Chinese side, parallel to bipar_en).",
    ),
    Source(
        name="bipar_cross_qzh_ctxen",
        kind="train",
        repo=_BIPAR,
        commit=_BIPAR_COMMIT,
        paths=("Crosslingual/QZH/Crosslingual_QZH_valid.json", "Crosslingual/QZH/Crosslingual_QZH_test.json"),
        licence=_BIPAR_LICENCE,
        citation=_BIPAR_CITE,
        convert=_squad_en,
        note="Chinese question, English passage and answer.",
    ),
    Source(
        name="bipar_cross_qen_ctxzh",
        kind="train",
        repo=_BIPAR,
        commit=_BIPAR_COMMIT,
        paths=("Crosslingual/QEN/Crosslingual_QEN_valid.json", "Crosslingual/QEN/Crosslingual_QEN_test.json"),
        licence=_BIPAR_LICENCE,
        citation=_BIPAR_CITE,
        convert=_squad_zh,
        note="English question, Chinese passage and answer.",
    ),
    # Cross-language pairs (issue 48): MLQA's en/zh dev split (its test split stays for measuring)
    Source(
        name="mlqa_dev_cross_qen_ctxzh",
        kind="train",
        repo=_MLQA,
        commit=_MLQA_COMMIT,
        paths=(
            f"{_MLQA_DIR}/dev-context-zh-question-en.json",
            f"{_MLQA_DIR}/dev-context-en-question-zh.json",
        ),
        licence=_MLQA_LICENCE,
        citation=_MLQA_CITE,
        convert=_mlqa_cross,
        note="English question, Chinese passage and answer (Wikipedia). The copy has no licence file.",
    ),
    Source(
        name="mlqa_dev_cross_qzh_ctxen",
        kind="train",
        repo=_MLQA,
        commit=_MLQA_COMMIT,
        paths=(
            f"{_MLQA_DIR}/dev-context-en-question-zh.json",  # English titles: `convert` guards them
        ),
        licence=_MLQA_LICENCE,
        citation=_MLQA_CITE,
        convert=_mlqa_cross,
        note="Chinese question, English passage and answer (the same question ids as the other direction).",
    ),
    # Answer-sentence sets, recast as sentence spans
    Source(
        name="wikiqa_sentences",
        kind="extra",
        repo="l11x0m7/Question_Answering_Models",
        commit="b53c33db08a51f8e5f8c774eb65ec29c75942c66",
        paths=(
            "cQA/data/WikiQA/raw/WikiQA-train.txt",
            "cQA/data/WikiQA/raw/WikiQA-dev.tsv",
            "cQA/data/WikiQA/raw/WikiQA-test.tsv",
        ),
        licence=(
            "Microsoft Research Data License Agreement: research and technology development purposes "
            "only (cQA/data/WikiQA/raw/LICENSE.pdf)"
        ),
        citation=(
            "Yang, Yih, Meek. WikiQA: A Challenge Dataset for Open-Domain Question Answering. EMNLP 2015."
        ),
        convert=_wikiqa,
        note=(
            "Span = a whole answer sentence (a coarser unit than SQuAD spans); no correct sentence = "
            "unanswerable."
        ),
    ),
    # Evaluation only
    Source(
        name="squad2_dev",
        kind="eval",
        repo="pragyakatyayan/SQuAD_v2.0_Dataset",
        commit="d8879841e3f6d21058e49f32448c55c16971a227",
        paths=("squad_2.0_dev_complete_11873.xlsx",),
        licence="CC BY-SA 4.0 (SQuAD 2.0)",
        citation=(
            "Rajpurkar, Jia, Liang. Know What You Don't Know: Unanswerable Questions for SQuAD. ACL 2018."
        ),
        convert=_squad2_dev_xlsx,
        note="SQuAD 2.0 dev, whole, from a spreadsheet copy (the JSON is over 4 MiB). EVALUATION ONLY.",
    ),
)


# --- building ----------------------------------------------------------------------------------------


def git_dir(mirror: Path, repo: str) -> Path:
    """The git directory of a fetched snapshot of `repo` under `mirror`."""
    base = mirror / repo.replace("/", "+") / "repo"
    for candidate in (base / ".git", base):
        if (candidate / "HEAD").is_file() and (candidate / "objects").is_dir():
            return candidate
    raise SourceError(f"no snapshot of {repo} under {mirror} (fetch github:{repo} first)")


def reader_for(mirror: Path, source: Source) -> Reader:
    """A function reading `path` at the source's pinned commit from its snapshot."""
    gd = git_dir(mirror, source.repo)

    def read(path: str) -> bytes:
        proc = subprocess.run(
            ["git", "--git-dir", str(gd), "show", f"{source.commit}:{path}"], capture_output=True, check=False
        )
        if proc.returncode != 0:
            raise SourceError(f"{source.repo}@{source.commit}:{path}: {proc.stderr.decode(errors='replace')}")
        return proc.stdout

    return read


def convert(
    mirror: Path,
    source: Source,
    banned_contexts: frozenset[str] = frozenset(),
    seen: set[tuple[str, str]] | None = None,
) -> tuple[list[Record], Stats]:
    """All records of one source, checked, with the guards applied.

    `seen` holds the (context, question) pairs already written by earlier sources; a pair met again is
    dropped as a duplicate (and added otherwise).
    """
    stats = Stats()
    out: list[Record] = []
    for rec in source.convert(source, reader_for(mirror, source), stats):
        if source.kind != "eval":
            if rec["lang"] == "en" and rec["title"].replace("_", " ").casefold() in XQUAD_TITLES:
                stats.dropped["guard: SQuAD 1.1 dev / XQuAD article"] += 1
                continue
            if rec["context"] in banned_contexts:
                stats.dropped["guard: context of an evaluation set"] += 1
                continue
        if seen is not None:
            key = (rec["context"], rec["question"])
            if key in seen:
                stats.dropped["duplicate (same context and question as an earlier record)"] += 1
                continue
            seen.add(key)
        out.append(rec)
    kept = len(out)
    if kept != stats.questions:  # the guards removed some: recount from what is kept
        stats.questions = kept
        stats.answerable = sum(1 for r in out if not r["is_impossible"])
        stats.unanswerable = kept - stats.answerable
        stats.contexts = len({r["context"] for r in out})
    return out, stats


def _cmrc_test_contexts(mirror: Path) -> frozenset[str]:
    src = next(s for s in SOURCES if s.name == "cmrc2018_dev_tune")
    data = json.loads(reader_for(mirror, src)(src.paths[0]))["data"]
    return frozenset(
        str(p["context"]) for a in data for p in a["paragraphs"] if cmrc_part(str(p["id"])) == "test"
    )


def write_jsonl(path: Path, records: Iterable[Record]) -> None:
    """Write records one JSON object a line (UTF-8, not ASCII-escaped), via a temporary file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    tmp.replace(path)


def squad_json(records: list[Record], version: str = "v2.0") -> dict[str, Any]:
    """Records back in the official SQuAD format (articles -> paragraphs -> qas), for evaluate-v2.0.py."""
    articles: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in records:
        paras = articles.setdefault(r["title"], {})
        paras.setdefault(r["context"], []).append(
            {
                "id": r["id"].split(":", 1)[1],
                "question": r["question"],
                "answers": [{"text": a["text"], "answer_start": a["start"]} for a in r["answers"]],
                "is_impossible": r["is_impossible"],
            }
        )
    return {
        "version": version,
        "data": [
            {"title": t, "paragraphs": [{"context": c, "qas": q} for c, q in paras.items()]}
            for t, paras in articles.items()
        ],
    }


def build_detailed(
    mirror_dir: Path,
    out_dir: Path,
    *,
    extra_dir: Path | None = None,
    eval_dir: Path | None = None,
    only: Iterable[str] | None = None,
) -> dict[str, Stats]:
    """Build every selected source; return each one's `Stats` (see `build` for the plain counts)."""
    wanted = set(only) if only is not None else None
    dirs = {"train": out_dir, "extra": extra_dir, "eval": eval_dir}
    banned = set(_cmrc_test_contexts(mirror_dir))
    seen: set[tuple[str, str]] = set()
    results: dict[str, Stats] = {}
    # Evaluation sets first (always read, written only with `eval_dir`): their contexts are banned from
    # the training files.
    for source in sorted(SOURCES, key=lambda s: s.kind != "eval"):
        target = dirs[source.kind]
        if wanted is not None and source.name not in wanted:
            target = None
        if target is None and source.kind != "eval":
            continue
        dedup = None if source.kind == "eval" else seen
        records, stats = convert(mirror_dir, source, frozenset(banned), dedup)
        if source.kind == "eval":
            banned.update(r["context"] for r in records)
        if target is not None:
            write_jsonl(target / f"{source.name}.jsonl", records)
            if source.kind == "eval":
                (target / f"{source.name}.json").write_text(
                    json.dumps(squad_json(records), ensure_ascii=False), encoding="utf-8"
                )
        if target is not None:
            results[source.name] = stats
    return results


def build(mirror_dir: Path, out_dir: Path) -> dict[str, int]:
    """Rebuild the training files (``<out_dir>/<source>.jsonl``) from the snapshots; questions per file."""
    return {name: s.questions for name, s in build_detailed(mirror_dir, out_dir).items() if name in _TRAIN}


_TRAIN = frozenset(s.name for s in SOURCES if s.kind == "train")


def main(argv: list[str] | None = None) -> int:
    """Command line: rebuild the files and print the counts per source."""
    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.reader_sources", description=(__doc__ or "").splitlines()[0]
    )
    ap.add_argument("--mirror", type=Path, required=True, help="folder of snapshots (<owner>+<name>/repo)")
    ap.add_argument("--out", type=Path, required=True, help="folder for the training jsonl files")
    ap.add_argument("--extra-out", type=Path, help="folder for answer-sentence sets recast as spans")
    ap.add_argument("--eval-out", type=Path, help="folder for evaluation-only sets (SQuAD 2.0 dev)")
    ap.add_argument("--only", nargs="*", help="build only these sources (names as printed)")
    args = ap.parse_args(argv)
    try:
        results = build_detailed(
            args.mirror, args.out, extra_dir=args.extra_out, eval_dir=args.eval_out, only=args.only
        )
    except SourceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    kinds = {s.name: s.kind for s in SOURCES}
    print(f"{'source':26} {'kind':5} {'contexts':>8} {'questions':>9} {'answerable':>10} {'no answer':>9}")
    for name, s in results.items():
        print(
            f"{name:26} {kinds[name]:5} {s.contexts:8} {s.questions:9} {s.answerable:10} {s.unanswerable:9}"
        )
        if s.dropped or s.answers_refound or s.answers_trimmed:
            print(
                f"{'':26} answers trimmed: {s.answers_trimmed}, re-found: {s.answers_refound}; "
                f"dropped: {dict(s.dropped)}"
            )
    train = [s for n, s in results.items() if kinds[n] == "train"]
    print(f"train total: {sum(s.questions for s in train)} questions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
