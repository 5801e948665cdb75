"""Offline extractive answer: the best evidence sentences, each followed by its evidence id.

Used when no chat model is configured and as the fallback when the model fails. Every sentence of
the answer is copied verbatim from a cited chunk, so the answer can only contain retrieved text;
instruction-like spans ("SYSTEM: …", "ignore previous instructions") are left out.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from haygraph.control.evidence import Evidence
from haygraph.control.language import CJK_RANGES, CJK_RUN, SENTENCE_END
from haygraph.control.planning.injection import strip_instructions
from haygraph.control.texts import INSUFFICIENT_EVIDENCE

_EN_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_STOP_WORDS = (
    "a an and are as at be been but by can could do does for from has have how i if in into is it its "
    "me my of on or our please should so than that the their them then there these they this to was "
    "we what when where which who why will with would you your about tell know "
    "many much get got per i'm i've i'd it's what's am any some need want just also did were had "
    "there's don't let us"
)
_EN_STOP = frozenset(_STOP_WORDS.split(" "))
_ZH_STOP = frozenset("的了是吗呢吧啊呀么什怎我你您他她它们在有和与及或请问一下个这那哪")
_ZH_QUESTION_PHRASES = re.compile(
    "请问|请教|麻烦|能不能|能否|可不可以|可以吗|是不是|是否|有没有|会不会|要不要|告诉我|帮我看看|帮我查|帮我|"
    "我想知道|想知道|想问|一下|什么样|什么|怎么样|怎么|怎样|如何|为什么|为何|多少|哪些|哪个|哪里|哪儿|的话"
)
"""Chinese interrogative and politeness phrases: they say how a question is asked, not what about."""

_BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|[0-9]+[.)]\s|#{1,6}\s|\|)")
# Headings, table separator rows and bold-only labels ("**Your first day**") are not answers.
_NOT_AN_ANSWER = re.compile(r"^(?:#{1,6}\s|[|:\-\s]+$|(?:[-*+]\s+)?\*\*[^*]+\*\*:?$)")
_LABEL = re.compile(r"^\*\*[^*]+\*\*:?$")
_MIN_UNIT_CHARS = 6
_ENUMERATOR = re.compile(r"^[0-9]+[.)]\s+")
_CJK_EDGE = re.compile(f"[{CJK_RANGES}，。！？；：、）》」』]")


@dataclass(frozen=True)
class ExtractiveAnswer:
    """An extractive answer and the ids of the evidence it cites, in citation order."""

    answer: str
    evidence_ids: list[str]


def insufficient_message(question: str) -> str:
    """Return the fixed honest reply when there is no usable evidence, in the question's language."""
    return INSUFFICIENT_EVIDENCE.for_question(question)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=4096)
def terms(text: str) -> dict[str, float]:
    """Return the weighted matching terms of a text (memoized: callers must not mutate the result).

    English content words (lowercase, plural-stripped, stop words removed; a hyphenated word also
    without its hyphens and as its parts) weigh 2; Chinese
    characters (minus function characters) weigh 1 and Chinese character bigrams 2.
    """
    low = text.lower()
    out: dict[str, float] = {}
    for word in _EN_WORD.findall(low):
        if word not in _EN_STOP:
            out[_stem(word)] = 2.0
            if "-" in word:  # "wi-fi" also matches "wifi"; "nwh-guest" also "guest"
                out[_stem(word.replace("-", ""))] = 2.0
                for part in word.split("-"):
                    if len(part) > 1 and part not in _EN_STOP:
                        out.setdefault(_stem(part), 2.0)
    for run in CJK_RUN.findall(low):
        for ch in run:
            if ch not in _ZH_STOP:
                out[ch] = 1.0
        for i in range(len(run) - 1):
            if run[i] not in _ZH_STOP and run[i + 1] not in _ZH_STOP:
                out[run[i : i + 2]] = 2.0
    return out


def question_text(question: str) -> str:
    """The question without its Chinese interrogative and politeness phrases (请问, 能不能, 多少, ...).

    Those phrases carry no topic, so they are not terms to look for in the evidence; each is replaced
    by a space so no bigram spans the gap. English function words are stop words of `terms` already.
    """
    return _ZH_QUESTION_PHRASES.sub(" ", question)


def question_terms(question: str) -> dict[str, float]:
    """`terms` of `question_text`: the weighted terms a question asks about."""
    return terms(question_text(question))


_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|(?:\s*:?-{2,}:?\s*\|)+\s*$")
_FAQ_QUESTION = re.compile(r"^\s*(?:\*\*)?\s*(?:问|Q)\s*[：:]\s*(.+?)\s*(?:\*\*)?\s*$")
_FAQ_ANSWER = re.compile(r"^\s*(?:\*\*)?\s*(?:答|A)\s*[：:]\s*(?:\*\*)?\s*")
_PLACED = "\x00"
MAX_TABLE_ROWS = 6
"""A table with at most this many data rows is quoted whole (one unit); a longer one row by row."""


def _cells(row: str) -> list[str]:
    return [c.strip().replace("**", "") for c in row.strip().strip("|").split("|")]


def table_row_text(header: list[str], cells: list[str]) -> str:
    """One table row quoted with its header: "Continuous service Less than 3 years → 12 working days".

    The first column names the row; the others follow the arrow, each with its header when the table
    has more than two columns. Without a header the cells are joined with " | ".
    """
    if not header or len(header) != len(cells):
        return " | ".join(c for c in cells if c)
    first = f"{header[0]} {cells[0]}".strip()
    if len(cells) == 2:
        return f"{first} → {cells[1]}"
    return f"{first} → " + ", ".join(f"{h}: {c}" for h, c in zip(header[1:], cells[1:], strict=True))


def _table_units(rows: list[str]) -> list[str]:
    """A Markdown table's rows quoted with their header.

    A short two-column table is one unit (its rows together answer "how many days do I get": one row
    per case); any other table gives one unit per row.
    """
    if len(rows) >= 2 and _TABLE_SEPARATOR.match(rows[1]):
        header, data = _cells(rows[0]), [_cells(r) for r in rows[2:]]
    else:
        header, data = [], [_cells(r) for r in rows if not _TABLE_SEPARATOR.match(r)]
    data = [cells for cells in data if any(cells)]
    if not data:
        return []
    if header and len(header) == 2 and len(data) <= MAX_TABLE_ROWS and all(len(c) == 2 for c in data):
        return [f"{header[0]} → {header[1]}: " + "; ".join(f"{a} → {b}" for a, b in data)]
    return [table_row_text(header, cells) for cells in data]


def _structured_units(lines: list[str]) -> tuple[list[str], list[str]]:
    """Pull whole tables and FAQ question/answer pairs out of `lines`; return (units, remaining lines).

    A table becomes rows quoted with their header (never half a row or a bare header); an FAQ pair
    becomes "question answer" without its 问：/答： (Q:/A:) markers or bold, so no marker is spliced
    into an answer. Each unit's lines are replaced by a placeholder line (`_PLACED` + its index), so
    units keep their place in document order.
    """
    units: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if _TABLE_ROW.match(line):
            j = i
            while j < len(lines) and _TABLE_ROW.match(lines[j]):
                j += 1
            for unit in _table_units(lines[i:j]):
                rest.extend(["", f"{_PLACED}{len(units)}", ""])
                units.append(unit)
            i = j
            continue
        question = _FAQ_QUESTION.match(line)
        if question:
            j = i + 1
            answer: list[str] = []
            while j < len(lines) and lines[j].strip() and not _FAQ_QUESTION.match(lines[j]):
                answer.append(_FAQ_ANSWER.sub("", lines[j]).strip())
                j += 1
            if answer:
                glue = "" if _CJK_EDGE.match(question.group(1)[-1]) else " "
                rest.extend(["", f"{_PLACED}{len(units)}", ""])
                units.append(question.group(1).replace("**", "") + glue + "".join(answer).replace("**", ""))
                i = j
                continue
        rest.append(line)
        i += 1
    return units, rest


def answer_units(text: str) -> list[str]:
    """Candidate answer units of a chunk: sentences, table rows with their header, FAQ pairs.

    Tables and FAQ question/answer pairs are taken whole first (`_structured_units`). In the rest,
    blocks are paragraphs, list items and headings; lines inside a block are joined (with a space
    between Latin words, nothing between Chinese characters), then split at sentence ends. Headings
    and bold-only labels are not answers and are left out.
    """
    structured, lines = _structured_units(text.splitlines())
    units: list[str] = []
    blocks: list[list[str]] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(_PLACED):
            blocks.extend([[stripped], []])
        elif not stripped:
            blocks.append([])
        elif (
            _BLOCK_START.match(line)
            or _LABEL.match(stripped)
            or not blocks
            or not blocks[-1]
            or blocks[-1][0].startswith("#")
            or _LABEL.match(blocks[-1][-1])
        ):
            blocks.append([stripped])
        else:
            blocks[-1].append(stripped)
    for block in blocks:
        if not block:
            continue
        if block[0].startswith(_PLACED):
            units.append(structured[int(block[0][1:])])
            continue
        joined = block[0]
        for nxt in block[1:]:
            glue = "" if _CJK_EDGE.match(joined[-1]) and _CJK_EDGE.match(nxt[0]) else " "
            joined += glue + nxt
        if joined.startswith("#"):
            continue  # a heading names a section; it does not answer anything
        enumerator = _ENUMERATOR.match(joined)
        head = enumerator.group(0) if enumerator else ""
        pieces = SENTENCE_END.split(joined[len(head) :])
        pieces[0] = head + pieces[0]
        for piece in pieces:
            piece = piece.strip()
            if len(piece) >= _MIN_UNIT_CHARS and not _NOT_AN_ANSWER.match(piece):
                units.append(piece)
    return units


ASKED_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "duration": (
        re.compile(
            r"\bhow long\b|\bhow much time\b|\bhow many (?:working |calendar |business )?"
            r"(?:days|weeks|months|hours|years|minutes)\b|多久|多长时间|几天|几周|几个月|多少天|多少小时"
        ),
        re.compile(
            r"\d+\s*(?:working\s+|calendar\s+|business\s+)?(?:days?|weeks?|months?|hours?|years?|minutes?)\b|\d+\s*(?:个)?(?:天|周|月|小时|年|分钟|工作日)"
        ),
    ),
    "date": (
        re.compile(r"\bwhen\b|\bwhat (?:date|day|time)\b|\bby when\b|什么时候|何时|哪天|几号|几点|日期"),
        re.compile(
            r"\b\d{1,2}:\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
            r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|\d+\s*[月日号点]|\b\d{4}\b",
            re.IGNORECASE,
        ),
    ),
    "number": (
        re.compile(
            r"\bhow (?:many|much)\b|\bwhat (?:percentage|amount|number)\b|\bmaximum\b|\blimit\b|多少|几"
        ),
        re.compile(r"\d"),
    ),
    "name": (
        re.compile(r"\bwho\b|\bwhose\b|\bwhich (?:team|person|department)\b|谁|哪位|哪个部门"),
        re.compile(r"\b[A-Z][a-z]+|经理|主管|部|负责人|总监|HR|CFO|CEO"),
    ),
    "reason": (
        re.compile(r"\bwhy\b|\bwhat is the reason\b|为什么|为何|原因|何故|得名"),
        re.compile(
            r"\bbecause\b|\bdue to\b|\bsince\b|\bso that\b|\bas a result\b|"
            r"因为|由于|因此|所以|因而|故|以便|为了",
            re.IGNORECASE,
        ),
    ),
    "definition": (
        re.compile(r"\bwhat does .+ mean\b|\bdefin(?:e|ition)\b|定义|内涵|含义|意思是|指什么"),
        re.compile(r"\bmeans\b|\brefers? to\b|\bis defined\b|是指|指的是|定义为|即|称为", re.IGNORECASE),
    ),
    "place": (
        re.compile(r"\bwhere\b|哪里|哪儿|在哪|什么地方"),
        re.compile(r"\bfloor\b|\broom\b|\bwing\b|\boffice\b|\bdesk\b|楼|室|厅|区|\b[A-Z][a-z]+"),
    ),
}
"""The asked-for answer type: (question pattern, answer-unit pattern), checked in this order."""

TYPE_BONUS = 1.5
"""Factor on the score of a unit that holds the asked-for type (a number for "how many", ...)."""


def asked_type(question: str) -> str | None:
    """The type of answer a question asks for (`ASKED_TYPES`: duration, date, number, name, ...), or None."""
    for name, (asks, _holds) in ASKED_TYPES.items():
        if asks.search(question.lower()):
            return name
    return None


def holds_type(kind: str | None, unit: str) -> bool:
    """Whether `unit` holds an answer of the asked-for `kind` (False when no type was asked)."""
    return kind is not None and bool(ASKED_TYPES[kind][1].search(unit))


def sentence_score(
    query_terms: dict[str, float], sentence: str, idf: dict[str, float] | None = None
) -> float:
    """Sum of the weights (times their idf among the candidates, if given) of query terms in the sentence."""
    found = terms(sentence)
    return sum(weight * (idf or {}).get(term, 1.0) for term, weight in query_terms.items() if term in found)


CONTEXT_SHARE = 0.5
"""Share of a query term's weight a unit gets when the term is in its chunk (or heading path), not in it."""


def context_score(
    query_terms: dict[str, float], context: str, sentence: str, idf: dict[str, float] | None = None
) -> float:
    """`sentence_score` of the query terms found in `context` (heading path and chunk) but not in `sentence`.

    A heading names what its section's sentences are about ("Wi-Fi" above "NWH-Guest: for visitors"),
    and a passage's subject, named once, is what its later sentences are about ("牠们主要吃果实" in a
    passage on a bird), so a unit inherits the terms of its chunk and heading path, at
    `CONTEXT_SHARE` of their weight — if the unit shares a query term itself (a unit that shares none
    is not about the question, whatever its neighbours say).
    """
    in_sentence = terms(sentence)
    if not context or not any(term in in_sentence for term in query_terms):
        return 0.0
    in_context = terms(context)
    return sum(
        weight * (idf or {}).get(term, 1.0)
        for term, weight in query_terms.items()
        if term in in_context and term not in in_sentence
    )


OWN_SHARE = 0.25
"""After the best unit, a unit is quoted only if its own score (without what it inherits from its chunk)
is at least this share of the best unit's own score."""


def candidate_idf(query_terms: dict[str, float], sentences: list[str]) -> dict[str, float]:
    """Inverse document frequency of each query term among the candidate sentences, ln(1 + N / df) squared.

    A term that every candidate shares ("days", "policy", the passage's subject) says little about
    which sentence answers; a term few candidates contain ("home", "婚假", "退役") says a lot. The
    square widens that gap: a question names its subject in many terms (every character and bigram
    of a long name) and what it asks about in few.
    """
    found = [terms(s) for s in sentences]
    n = len(found)
    return {
        t: math.log(1 + n / sum(1 for f in found if t in f)) ** 2
        for t in query_terms
        if any(t in f for f in found)
    }


def extractive_answer(
    query: str, evidence: list[Evidence], *, max_sentences: int = 3, max_evidence: int = 3
) -> ExtractiveAnswer | None:
    """Pick the best 1–`max_sentences` sentences of the top `max_evidence` chunks for `query`.

    Units (`answer_units`: sentences verbatim except that hard-wrapped lines are joined, table rows
    quoted with their header, FAQ pairs without markers) are ranked by idf-weighted term overlap
    with the query (plus `CONTEXT_SHARE` of the query terms only their chunk or its heading path holds),
    times `TYPE_BONUS` when the unit holds the asked-for type (ties: better chunk first, earlier
    sentence first); the best is kept, and after it those scoring at least half of the best whose own
    score (without what they inherit) is at least `OWN_SHARE` of the best's own score. If no sentence shares a
    term with the query, the first sentence of the best chunk is used (the chunk passed the relevance check).
    Each sentence is followed by " [evidence id]". Instruction-like spans of the evidence
    (`haygraph.control.planning.injection`) are never candidates: evidence is data, never quoted as an
    instruction. Returns None when `evidence` is empty or holds no other sentence.
    """
    if not evidence:
        return None
    query_terms = question_terms(query)
    candidates = [
        (rank, pos, sentence, item.id)
        for rank, item in enumerate(evidence[:max_evidence])
        for pos, sentence in enumerate(answer_units(strip_instructions(item.text)))
    ]
    contexts = [" ".join([*item.heading_path, item.text]) for item in evidence[:max_evidence]]
    idf = candidate_idf(query_terms, [c[2] for c in candidates])
    kind = asked_type(query)
    scored: list[tuple[float, int, int, float, str, str]] = []
    for rank, pos, sentence, ev_id in candidates:
        bonus = TYPE_BONUS if holds_type(kind, sentence) else 1.0
        own = sentence_score(query_terms, sentence, idf) * bonus
        inherited = CONTEXT_SHARE * context_score(query_terms, contexts[rank], sentence, idf) * bonus
        scored.append((own + inherited, rank, pos, own, sentence, ev_id))
    if not scored:
        return None
    scored.sort(key=lambda row: (-row[0], row[1], row[2]))
    best, best_own = scored[0][0], scored[0][3]
    chosen: list[tuple[str, str]] = []
    if best <= 0:
        chosen.append((scored[0][4], scored[0][5]))
    else:
        seen: set[str] = set()
        for score, _rank, _pos, own, sentence, ev_id in scored:
            if len(chosen) >= max_sentences or score < best / 2:
                break
            # a further unit must also hold enough of the question itself, not only inherit it
            if sentence not in seen and (not chosen or own >= OWN_SHARE * best_own):
                seen.add(sentence)
                chosen.append((sentence, ev_id))
    answer = " ".join(f"{sentence} [{ev_id}]" for sentence, ev_id in chosen)
    ids = list(dict.fromkeys(ev_id for _sentence, ev_id in chosen))
    return ExtractiveAnswer(answer=answer, evidence_ids=ids)
