"""Offline extractive answer: the best evidence units, each followed by its evidence id.

Used when no chat model is configured and as the fallback when the model fails. Every unit of the
answer is quoted from a cited chunk (`answer_units`: read as text, without Markdown or HTML markup),
so the answer can only contain retrieved text; instruction-like spans ("SYSTEM: …", "ignore previous
instructions") are left out.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from haygraph.control.evidence import Evidence
from haygraph.control.language import script_weights
from haygraph.control.planning.answer_units import MAX_TABLE_ROWS as MAX_TABLE_ROWS
from haygraph.control.planning.answer_units import MAX_UNIT_CHARS, AnswerUnit, chunk_units, glue, labelled
from haygraph.control.planning.answer_units import answer_units as answer_units
from haygraph.control.planning.answer_units import table_row_text as table_row_text
from haygraph.control.planning.decision.lexicon import asked_time_unit, asked_type, holds_type
from haygraph.control.planning.injection import strip_instructions
from haygraph.control.planning.meaning import MAX_UNITS, MeaningEncoder, closeness, sibling_nouns
from haygraph.control.planning.words import question_terms as question_terms
from haygraph.control.planning.words import question_text as question_text
from haygraph.control.planning.words import terms as terms
from haygraph.control.texts import INSUFFICIENT_EVIDENCE

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True)
class ExtractiveAnswer:
    """An extractive answer and the ids of the evidence it cites, in citation order."""

    answer: str
    evidence_ids: list[str]
    units: list[str] = field(default_factory=list)
    """The quoted units, in answer order, without their citations."""


def insufficient_message(question: str) -> str:
    """Return the fixed honest reply when there is no usable evidence, in the question's language."""
    return INSUFFICIENT_EVIDENCE.for_question(question)


TYPE_BONUS = 1.5
"""Factor on the score of a unit that holds the asked-for type (a number for "how many", ...)."""


def sentence_score(
    query_terms: dict[str, float], sentence: str, idf: dict[str, float] | None = None
) -> float:
    """Sum of the weights (times their idf among the candidates, if given) of query terms in the sentence."""
    found = terms(sentence)
    return sum(weight * (idf or {}).get(term, 1.0) for term, weight in query_terms.items() if term in found)


ROW_KEY_SHARE = 1.0
"""Extra share of a query term's weight a table row gets when the term is in the row's first cell, its key
(`AnswerUnit.key`): the first cell names what the row is about ("National Day Golden Week"), the other
cells say something of it — a row that names the question's subject only in a side column ("Related
holiday: National Day") is about something else."""

ANSWER_EVIDENCE = 5
"""Evidence items, best first, whose units an extractive answer reads (as many as the answer evidence holds
with the default `Context.answer_top_k`)."""

WEIGHING_EVIDENCE = 3
"""Evidence items, best first, whose units weigh the question's terms (`candidate_idf`): the lower-ranked
items read after them add candidates, not weights — their vocabulary (another page's "callback", "time")
would otherwise make the best chunks' distinctive terms look common."""

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


_IDENTIFIER_HEADING = re.compile(
    r"\s*((?:[A-Za-z_$][\w$]*\.)*[A-Za-z_$][\w$]*(?:\(\))?|<[A-Z][\w-]*>|v-[a-z-]+)\s*$"
)
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]|[A-Z][a-z]+[A-Z]")
_HTML_TAG = re.compile(r"<[a-z][^>]*>|</[a-z][^>]*>|\{#[^}]*\}")
"""Lowercase HTML tags in a heading (a version badge, <sup …/>) and {#anchor}s; <KeepAlive> is a name."""


def own_heading(item: Evidence) -> str:
    """The chunk's own heading (its heading path's last), for units above its first heading line."""
    return item.heading_path[-1] if item.heading_path else ""


def heading_names(title: str) -> list[str]:
    """The names a heading defines: its code spans, or the heading itself when it is one identifier.

    An API reference titles each entry with its name ("onBeforeUnmount()", "app.mount()",
    "beforeCreate", "v-model", "<KeepAlive>"): an identifier with humps, a dot, call parentheses, a
    component tag or a directive — a plain word ("Installation") names nothing.
    """
    spans = _CODE_SPAN.findall(title)
    if spans:
        return spans
    whole = _IDENTIFIER_HEADING.fullmatch(_HTML_TAG.sub(" ", title))
    if whole is None:
        return []
    name = whole.group(1)
    if "(" in name or "." in name or name.startswith(("<", "v-")) or _CAMEL_HUMP.search(name):
        return [name]
    return []


def _quoted_units(
    units: list[AnswerUnit], kind: str | None, heading: str = ""
) -> list[tuple[str, tuple[int, ...]]]:
    """The units of one chunk as quotes, each with the positions it covers.

    A unit that does not hold the asked-for `kind` is quoted together with the next unit of its block
    when that one does ("Logs are kept for a while." + "The default is 90 days."), up to
    `MAX_UNIT_CHARS`; the next unit stays a candidate of its own too. Asked for a flag or option name,
    a unit under a heading that names one in a code span, and does not name it itself, is quoted after
    its heading
    ("`__VUE_OPTIONS_API__`: Enable / disable Options API support."): the heading is the term the
    unit defines. `heading` is the chunk's own (its heading path's last), for units above the chunk's
    first heading line.
    """
    quotes: list[tuple[str, tuple[int, ...]]] = []
    for pos, unit in enumerate(units):
        nxt = units[pos + 1] if pos + 1 < len(units) else None
        title = unit.heading or heading
        names = heading_names(title) if kind == "flag" else []
        if (
            names
            and not any(name in unit.text for name in names)
            and len(title) + 2 + len(unit.text) <= MAX_UNIT_CHARS
        ):
            label = title if _CODE_SPAN.search(title) else f"`{names[0]}`"  # without {#anchor} or badge
            quotes.append((labelled(label, unit.text), (pos,)))
        elif (
            kind is not None
            and nxt is not None
            and nxt.block == unit.block
            and not holds_type(kind, unit.text)
            and holds_type(kind, nxt.text)
            and len(unit.text) + 1 + len(nxt.text) <= MAX_UNIT_CHARS
        ):
            quotes.append((glue(unit.text, nxt.text), (pos, pos + 1)))
        else:
            quotes.append((unit.text, (pos,)))
    return quotes


def extractive_answer(
    query: str,
    evidence: list[Evidence],
    *,
    max_sentences: int = 3,
    max_evidence: int = ANSWER_EVIDENCE,
    encoder: MeaningEncoder | None = None,
) -> ExtractiveAnswer | None:
    """Pick the best 1–`max_sentences` answer units of the top `max_evidence` chunks for `query`.

    Units (`answer_units`: list items with their continuation and default lines, sentences, table rows
    quoted with their header, FAQ pairs without markers, all read as text without Markdown or HTML
    markup; a unit without the asked-for type joined by the next one of its block that holds it) are
    ranked by idf-weighted term overlap (idf among the units of the top `WEIGHING_EVIDENCE` items)
    with the query (plus `CONTEXT_SHARE` of the query terms only their chunk or its heading path holds),
    times `TYPE_BONUS` when the unit holds the asked-for type (ties: better chunk first, earlier
    unit first); the best is kept, and after it those scoring at least half of the best whose own
    score (without what they inherit) is at least `OWN_SHARE` of the best's own score, and that
    overlap no unit already quoted, written in the question's language (a bilingual set states the same
    rule on both pages: the other page's copy is not quoted after the first unit), and, when the
    question names the best unit's table row by its key, not a row it does not name. If no unit shares a
    term with the query (a question in the other
    language, a paraphrase), the unit closest in meaning to it is quoted when an `encoder` is given
    (`haygraph.control.planning.meaning`; times `TYPE_BONUS` when it holds the asked-for type), else
    the first unit of the best chunk (the chunk passed the relevance check).
    Each unit is followed by " [evidence id]". Instruction-like spans of the evidence
    (`haygraph.control.planning.injection`) are never candidates: evidence is data, never quoted as an
    instruction. The evidence itself is not changed (its text and offsets stay those of the source).
    Returns None when `evidence` is empty or holds no unit.
    """
    if not evidence:
        return None
    query_terms = question_terms(query)
    kind = asked_type(query)
    unit_of_time = asked_time_unit(query) if kind == "duration" else None
    asked_in_chinese = _chinese(query)
    chunks = [chunk_units(strip_instructions(item.text)) for item in evidence[:max_evidence]]
    candidates = [
        (rank, positions, text, evidence[rank].id)
        for rank, units in enumerate(chunks)
        for text, positions in _quoted_units(units, kind, own_heading(evidence[rank]))
    ]
    contexts = [" ".join([*item.heading_path, item.text]) for item in evidence[:max_evidence]]
    idf = candidate_idf(query_terms, [unit.text for units in chunks[:WEIGHING_EVIDENCE] for unit in units])
    scored: list[tuple[float, int, tuple[int, ...], float, str, str, str]] = []
    for rank, positions, sentence, ev_id in candidates:
        bonus = (
            TYPE_BONUS
            if holds_type(kind, sentence) and (unit_of_time is None or unit_of_time.search(sentence))
            else 1.0
        )
        key = chunks[rank][positions[0]].key
        own = (
            sentence_score(query_terms, sentence, idf) + ROW_KEY_SHARE * sentence_score(query_terms, key, idf)
        ) * bonus
        inherited = CONTEXT_SHARE * context_score(query_terms, contexts[rank], sentence, idf) * bonus
        scored.append((own + inherited, rank, positions, own, sentence, ev_id, key))
    if not scored:
        return None
    scored.sort(key=lambda row: (-row[0], row[1], row[2]))
    best, best_own = scored[0][0], scored[0][3]
    chosen: list[tuple[str, str]] = []
    if best <= 0 and encoder is not None:
        chosen.append(_closest_in_meaning(query, [(row[4], row[5]) for row in scored], kind, encoder))
    elif best <= 0:
        chosen.append((scored[0][4], scored[0][5]))
    else:
        seen: set[str] = set()
        covered: set[tuple[int, int]] = set()
        row_named = _names_key(query, scored[0][6])
        for score, rank, positions, own, sentence, ev_id, key in scored:
            if len(chosen) >= max_sentences or score < best / 2:
                break
            spots = {(rank, pos) for pos in positions}
            # a further unit must also hold enough of the question itself, not only inherit it, and be
            # in the question's language (a bilingual set states the same rule on both pages)
            if chosen and _chinese(sentence) != asked_in_chinese:
                continue
            if chosen and asked_in_chinese and _names_a_sibling(query, sentence):
                continue
            if chosen and row_named and key and not _names_key(query, key):
                continue  # the question names the best row: another row it does not name is a sibling
            if sentence not in seen and not spots & covered and (not chosen or own >= OWN_SHARE * best_own):
                seen.add(sentence)
                covered |= spots
                chosen.append((sentence, ev_id))
    answer = " ".join(f"{sentence} [{ev_id}]" for sentence, ev_id in _without_repeated_leads(chosen))
    ids = list(dict.fromkeys(ev_id for _sentence, ev_id in chosen))
    return ExtractiveAnswer(answer=answer, evidence_ids=ids, units=[sentence for sentence, _id in chosen])


def _names_key(query: str, key: str) -> bool:
    """Whether the question names a table row's key (its first cell) whole: "高铁站的末班车" names 高铁站.

    Compared without case and spaces. A row whose key only shares characters with it (东门地铁站) is
    another row of the table: after the row the question names, it is not quoted.
    """
    wanted = "".join(key.split()).lower()
    return bool(wanted) and wanted in "".join(query.split()).lower()


def _names_a_sibling(query: str, sentence: str) -> bool:
    """Whether a further unit speaks of another member of a kind the question asks about (事假 for 年假)."""
    return bool(sibling_nouns(query, sentence))


def _chinese(text: str) -> bool:
    """Whether `text` is mostly Chinese, by words (`script_weights`)."""
    return script_weights(text.lower())[0] >= 0.5


_LEAD_IN = re.compile(r"^[^\n:：→]{4,200}?(?:: |：)(?=\S)")
"""A unit's lead-in: its text up to a colon ("错误在开发和生产模式下有不同的行为：", "Refunds go back: "),
not a table row's (those hold "→")."""


def _without_repeated_leads(chosen: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The quoted units, each without the lead-in the unit quoted just before it already said.

    That is when both come from the same evidence item and start with the same lead-in: "Errors
    behave differently: in development … [1] in production … [1]", not the lead-in twice. Each unit
    is a candidate with its lead-in (it must stand alone when quoted alone); the answer says it once.
    """
    out: list[tuple[str, str]] = []
    for pos, (sentence, ev_id) in enumerate(chosen):
        if pos:
            before, before_id = chosen[pos - 1]
            lead = _LEAD_IN.match(sentence)
            if lead is not None and before_id == ev_id and before.startswith(lead.group(0)):
                sentence = sentence[lead.end() :]
        out.append((sentence, ev_id))
    return out


def _closest_in_meaning(
    query: str, units: list[tuple[str, str]], kind: str | None, encoder: MeaningEncoder
) -> tuple[str, str]:
    """The (unit, evidence id) closest in meaning to `query`, a unit holding the asked-for type preferred."""
    units = units[:MAX_UNITS]
    close = closeness(query, [text for text, _id in units], encoder)
    bonus = [TYPE_BONUS if holds_type(kind, text) else 1.0 for text, _id in units]
    scores = [c * b for c, b in zip(close, bonus, strict=True)]
    return units[max(range(len(units)), key=lambda i: (scores[i], -i))]
