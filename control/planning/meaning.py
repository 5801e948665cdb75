"""Signals of meaning for the answerability decision: does the evidence say what the question asks.

Word overlap fails both ways on documents the decision was not fitted to: "How long is the probation
period?" shares few words with "The probation period lasts 6 months." once stop words go, while
"周末晚餐补贴是多少" shares most of its characters with a sentence about the weekend *lunch* allowance.
So the decision also reads

- ``meaning_unit``: how close in meaning the question is to the best answer unit (a sentence, a list
  item, a table row: `extractive.answer_units`) of the top evidence;
- ``meaning_heading``: how close it is to the heading path (or source name) of the best evidence item;
- ``missing_words``: the share of the question's key words (English content words; Chinese words
  cut by jieba, without question words such as 几, 多少, 什么) that no top evidence item contains —
  the asked-for thing (the brand, the dinner, the weekend) missing from every retrieved unit.

The first two come from a multilingual sentence encoder (`MeaningEncoder`; the adapters supply the
bundled multilingual-e5-small). Its cosines sit in a narrow band (unrelated text ~0.75, a paraphrase
~0.9), so they are rescaled to [0, 1] over `COSINE_FLOOR`..`COSINE_CEIL` before the logistic model.
The control plane imports no model: without an encoder these signals are 0 and the decision uses
weights fitted without them.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from haygraph import chinese_words
from haygraph.control.language import CJK, CJK_RANGES, CJK_RUN, script_weights
from haygraph.control.planning.words import question_text, terms

COSINE_FLOOR = 0.72
"""Cosine mapped to 0 (multilingual-e5-small: about the similarity of unrelated sentences)."""
COSINE_CEIL = 0.95
"""Cosine mapped to 1."""

MEANING_SIGNALS: tuple[str, ...] = ("meaning_unit", "meaning_heading", "missing_words")
"""The signals this module adds, in feature order."""

MAX_UNITS = 5
"""Most answer units embedded per decision (the caller orders them, best first): bounds the evaluate
step — multilingual-e5-small takes ~10-20 ms a short unit on one of these cores."""

SCRIPT_SHARE = 0.3
"""Share of the evidence's words a script needs before the question's words in it are looked up (a
Chinese character counts 1/1.5 of a word, an English word one): a Chinese page with a few URLs and
product names is not English evidence."""

_QUESTION_CHARS = re.compile(r"[几多什么哪怎谁吗呢]")
_HOW_PHRASE = re.compile(r"\bhow (?:long|much|many|often|big|large|far|old|soon)\b", re.IGNORECASE)
_ASKED_KIND = re.compile(f"(?:什么|哪个|哪些|哪种|哪一|哪|何种|何)([{CJK_RANGES}]{{2}})")
_ASKED_MANNER = re.compile(f"(?:怎么样|怎么|怎样|如何)([{CJK_RANGES}]{{2}})")
"""The word after "how" (怎么收费, 如何报销) is an action asked about, not a thing: jieba tags 收费 a
noun, and a page saying 计费 ("billed") answers 超出流量怎么收费."""
_YES_NO = re.compile(
    r"(?:吗|(?<![什怎那这多要])么)[\s?？!！。.~～]*$|是否|是不是|能不能|可不可以|有没有|要不要|需不需要|会不会|对不对|"
    r"^\s*(?:is|are|was|were|do|does|did|can|could|should|will|would|must|has|have|may)\b",
    re.IGNORECASE,
)
_ASPECT = frozenset("了过着")
"""Aspect particles: a verbal noun (jieba ``vn``) before one is used as a verb."""
_ZH_GENERIC = frozenset(
    {"可以", "是否", "需要", "能否", "如何", "应该", "一个", "我们", "你们", "这个", "那个"}
)


@runtime_checkable
class MeaningEncoder(Protocol):
    """A sentence encoder: unit-length vectors, queries and passages embedded as the model expects."""

    def embed(self, texts: Sequence[str], *, query: bool) -> Sequence[Sequence[float]]:
        """One unit-length vector per text (`query`: the texts are questions, else passages)."""
        ...


def scaled_cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """The cosine of two unit vectors, rescaled from [`COSINE_FLOOR`, `COSINE_CEIL`] to [0, 1] (clipped)."""
    cosine = math.fsum(x * y for x, y in zip(a, b, strict=True))
    return min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_CEIL - COSINE_FLOOR)))


@functools.lru_cache(maxsize=1024)
def key_words(question: str) -> tuple[str, ...]:
    """The words a question asks about: English content words (stemmed) and Chinese words of 2+ chars.

    Chinese is cut with jieba (loaded on first use); words holding a question character (几, 多, 什么,
    哪, 怎, 谁) say how something is asked, not what about, and are left out.
    """
    asked = _HOW_PHRASE.sub(" ", question_text(question))
    words = [t for t in terms(asked) if t.isascii() and " " not in t]
    runs = CJK_RUN.findall(asked)
    if runs:
        for run in runs:
            words.extend(
                w
                for w in chinese_words.cut(run)
                if len(w) >= 2 and not _QUESTION_CHARS.search(w) and w not in _ZH_GENERIC
            )
    return tuple(dict.fromkeys(words))


def missing_words(question: str, texts: Sequence[str]) -> tuple[list[str], int]:
    """The question's `key_words` that none of `texts` contains, and how many words were looked up.

    Only words in a script the texts are written in are looked up (at least `SCRIPT_SHARE` of their
    words): an English word cannot be found in Chinese evidence, so a question in the other
    language is left to the meaning signals.
    """
    joined = " ".join(texts).lower()
    cjk, latin = script_weights(joined)
    words = [w for w in key_words(question) if (latin if w.isascii() else cjk) >= SCRIPT_SHARE]
    found = terms(joined)
    return [w for w in words if (w not in found if w.isascii() else w not in joined)], len(words)


SYNONYM_COSINE = 0.97
"""Passage cosine (multilingual-e5-small) from which two words are taken as synonyms, not siblings:
薪资/工资 0.980 and 费用/花费 0.967 against 晚餐/午餐 0.951, 病假/年假 0.950, 周末/周一 0.946
(员工/职工 0.959 and 婚假/产假 0.964 sit together: the line is not clean)."""


def contrasted_words(
    question: str,
    texts: Sequence[str],
    units: Sequence[str],
    encoder: MeaningEncoder | None = None,
    *,
    asked: str | None = None,
) -> list[tuple[str, str]]:
    """The question's missing Chinese key words that `units` name a sibling of: (missing, sibling).

    Only nouns and time words count (jieba's part-of-speech tags). A sibling is a word of the unit of
    the same length and head character but another modifier —
    晚餐 asked, 午餐 stated; 病假 asked, 年假 stated — and not in the question: the unit speaks of
    another member of the same kind, the near miss that meaning alone cannot tell (e5 puts
    "周末晚餐补贴是多少" as close to the lunch sentence as to a dinner one). `texts` are all the
    evidence (a word any of them holds is not missing); `units` the answer units that would be quoted.
    With an `encoder`, a sibling as close in meaning as a synonym (`SYNONYM_COSINE`) does not count.
    A yes/no question has none: "还需要手动加吗" over a sentence saying it happens 自动 is answered
    by the contrast (read from `asked`, the user's own words, when `question` is a rewritten query).
    """
    if _YES_NO.search(question) or (asked is not None and _YES_NO.search(asked)):
        return []
    missing = [w for w in missing_words(question, texts)[0] if not w.isascii() and len(w) == 2]
    if not missing or not units:
        return []

    def things(text: str) -> set[str]:
        # two-character nouns and time words (晚餐, 周末), not verbs or numerals (要用, 一天); a verbal
        # noun followed by an aspect particle is a verb ("设置了 max": an action, not a thing)
        tagged = chinese_words.tagged(text)
        return {
            word
            for (word, flag), nxt in zip(tagged, [*tagged[1:], None], strict=True)
            if len(word) == 2
            and CJK.match(word[0])
            and (flag[0] in "nt" or (flag == "vn" and not (nxt and nxt[0][:1] in _ASPECT)))
        }

    nouns = things(question_text(question))
    # the word after 什么 / 哪个 names the kind of the answer ("属于什么科目" is answered by "...科"),
    # not a thing the evidence should hold
    kinds = {m.group(1) for m in _ASKED_KIND.finditer(question)}
    kinds |= {m.group(1) for m in _ASKED_MANNER.finditer(question)}  # how it is done: an action
    missing = [w for w in missing if w in nouns and w not in kinds]
    stated = set().union(*(things(unit) for unit in units)) if missing else set()
    found = []
    for word in missing:
        siblings = sorted(w for w in stated if w[1] == word[1] and w[0] != word[0] and w not in question)
        if siblings and encoder is not None:
            vectors = encoder.embed([word, *siblings], query=False)
            siblings = [
                w
                for w, v in zip(siblings, vectors[1:], strict=True)
                if math.fsum(x * y for x, y in zip(vectors[0], v, strict=True)) < SYNONYM_COSINE
            ]
        if siblings:
            found.append((word, siblings[0]))
    return found


_NOT_A_NOUN = re.compile(r"[几多什么哪怎谁吗呢是有的了在和与及或也都就还又被把给对从到为以]")
"""Characters no two-character noun of a question holds (question words and function characters)."""


@functools.lru_cache(maxsize=4096)
def _nouns(text: str) -> frozenset[str]:
    """The two-character Chinese nouns of `text` (jieba's ``n`` tags)."""
    tagged = chinese_words.tagged(text)
    return frozenset(word for word, flag in tagged if len(word) == 2 and CJK.match(word[0]) and flag == "n")


@functools.lru_cache(maxsize=1024)
def _asked_pairs(asked: str) -> frozenset[str]:
    """The two-character words of a question, as jieba cuts it, without question or function characters.

    Pairs of single characters it cuts apart count too (年 / 假 in 年假有几天: its dictionary lacks 年假).
    """
    pairs: set[str] = set()
    for run in CJK_RUN.findall(asked):
        cut = chinese_words.cut(run)
        pairs.update(w for w in cut if len(w) == 2)
        pairs.update(a + b for a, b in itertools.pairwise(cut) if len(a) == len(b) == 1)
    return frozenset(p for p in pairs if not _NOT_A_NOUN.search(p))


def sibling_nouns(question: str, unit: str) -> list[str]:
    """The nouns of `unit` that name another member of a kind the question asks about.

    A two-character noun of the unit (事假, 晚餐) whose head, its second character, closes a
    two-character word of the question (年假, 午餐) with another first character, when the unit never
    names the question's pair and the question never names the noun: "事假 … 不超过 10 天" speaks of
    another leave than "年假有几天". The question's side is its two-character words and the pairs of
    single characters jieba cuts apart (`_asked_pairs`), since jieba's dictionary lacks some nouns.
    """
    asked = question_text(question)
    pairs = {p for p in _asked_pairs(asked) if p not in unit}
    if not pairs:
        return []
    return sorted(
        w for w in _nouns(unit) if w not in asked and any(w[1] == p[1] and w[0] != p[0] for p in pairs)
    )


def warm_up() -> None:
    """Load what the sibling rule reads with, now: jieba's dictionary and its part-of-speech tables.

    Importing `jieba.posseg` unmarshals its tables while holding the interpreter lock for a few hundred
    milliseconds; a server calls this at start-up so that pause is not paid in the middle of serving.
    """
    chinese_words.warm_up()


def missing_share(question: str, texts: Sequence[str]) -> float:
    """Share of the question's looked-up `key_words` that none of `texts` contains (0 when none)."""
    missing, looked_up = missing_words(question, texts)
    return len(missing) / looked_up if looked_up else 0.0


def closeness(question: str, passages: Sequence[str], encoder: MeaningEncoder) -> list[float]:
    """How close in meaning each passage is to what `question` asks (`scaled_cosine`, 0-1)."""
    query = encoder.embed([question_text(question)], query=True)[0]
    return [scaled_cosine(query, v) for v in encoder.embed(passages, query=False)]


def meaning_signals(
    question: str,
    units: Sequence[str],
    headings: Sequence[str],
    texts: Sequence[str],
    encoder: MeaningEncoder | None,
) -> dict[str, float]:
    """`MEANING_SIGNALS` of the top evidence.

    `units`: its answer units, best first (the first `MAX_UNITS` are read); `headings`: the heading
    path (or source name) of each item; `texts`: each item's full text.

    Without an `encoder` the two meaning signals are 0; ``missing_words`` needs none.
    """
    out = {"meaning_unit": 0.0, "meaning_heading": 0.0, "missing_words": missing_share(question, texts)}
    if encoder is None:
        return out
    units = list(dict.fromkeys(u for u in units if u.strip()))[:MAX_UNITS]
    headings = [h for h in headings[:1] if h.strip()]  # the best item's: each passage costs ~10-20 ms
    passages = units + headings
    if not passages:
        return out
    scores = closeness(question, passages, encoder)
    out["meaning_unit"] = max(scores[: len(units)], default=0.0)
    out["meaning_heading"] = max(scores[len(units) :], default=0.0)
    return out
