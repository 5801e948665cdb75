"""The answerability decision of the evaluate step: does this evidence answer the question (pure math).

Relevance alone tells "this chunk is about the question's topic"; a question whose fact is absent
(a near miss: same topic, other fact) or whose named entity the corpus never mentions still finds
on-topic chunks. So the decision combines every signal the evidence carries, over the top
`TOP_EVIDENCE` items:

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

Three weight files ship: ``answerability_reader.json`` (fitted with the reader's signals and the
meaning encoder: the default, `shipped_model(encoder, reader=True)`; a missing file is an error),
``answerability_meaning.json`` (the encoder, no reader) and ``answerability.json`` (neither).

A logistic model with one weight block per language (blended by the question's CJK share, as
`haygraph.retrieval.relevance` does) maps the signals to a probability; its weights are trained by
``python -m benchmarks.train_answerability`` on the tune parts only.

Named rules (`RULES`, in order): a question without content terms is refused before the model (no
tune row has one, so the ablation gives it no gain, but bad input is never answered). The others come
after the model and veto its yes, across languages too: a question naming an identifier (`code_terms`:
``__VUE_PROD_TIPS__``, ``defineAsyncComponent``, a code span) that no evidence mentions; asking about a
Chinese noun whose sibling the quoted sentence states (`meaning.contrasted_words`: 晚餐 asked, 午餐
stated); asking for a `REQUIRED_TYPES` type that the units the answer would quote do not hold. Each
stays by its ablation on the tune parts (`benchmarks.ablate_decision`, leaving it out: identifier
refused +0.028; sibling answered +0.082 / refused -0.055; type absent answered +0.083 / refused
-0.045); ``bound`` (a maximum asked, only a default stated) gained nothing on the tune parts but is kept:
without it the unseen knowledge base's "What is the maximum temperature I can set?" was answered with the
default (`tests/adapters/test_agent_unseen_kb.py`); six that gained less than 0.005 on both were deleted.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence, evidence_key
from haygraph.control.language import CJK_RANGES, is_chinese
from haygraph.control.planning.extractive import (
    answer_units,
    asked_type,
    chunk_units,
    extractive_answer,
    heading_names,
    holds_type,
    own_heading,
    question_terms,
    question_text,
    terms,
)
from haygraph.control.planning.meaning import (
    MEANING_SIGNALS,
    MeaningEncoder,
    contrasted_words,
    meaning_signals,
)
from haygraph.control.reading import Reading

TOP_EVIDENCE = 3
"""How many of the best evidence items the signals look at."""

REQUIRED_TYPES = frozenset(
    {"count", "number", "price", "duration", "time", "size", "flag", "default", "version"}
)
"""Asked-for types an answer cannot do without: when the question asks for one ("how many times",
"how many", "how much does it cost", "how long", "what time", "how big", "which version", "which
flag", "the default") and neither a retrieved unit sharing its terms nor the units the answer would
quote (`quotes_type`) hold one (a count of times, a number, an amount of money, a number with a unit
of time or size, a clock time, a version, a code span or ``--flag``, a stated default), the turn is
refused whatever the model's probability — an on-topic sentence without the number, or with the
number of something else, is no answer. Dates, names, places, reasons and definitions are not: their
patterns (capitalised words, "when" in "what happens when …") are too loose to refuse on."""

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

WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability.json"
"""The shipped weights without a meaning encoder (package data), by ``benchmarks.train_answerability``."""
MEANING_WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability_meaning.json"
"""The shipped weights with the meaning encoder (``benchmarks.train_answerability --meaning``)."""
READER_WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability_reader.json"
"""The shipped weights with the trained reader's margin (``benchmarks.train_answerability --reader``)."""

_CJK = re.compile(f"[{CJK_RANGES}]")
_LATIN = re.compile(r"[A-Za-z]")
_QUOTED = re.compile(r"《([^》]+)》|“([^”]+)”|「([^」]+)」|\"([^\"]+)\"|『([^』]+)』")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b[A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)*")
_LATIN_TERM = re.compile(r"[A-Za-z][A-Za-z0-9&.+-]*[A-Za-z0-9]")
_NOT_WORD = re.compile(rf"[^0-9a-z{CJK_RANGES}]+")
_ASKS_BOUND = re.compile(
    r"\b(?:maximum|max|at most|upper limit|minimum|min|at least|lower limit)\b|"
    r"最[多长短少高低大小](?![\u4e00-\u9fff]?的)|至少|上限|下限|封顶",
    re.IGNORECASE,
)
"""A question asking for a bound ("the maximum temperature", 最多几台, 最长能订多久): a value is no answer
unless stated as one. Superlatives of things are no bound ("the largest city", 最高的山, 最大的城市)."""
_CODE_SPAN = re.compile(r"`[^`]*`")
"""A code span: "the `max` prop" names a prop, it asks for no maximum."""
_STATES_BOUND = re.compile(
    r"\b(?:up to|at most|maximum|max|no more than|not more than|exceed\w*|limit\w*|cap(?:s|ped)?|within|"
    r"minimum|min|at least|no less than|not less than|or (?:more|less|longer|shorter|fewer|above|below)|"
    r"only|must|highest|lowest|longest|shortest|largest|smallest|under|below|above|over|between|range\w*|"
    r"from|until|till|each|per|every)\b|[≤≥<>~–-]\s*\d|"
    r"最多|最长|最大|最高|最少|最短|最小|最低|至少|不超过|不超出|超过|超出|上限|下限|以内|以下|以上|之内|内|限|"
    r"不少于|不低于|不高于|封顶|仅|只|每|满",
    re.IGNORECASE,
)
"""Words stating a bound (up to, at most, within, capped, 不超过, 以内, 至少, 限 …), or a range (10–16)."""
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


@dataclass
class RuleInput:
    """What a named rule reads: the question (the rewritten query), the user's words, the evidence."""

    question: str
    asked: str | None
    evidence: Sequence[Evidence]
    signals: dict[str, float]
    encoder: MeaningEncoder | None

    @functools.cached_property
    def kind(self) -> str | None:
        """The type the question asks for (`asked_type`), or None."""
        return asked_type(self.question)

    @functools.cached_property
    def quoted(self) -> list[str]:
        """The units the extractive answer would quote (none when no unit sharing a term holds the type)."""
        if self.signals.get("type_missing"):
            return []
        return would_quote(self.question, self.evidence)


@dataclass(frozen=True)
class Rule:
    """A named hand rule of the decision: `check` returns why the turn is refused, or None.

    `stage` ``before`` rules refuse before the model is consulted; ``after`` rules veto a yes of the
    model (and are skipped when the reader's yes is in the other language, where the question's words
    are not to be found). Each rule's docstring-level figure is the gain it measured in the ablation on
    the tune parts (`benchmarks.ablate_decision`).
    """

    name: str
    stage: str
    check: Callable[[RuleInput], str | None]


def _no_content_terms(r: RuleInput) -> str | None:
    return None if question_terms(r.question) else "no content terms"


def _absent_identifier(r: RuleInput) -> str | None:
    absent = absent_code_terms(r.question, r.evidence)
    return ("no retrieved passage mentions " + ", ".join(f"'{t}'" for t in absent)) if absent else None


def _sibling(r: RuleInput) -> str | None:
    contrasted = contrasted_words(
        r.question,
        [e.text for e in r.evidence],
        quoted_units(r.question, r.evidence),
        r.encoder,
        asked=r.asked,
    )
    if not contrasted:
        return None
    return "no retrieved passage mentions " + ", ".join(
        f"'{word}' (they state '{sibling}')" for word, sibling in contrasted
    )


def _required(r: RuleInput) -> bool:
    return r.kind in REQUIRED_TYPES


def _type_absent(r: RuleInput) -> str | None:
    if not _required(r) or any(holds_type(r.kind, unit) for unit in r.quoted):
        return None
    return f"no retrieved sentence holds the asked-for {r.kind}"


def _bound(r: RuleInput) -> str | None:
    if not _required(r) or not _ASKS_BOUND.search(_CODE_SPAN.sub(" ", r.question)):
        return None
    if any(holds_type(r.kind, unit) and _STATES_BOUND.search(unit) for unit in r.quoted):
        return None
    return f"no retrieved sentence states a limit on the asked-for {r.kind}"


RULES: tuple[Rule, ...] = (
    Rule("no content terms", "before", _no_content_terms),
    Rule("identifier", "after", _absent_identifier),
    Rule("sibling", "after", _sibling),
    Rule("type absent", "after", _type_absent),
    Rule("bound", "after", _bound),
)
"""The decision's named rules, in the order they are tried (`AnswerabilityModel.decide`)."""
RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)


@dataclass(frozen=True)
class Decision:
    """The answer-or-refuse decision of one evaluate step, with the signals it read.

    `rule` names a rule that decided: before the model ("no evidence", "no content terms", "another
    language"; then `signals` is empty) or after it (the asked-for type is absent; `signals` and
    `probability` are the model's).
    """

    answerable: bool
    probability: float
    threshold: float
    signals: dict[str, float] = field(default_factory=dict)
    rule: str | None = None
    margin: float | None = None
    """The reader's best margin (a logit difference), None without a reading or before the model."""
    margin_needed: float | None = None
    """The margin at which, all other signals as they are, the model's probability meets the threshold
    (None when the fitted weights give the margin no weight or there is no reading)."""

    def to_dict(self) -> dict[str, object]:
        """JSON-ready form: ``{answerable, probability, threshold, signals, rule, margin, margin_needed}``."""
        return {
            "answerable": self.answerable,
            "probability": round(self.probability, 4),
            "threshold": self.threshold,
            "signals": {k: round(v, 4) for k, v in self.signals.items()},
            "rule": self.rule,
            "margin": None if self.margin is None else round(self.margin, 3),
            "margin_needed": None if self.margin_needed is None else round(self.margin_needed, 3),
        }


@dataclass(frozen=True)
class AnswerabilityModel:
    """Logistic weights over `FEATURE_NAMES` and the probability threshold of "answerable".

    `encoder` is the meaning encoder the weights were fitted with (None: weights without the meaning
    signals).
    """

    weights: dict[str, float]
    threshold: float = 0.5
    encoder: MeaningEncoder | None = field(default=None, compare=False, repr=False)
    disabled: frozenset[str] = frozenset()
    """Names of `RULES` not applied (the ablation turns rules off one at a time)."""
    lead_margin: float = math.inf
    """The reader margin from which the span's value leads the offline answer (`reader_answer`): fitted
    on the tune parts so that a leading value is right at least 90% of the time (inf: it never leads)."""

    def __post_init__(self) -> None:
        """Check the weight names and the threshold."""
        unknown = sorted(set(self.weights) - set(FEATURE_NAMES))
        if unknown:
            raise ConfigError(f"unknown answerability weight(s) {unknown}; valid: {', '.join(FEATURE_NAMES)}")
        if not 0.0 < self.threshold < 1.0:
            raise ConfigError(f"answerability threshold must be in (0, 1), but got {self.threshold}")
        unknown_rules = sorted(set(self.disabled) - set(RULE_NAMES))
        if unknown_rules:
            raise ConfigError(f"unknown decision rule(s) {unknown_rules}; valid: {', '.join(RULE_NAMES)}")

    @classmethod
    def from_file(cls, path: str | Path, encoder: MeaningEncoder | None = None) -> AnswerabilityModel:
        """Load weights written by the training command (``{"weights": {...}, "threshold": t, ...}``).

        ``lead_margin`` is optional (absent or null: the span's value never leads the answer).
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            lead = data.get("lead_margin")
            return cls(
                weights={k: float(v) for k, v in data["weights"].items()},
                threshold=float(data["threshold"]),
                encoder=encoder,
                lead_margin=math.inf if lead is None else float(lead),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"cannot load answerability weights from {path}: {exc}") from exc

    def decide(
        self,
        question: str,
        evidence: Sequence[Evidence],
        *,
        asked: str | None = None,
        reading: Reading | None = None,
        across: bool = False,
        read_items: Sequence[Evidence] = (),
    ) -> Decision:
        """Whether `evidence` answers `question`, with the probability and the signals behind it.

        `asked`: the user's own words when `question` is the rewritten query (whether it is a yes/no
        question is read from them: rewriting drops the trailing 吗). `across`: the reader's best span
        says yes in a chunk of the other language than the question (`reads_across`): the word rules
        after the model are skipped, as they look for the question's words where there are none.

        Rules first: no evidence, a question without content terms, or one in another language's
        script is not answerable.
        """
        if not evidence:
            return Decision(False, 0.0, self.threshold, rule="no evidence")
        rules = [rule for rule in RULES if rule.name not in self.disabled]
        early = RuleInput(question, asked, evidence, {}, self.encoder)
        for rule in rules:
            if rule.stage == "before" and (why := rule.check(early)):
                return Decision(False, 0.0, self.threshold, rule=why)
        signals = answerability_signals(question, evidence, self.encoder, reading, read_items)
        p = self.probability_of(question, signals)
        said = functools.partial(
            Decision,
            probability=p,
            threshold=self.threshold,
            signals=signals,
            margin=None if reading is None else reading.margin,
            margin_needed=None if reading is None else self.margin_needed(question, signals),
        )
        if p < self.threshold:
            return said(False)
        late = RuleInput(question, asked, evidence, signals, self.encoder)
        for rule in rules:
            if rule.stage == "after" and (why := rule.check(late)):
                return said(False, rule=why)
        return said(True)

    def margin_needed(self, question: str, signals: dict[str, float]) -> float | None:
        """The reader margin at which the probability meets the threshold, the other signals as they are.

        The model is linear in the scaled margin (``reader_margin`` and, across languages,
        ``reader_across_margin``), so this solves ``z(margin) = logit(threshold)``; None when the
        margin's weight is 0 (clipping aside, it may lie outside the reader's range).
        """
        base = {**signals, "reader_margin": 0.0, "reader_across_margin": 0.0}
        z0 = self._z(question, base)
        unit = {**base, "reader_margin": 1.0, "reader_across_margin": signals.get("reader_across", 0.0)}
        slope = self._z(question, unit) - z0
        if abs(slope) < 1e-9:
            return None
        target = math.log(self.threshold / (1.0 - self.threshold))
        return (target - z0) / slope * MARGIN_SCALE

    def _z(self, question: str, signals: dict[str, float]) -> float:
        features = answerability_features(question, signals)
        return sum(self.weights.get(name, 0.0) * x for name, x in zip(FEATURE_NAMES, features, strict=True))

    def probability_of(self, question: str, signals: dict[str, float]) -> float:
        """The model's probability that the evidence answers `question`, from its `signals`."""
        z = self._z(question, signals)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))

    def probability(self, question: str, evidence: Sequence[Evidence]) -> float:
        """Probability that `evidence` answers `question` (0 by rule: no content terms, another script)."""
        return self.decide(question, evidence).probability


def reads_across(question: str, reading: Reading | None, items: Sequence[Evidence]) -> bool:
    """Whether the reader's best span says yes (margin > 0) in an `items` chunk of the other language.

    The chunk's language is compared with `question`'s, not the span's: "25" is in no language.
    """
    if reading is None or not reading.spans or reading.margin <= 0:
        return False
    by_id = {e.id: e for e in items}
    item = by_id.get(reading.spans[0].evidence_id)
    return item is not None and is_chinese(item.text) != is_chinese(question)


@functools.lru_cache(maxsize=8)
def shipped_model(encoder: MeaningEncoder | None = None, *, reader: bool = False) -> AnswerabilityModel:
    """The model shipped with the package (loaded once per encoder and reader, on first use).

    With a `reader`, the weights fitted with the reader's margin (``answerability_reader.json``); else
    with an `encoder`, the weights fitted with the meaning signals (``answerability_meaning.json``);
    without either, those fitted on words alone.
    """
    if reader:
        if not READER_WEIGHTS_FILE.is_file():
            raise ConfigError(
                f"the reader's decision weights {READER_WEIGHTS_FILE} are missing: reinstall haygraph, or "
                "fit them with python -m benchmarks.train_answerability --reader bundled --meaning"
            )
        return AnswerabilityModel.from_file(READER_WEIGHTS_FILE, encoder)
    if encoder is not None and MEANING_WEIGHTS_FILE.is_file():
        return AnswerabilityModel.from_file(MEANING_WEIGHTS_FILE, encoder)
    return AnswerabilityModel.from_file(WEIGHTS_FILE)
