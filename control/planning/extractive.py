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
    "we what when where which who why will with would you your about tell know"
)
_EN_STOP = frozenset(_STOP_WORDS.split(" "))
_ZH_STOP = frozenset("的了是吗呢吧啊呀么什怎我你您他她它们在有和与及或请问一下个这那哪")

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

    English content words (lowercase, plural-stripped, stop words removed) weigh 2; Chinese
    characters (minus function characters) weigh 1 and Chinese character bigrams 2.
    """
    low = text.lower()
    out: dict[str, float] = {}
    for word in _EN_WORD.findall(low):
        if word not in _EN_STOP:
            out[_stem(word)] = 2.0
    for run in CJK_RUN.findall(low):
        for ch in run:
            if ch not in _ZH_STOP:
                out[ch] = 1.0
        for i in range(len(run) - 1):
            out[run[i : i + 2]] = 2.0
    return out


def answer_units(text: str) -> list[str]:
    """Candidate answer sentences of a chunk: Markdown-aware, with hard-wrapped lines joined.

    Blocks are paragraphs, list items, headings and table rows; lines inside a block are joined (with a
    space between Latin words, nothing between Chinese characters), then split at sentence ends.
    Headings and table separator rows are not answers and are left out.
    """
    blocks: list[list[str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            blocks.append([])
        elif (
            _BLOCK_START.match(line)
            or _LABEL.match(stripped)
            or not blocks
            or not blocks[-1]
            or blocks[-1][0].startswith(("#", "|"))
            or _LABEL.match(blocks[-1][-1])
        ):
            blocks.append([stripped])
        else:
            blocks[-1].append(stripped)
    units: list[str] = []
    for block in blocks:
        if not block:
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


def sentence_score(
    query_terms: dict[str, float], sentence: str, idf: dict[str, float] | None = None
) -> float:
    """Sum of the weights (times their idf among the candidates, if given) of query terms in the sentence."""
    found = terms(sentence)
    return sum(weight * (idf or {}).get(term, 1.0) for term, weight in query_terms.items() if term in found)


def candidate_idf(query_terms: dict[str, float], sentences: list[str]) -> dict[str, float]:
    """Inverse document frequency of each query term among the candidate sentences, ln(1 + N / df).

    A term that every candidate shares ("days", "policy") says little about which sentence answers;
    a term few candidates contain ("home", "婚假") says a lot.
    """
    found = [terms(s) for s in sentences]
    n = len(found)
    return {
        t: math.log(1 + n / sum(1 for f in found if t in f))
        for t in query_terms
        if any(t in f for f in found)
    }


def extractive_answer(
    query: str, evidence: list[Evidence], *, max_sentences: int = 3, max_evidence: int = 3
) -> ExtractiveAnswer | None:
    """Pick the best 1–`max_sentences` sentences of the top `max_evidence` chunks for `query`.

    Sentences (`answer_units`: verbatim except that hard-wrapped lines are joined) are ranked by
    idf-weighted term overlap with the query (ties: better chunk first,
    earlier sentence first); those scoring at least half of the best are kept. If no sentence shares a
    term with the query, the first sentence of the best chunk is used (the chunk passed the relevance check).
    Each sentence is followed by " [evidence id]". Instruction-like spans of the evidence
    (`haygraph.control.planning.injection`) are never candidates: evidence is data, never quoted as an
    instruction. Returns None when `evidence` is empty or holds no other sentence.
    """
    if not evidence:
        return None
    query_terms = terms(query)
    candidates = [
        (rank, pos, sentence, item.id)
        for rank, item in enumerate(evidence[:max_evidence])
        for pos, sentence in enumerate(answer_units(strip_instructions(item.text)))
    ]
    idf = candidate_idf(query_terms, [c[2] for c in candidates])
    scored: list[tuple[float, int, int, str, str]] = [
        (sentence_score(query_terms, sentence, idf), rank, pos, sentence, ev_id)
        for rank, pos, sentence, ev_id in candidates
    ]
    if not scored:
        return None
    scored.sort(key=lambda row: (-row[0], row[1], row[2]))
    best = scored[0][0]
    chosen: list[tuple[str, str]] = []
    if best <= 0:
        chosen.append((scored[0][3], scored[0][4]))
    else:
        seen: set[str] = set()
        for score, _rank, _pos, sentence, ev_id in scored:
            if len(chosen) >= max_sentences or score < best / 2:
                break
            if sentence not in seen:
                seen.add(sentence)
                chosen.append((sentence, ev_id))
    answer = " ".join(f"{sentence} [{ev_id}]" for sentence, ev_id in chosen)
    ids = list(dict.fromkeys(ev_id for _sentence, ev_id in chosen))
    return ExtractiveAnswer(answer=answer, evidence_ids=ids)
