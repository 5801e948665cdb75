"""The decision's signals: what the evidence and the reader's reading say about one question.

Relevance alone tells "this chunk is about the question's topic"; a question whose fact is absent
(a near miss: same topic, other fact) or whose named entity the corpus never mentions still finds
on-topic chunks. So the decision combines every signal the evidence carries, over the top
`TOP_EVIDENCE` items (`answerability_signals`, in `SIGNALS` order):

- ``relevance``: the best calibrated relevance, and ``lexical_relevance`` instead when the best item
  was scored by BM25 alone (``meta["bm25_score"]`` without ``meta["dense_score"]``: bm25 mode, whose
  calibration has a narrower scale — one weight for both scales let bm25-mode near misses through);
  and the ``gap`` to the second (rank gap / score cliff);
- ``idf_coverage``: the best BM25 idf-weighted query-term coverage (`Evidence.meta["term_coverage"]`);
- ``coverage``: the best share of the question's weighted content terms (English words, Chinese
  characters and bigrams, `extractive.question_terms`: without interrogative and politeness phrases
  such as 请问, 能不能, 多少, which say how a question is asked, not what about) found in one chunk;
- ``span``: the longest stretch of the question (letters and digits only, interrogative phrases
  left out) found verbatim in a chunk, as a share of it — questions written against a passage copy
  its phrases;
- ``entities``: the share of the question's key entities (titles in 《》, quoted terms, numbers,
  dates, capitalized names, Latin terms in Chinese text) found in the chunks, and ``has_entities``;
- ``unit_coverage``: the best share of the question's weighted terms found in one answer unit (a
  sentence, a table row with its header, an FAQ pair: `extractive.answer_units`) — a near miss
  spreads the question's words over a section, an answer holds them in one place;
- ``type_missing``: 1 when the question asks for a type (number, duration, date, name, place:
  `extractive.asked_type`) and none of the units that share its terms holds one, else 0;
- ``meaning_unit``, ``meaning_heading``, ``missing_words``: what the question means against the best
  answer unit and heading path, and the share of its key words no evidence item holds
  (`haygraph.control.planning.meaning`; the first two need a `MeaningEncoder`).

- ``reader_margin``, ``reader_across``, ``reader_across_margin``: the trained reader's best span margin
  over "no answer", whether that span is in the other language, and their product (`reader_signals`).

`answerability_features` turns them into the model's inputs: one block per language (each signal times
the question's share of that language's script, then a bias), so each language has its own weights
and threshold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from haygraph.control.evidence import Evidence, evidence_key
from haygraph.control.language import CJK_RANGES, is_chinese
from haygraph.control.planning.decision.lexicon import asked_type, holds_type
from haygraph.control.planning.extractive import (
    answer_units,
    chunk_units,
    extractive_answer,
    heading_names,
    own_heading,
)
from haygraph.control.planning.meaning import MEANING_SIGNALS, MeaningEncoder, meaning_signals
from haygraph.control.planning.words import question_text, terms
from haygraph.control.reading import Reading

TOP_EVIDENCE = 3
"""How many of the best evidence items the signals look at."""

SIGNALS: tuple[str, ...] = (
    "relevance",
    "lexical_relevance",
    "gap",
    "idf_coverage",
    "coverage",
    "span",
    "entities",
    "has_entities",
    "unit_coverage",
    "type_missing",
    *MEANING_SIGNALS,
    "reader_margin",
    "reader_across",
    "reader_across_margin",
)
"""Per-question signals, in feature order within each language block (each block ends with a bias)."""

FEATURE_NAMES: tuple[str, ...] = tuple(
    f"{lang}_{name}" for lang in ("en", "zh") for name in (*SIGNALS, "bias")
)
"""The model's inputs and weights: en_relevance, ..., en_bias, zh_relevance, ..., zh_bias."""

_CJK = re.compile(f"[{CJK_RANGES}]")
_LATIN = re.compile(r"[A-Za-z]")
_QUOTED = re.compile(r"《([^》]+)》|“([^”]+)”|「([^」]+)」|\"([^\"]+)\"|『([^』]+)』")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*")
_LATIN_TERM = re.compile(r"[A-Za-z][A-Za-z0-9&.+-]*[A-Za-z0-9]")
_NOT_WORD = re.compile(rf"[^0-9a-z{CJK_RANGES}]+")
_GENERIC_NAMES = frozenset({"I", "I'm", "Could", "Can", "What", "How", "Is", "Are", "Do", "Does"})


def script_shares(text: str) -> tuple[float, float, float]:
    """Shares of CJK, ASCII-Latin and other letters among the letters of `text` (zeros if none)."""
    cjk = latin = other = 0
    for ch in text:
        if _CJK.match(ch):
            cjk += 1
        elif _LATIN.match(ch):
            latin += 1
        elif ch.isalpha() and not ch.isascii() and not _is_latin_extended(ch):
            other += 1
    total = cjk + latin + other
    return (cjk / total, latin / total, other / total) if total else (0.0, 0.0, 0.0)


def _is_latin_extended(ch: str) -> bool:
    return "\u00c0" <= ch <= "\u024f"


def key_entities(question: str) -> list[str]:
    """Key entities of a question, lowercased, deduplicated, in order of appearance.

    Quoted or 《》 titles, numbers and dates, capitalized names (English), Latin terms (Chinese text).
    """
    found: list[str] = []
    for match in _QUOTED.finditer(question):
        found.append(next(g for g in match.groups() if g))
    found.extend(_NUMBER.findall(question))
    if _CJK.search(question):
        found.extend(_LATIN_TERM.findall(question))
    else:
        found.extend(n for n in _NAME.findall(question) if n not in _GENERIC_NAMES)
    return list(dict.fromkeys(e.strip().lower() for e in found if e.strip()))


_CODE_TERM = re.compile(
    r"`([^`\n]+)`"  # a code span
    r"|(?<![A-Za-z0-9_.$-])((?:--?)?[A-Za-z_$][A-Za-z0-9_$]*(?:[._-][A-Za-z0-9_$]+)*)(?![A-Za-z0-9_$])"
)


_WEB_HOST = re.compile(r"^www\.|\.(?:com|org|net|io|cn|dev|edu|gov|example|co|uk|de|app)$", re.IGNORECASE)
"""A web address in a question is where, not what: "bought on shop.example.com" names no identifier."""


_CAMEL_CASE = re.compile(r"[A-Z]?[a-z]+(?:[A-Z][a-z]+)+$")
"""camelCase / PascalCase in humps of lowercase letters (defineAsyncComponent, KeepAlive): code names.
Mixed-case names with capital runs (UreB, TatAD, mRNA, CoMYMV) are left out: scientific names are
written several ways (UreB, urease subunit B), an identifier in code one way."""


def code_terms(question: str) -> list[str]:
    """Identifiers the question names, lowercased.

    Code spans, and words with an underscore, a dot inside (``vue.global.prod.js``, ``app.config``;
    not e.g. or a web address), lowercase humps (``defineAsyncComponent``, ``KeepAlive``: `_CAMEL_CASE`)
    or a leading ``--`` (a flag).

    Such a name is the specific thing a question asks about: evidence that never mentions it
    answers another question, however close in meaning.
    """
    found = []
    for match in _CODE_TERM.finditer(question):
        span, word = match.group(1), match.group(2)
        if span:
            found.append(span.strip())
        elif word and (
            "_" in word.strip("_")
            or "__" in word
            or ("." in word and max(map(len, word.split("."))) > 1 and not _WEB_HOST.search(word))
            or word.startswith("-")
            or _CAMEL_CASE.match(word)
        ):
            found.append(word)
    return list(dict.fromkeys(t.lower() for t in found if len(t) > 2))


_EVERYDAY_NAMES: dict[str, tuple[str, ...]] = {
    "wifi": ("无线", "wlan"),
    "wechat": ("微信",),
    "powerpoint": ("ppt", "幻灯片", "演示文稿"),
    "iphone": ("苹果手机",),
}
"""Everyday product words with humps that Chinese text usually writes in Chinese (WiFi: 无线网络)."""
_HYPHEN_OR_SPACE = re.compile(r"[-\s]+")


def absent_code_terms(question: str, evidence: Sequence[Evidence]) -> list[str]:
    """The question's `code_terms` that no evidence item's text (or source name) contains.

    Spelled with or without hyphens and spaces (WiFi: Wi-Fi); an everyday word in `_EVERYDAY_NAMES`
    is also found by its Chinese name.
    """
    joined = " ".join(f"{e.source} {e.text}" for e in evidence).lower()
    unhyphenated = _HYPHEN_OR_SPACE.sub("", joined)

    def present(term: str) -> bool:
        bare = _HYPHEN_OR_SPACE.sub("", term)
        if term in joined or bare in unhyphenated:
            return True
        return any(name in joined for name in _EVERYDAY_NAMES.get(bare, ()))

    return [t for t in code_terms(question) if not present(t)]


def _squash(text: str) -> str:
    return _NOT_WORD.sub("", text.lower())


def longest_shared_span(question: str, text: str) -> int:
    """Length of the longest substring of the squashed question found in the squashed text."""
    q, t = _squash(question), _squash(text)
    best = 0
    for i in range(len(q)):
        j = i + best + 1
        while j <= len(q) and q[i:j] in t:
            best = j - i
            j += 1
    return best


def term_share(question_terms: dict[str, float], text: str) -> float:
    """Weighted share of the question's terms that occur in `text` (0 when the question has none)."""
    total = sum(question_terms.values())
    if not total:
        return 0.0
    found = terms(text)
    return sum(w for t, w in question_terms.items() if t in found) / total


MARGIN_SCALE = 4.0
"""The reader's margin (a logit difference, about -15..15) is divided by this, after clipping to
±`MARGIN_CLIP`, so its weight is on the scale of the other signals."""
MARGIN_CLIP = 12.0


def _scaled(margin: float) -> float:
    return max(-MARGIN_CLIP, min(MARGIN_CLIP, margin)) / MARGIN_SCALE


def reader_signals(question: str, reading: Reading | None, items: Sequence[Evidence]) -> dict[str, float]:
    """The reader's signals: its best margin, and whether that span is in the other language.

    - ``reader_margin``: the best span's margin over its item's no-answer score, clipped to
      ±`MARGIN_CLIP` and divided by `MARGIN_SCALE` (the floor when no span was read);
    - ``reader_across``: 1 when that span's item (one of `items`: the evidence and the candidates the
      reader read) is written in the other language than the question (`is_chinese`), else 0;
    - ``reader_across_margin``: their product.

    So the fitted model has its own threshold and slope on the margin for an answer in the question's
    language and for one across languages (SQuAD 2.0's null-score rule, once per side). All 0 without a
    `reading` (no reader: the weights fitted without it).
    """
    if reading is None:
        return {"reader_margin": 0.0, "reader_across": 0.0, "reader_across_margin": 0.0}
    chinese = {e.id: is_chinese(e.text) for e in items}
    best = reading.spans[0] if reading.spans else None
    margin = _scaled(best.margin if best is not None else reading.margin)
    across = float(
        best is not None and best.evidence_id in chinese and chinese[best.evidence_id] != is_chinese(question)
    )
    return {"reader_margin": margin, "reader_across": across, "reader_across_margin": margin * across}


def answerability_signals(
    question: str,
    evidence: Sequence[Evidence],
    encoder: MeaningEncoder | None = None,
    reading: Reading | None = None,
    read_items: Sequence[Evidence] = (),
) -> dict[str, float]:
    """The per-question signals (`SIGNALS`) of the best `TOP_EVIDENCE` evidence items, best first.

    Without an `encoder`, ``meaning_unit`` and ``meaning_heading`` are 0; without a `reading` (the
    reader's, `haygraph.control.reading`), the reader's signals are 0 (`reader_signals`; `read_items`:
    the candidates it may have read beside `evidence`).
    """
    top = sorted(evidence, key=evidence_key, reverse=True)[:TOP_EVIDENCE]
    if not top:
        return dict.fromkeys(SIGNALS, 0.0)
    keys = [evidence_key(e) for e in top]
    asked = question_text(question)
    q_terms = terms(asked)
    squashed = max(1, len(_squash(asked)))
    entities = key_entities(question)
    joined = " ".join(" ".join(e.text.split()).lower() for e in top)
    idf = [float(e.meta.get("term_coverage", 0.0) or 0.0) for e in top]
    lexical = "bm25_score" in top[0].meta and "dense_score" not in top[0].meta
    return {
        "relevance": 0.0 if lexical else keys[0],
        "lexical_relevance": keys[0] if lexical else 0.0,
        "gap": keys[0] - (keys[1] if len(keys) > 1 else 0.0),
        "idf_coverage": max(idf),
        "coverage": max(term_share(q_terms, e.text) for e in top),
        "span": max(longest_shared_span(asked, e.text) for e in top) / squashed,
        "entities": (sum(1 for x in entities if x in joined) / len(entities)) if entities else 1.0,
        "has_entities": 1.0 if entities else 0.0,
        **unit_signals(question, q_terms, top, encoder),
        **reader_signals(question, reading, [*evidence, *read_items]),
    }


def unit_signals(
    question: str, q_terms: dict[str, float], top: Sequence[Evidence], encoder: MeaningEncoder | None = None
) -> dict[str, float]:
    """``unit_coverage``, ``type_missing`` and the meaning signals over the answer units of `top`."""
    headings = [" > ".join(e.heading_path) or Path(e.source).stem.replace("-", " ") for e in top]
    texts = [f"{h} {e.text}" for h, e in zip(headings, top, strict=True)]
    # meaning reads the units that share most of the question first (evidence order among equals, so
    # a question in the other language, sharing no word, reads the best evidence's first units)
    ranked = units_by_share(q_terms, top)
    meaning = meaning_signals(question, [unit for unit, _ in ranked], headings, texts, encoder)
    best = ranked[0][1] if ranked else 0.0
    kind = asked_type(question)
    missing = kind is not None and not any(holds_type(kind, u) for u, share in ranked if share > 0)
    if missing and kind == "flag":  # a name asked for may be the heading the unit sits under
        missing = not any(
            heading_names(unit.heading or own_heading(e)) and term_share(q_terms, unit.text) > 0
            for e in top
            for unit in chunk_units(e.text)
        )
    return {"unit_coverage": best, "type_missing": 1.0 if missing else 0.0, **meaning}


def units_by_share(q_terms: dict[str, float], top: Sequence[Evidence]) -> list[tuple[str, float]]:
    """The answer units of `top` with their `term_share`, most shared first (evidence order among equals)."""
    units = [unit for e in top for unit in answer_units(e.text)]
    return sorted(((unit, term_share(q_terms, unit)) for unit in units), key=lambda pair: -pair[1])


def quoted_units(question: str, evidence: Sequence[Evidence], n: int = 3) -> list[str]:
    """The `n` answer units of the top evidence sharing most of the question's terms, best first.

    Those an extractive answer would quote; none when no unit shares any term.
    """
    top = sorted(evidence, key=evidence_key, reverse=True)[:TOP_EVIDENCE]
    return [unit for unit, share in units_by_share(terms(question_text(question)), top)[:n] if share > 0]


def quotes_type(question: str, evidence: Sequence[Evidence], kind: str) -> bool:
    """Whether the extractive answer to `question` from the top evidence quotes a unit holding `kind`.

    A unit sharing a term somewhere in the evidence may hold a number of another thing (a 200 ms delay
    beside "how many retries", a 14 kB saving of another option): the asked-for value must be in what
    would be quoted, the units that answer the question best.
    """
    return any(holds_type(kind, unit) for unit in would_quote(question, evidence))


def would_quote(question: str, evidence: Sequence[Evidence]) -> list[str]:
    """The units the extractive answer to `question` from the top evidence quotes (none without one)."""
    top = sorted(evidence, key=evidence_key, reverse=True)[:TOP_EVIDENCE]
    quoted = extractive_answer(question, top, max_evidence=TOP_EVIDENCE)
    return quoted.units if quoted is not None else []


def answerability_features(question: str, signals: dict[str, float]) -> tuple[float, ...]:
    """The model's inputs in `FEATURE_NAMES` order: each signal (and a bias of 1) times its language share."""
    cjk, latin, _other = script_shares(question)
    share = cjk / (cjk + latin) if cjk + latin else 0.0
    values = [signals[name] for name in SIGNALS] + [1.0]
    return tuple(w * x for w in (1.0 - share, share) for x in values)
