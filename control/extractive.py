"""Offline extractive answer: the best evidence sentences, each followed by its evidence id.

Used when no chat model is configured and as the fallback when the model fails. Every sentence of
the answer is copied verbatim from a cited chunk, so the answer can only contain retrieved text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from control.evidence import Evidence
from control.rules import is_chinese
from control.sentences import split_sentences

_EN_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_STOP_WORDS = (
    "a an and are as at be been but by can could do does for from has have how i if in into is it its "
    "me my of on or our please should so than that the their them then there these they this to was "
    "we what when where which who why will with would you your about tell know"
)
_EN_STOP = frozenset(_STOP_WORDS.split(" "))
_ZH_STOP = frozenset("的了是吗呢吧啊呀么什怎我你您他她它们在有和与及或请问一下个这那哪")

INSUFFICIENT_EN = "I could not find evidence for this in the knowledge base."
INSUFFICIENT_ZH = "知识库中没有找到与此相关的依据。"


@dataclass(frozen=True)
class ExtractiveAnswer:
    """An extractive answer and the ids of the evidence it cites, in citation order."""

    answer: str
    evidence_ids: list[str]


def insufficient_message(question: str) -> str:
    """Return the fixed honest reply when there is no usable evidence, in the question's language."""
    return INSUFFICIENT_ZH if is_chinese(question) else INSUFFICIENT_EN


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def terms(text: str) -> dict[str, float]:
    """Return the weighted matching terms of a text.

    English content words (lowercase, plural-stripped, stop words removed) weigh 2; Chinese
    characters (minus function characters) weigh 1 and Chinese character bigrams 2.
    """
    low = text.lower()
    out: dict[str, float] = {}
    for word in _EN_WORD.findall(low):
        if word not in _EN_STOP:
            out[_stem(word)] = 2.0
    for run in _CJK_RUN.findall(low):
        for ch in run:
            if ch not in _ZH_STOP:
                out[ch] = 1.0
        for i in range(len(run) - 1):
            out[run[i : i + 2]] = 2.0
    return out


def sentence_score(query_terms: dict[str, float], sentence: str) -> float:
    """Sum of the weights of query terms that occur in the sentence."""
    found = terms(sentence)
    return sum(weight for term, weight in query_terms.items() if term in found)


def extractive_answer(
    query: str, evidence: list[Evidence], *, max_sentences: int = 3, max_evidence: int = 3
) -> ExtractiveAnswer | None:
    """Pick the best 1–`max_sentences` sentences of the top `max_evidence` chunks for `query`.

    Sentences (split by `control.sentences.split_sentences`, stripped but verbatim, so each is a
    substring of its chunk) are ranked by term overlap with the query (ties: better chunk first,
    earlier sentence first); those scoring at least half of the best are kept. If no sentence shares a
    term with the query, the first sentence of the best chunk is used (the chunk passed the relevance check).
    Each sentence is followed by " [evidence id]". Returns None when `evidence` is empty.
    """
    if not evidence:
        return None
    query_terms = terms(query)
    scored: list[tuple[float, int, int, str, str]] = []
    for rank, item in enumerate(evidence[:max_evidence]):
        for pos, sentence in enumerate(split_sentences(item.text)):
            score = sentence_score(query_terms, sentence)
            scored.append((score, rank, pos, sentence, item.id))
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
