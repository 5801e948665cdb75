"""The decision's named rules, in the order they are tried (`RULES`), each kept by measurement.

A rule reads a `RuleInput` (the rewritten query, the user's words, the evidence, the model's signals)
and returns why the turn is refused, or None. ``before`` rules refuse before the model is consulted;
``after`` rules veto the model's yes, in every language pair. `benchmarks.ablate_decision` leaves each
out on the tune parts (handbook, CMRC, docs, docs across languages, paraphrase; hybrid retrieval, each
variant at its own threshold) and reports its gain in answered and refused; each rule's docstring
gives its figure, measured with the shipped reader and decision (December 6, ``--min-refusal 0.7`` as the
shipped threshold was picked: the gain is the rates with all rules minus those without it, each at its
own threshold, mean over the 12 groups; a vetoing rule lets the threshold fall, so most gains show in
answered). Rules that gained less than 0.005 on both were deleted (name,
type subject, default number, another script, another language), unless a test of a real failure on
data nobody tuned on keeps them (``no content terms``, ``measure``, ``bound``: named in their
docstrings).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from haygraph.control.evidence import Evidence
from haygraph.control.planning.decision.lexicon import asked_measure, asked_type, holds_measure, holds_type
from haygraph.control.planning.decision.signals import absent_code_terms, quoted_units, would_quote
from haygraph.control.planning.meaning import MeaningEncoder, contrasted_words
from haygraph.control.planning.words import question_terms

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
    model, in every language pair. The docstring of each `check` gives the gain it measured in the
    ablation on the tune parts (`benchmarks.ablate_decision`).
    """

    name: str
    stage: str
    check: Callable[[RuleInput], str | None]


def _no_content_terms(r: RuleInput) -> str | None:
    """A question without content terms ("can you tell me about that?") is refused before the model.

    Ablation: answered +0.000 / refused +0.000 (no tune row has one); kept, as bad input is never answered
    (`tests/eval/test_agent_harness_integration.py::TestBadInput`).
    """
    return None if question_terms(r.question) else "no content terms"


def _absent_identifier(r: RuleInput) -> str | None:
    """An identifier the question names that no evidence mentions.

    `signals.code_terms`: ``__VUE_PROD_TIPS__``, ``defineAsyncComponent``, a code span; evidence that
    never mentions it answers another question. Ablation: answered +0.000 / refused +0.028 (vetoes 14 rows).
    """
    absent = absent_code_terms(r.question, r.evidence)
    return ("no retrieved passage mentions " + ", ".join(f"'{t}'" for t in absent)) if absent else None


def _sibling(r: RuleInput) -> str | None:
    """A Chinese noun asked about whose sibling the quoted sentence states.

    `meaning.contrasted_words`: 晚餐 asked, 午餐 stated.
    Ablation: answered +0.082 / refused -0.054 (vetoes 52 rows).
    """
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
    """A `REQUIRED_TYPES` type asked for that the units the answer would quote do not hold.

    A number for "how many", money for a price, a version for "which version".
    Ablation: answered +0.083 / refused -0.031 (vetoes 48 rows).
    """
    if not _required(r) or any(holds_type(r.kind, unit) for unit in r.quoted):
        return None
    return f"no retrieved sentence holds the asked-for {r.kind}"


def _measure(r: RuleInput) -> str | None:
    """A count in a Chinese measure word (几层, 几个等级) when the quoted units hold no number of it.

    `lexicon.holds_measure`. Ablation: answered +0.000 / refused +0.001 (vetoes 10 rows); kept: without
    it "绩效结果分几个等级？" over the handbook was answered with the review process's steps (the grades
    are only in a table, not counted; `tests/adapters/service/test_web_page.py`).
    """
    measure = asked_measure(r.question) if r.kind in ("number", "count") else None
    if measure is None or any(holds_measure(r.question, unit) for unit in r.quoted):
        return None
    return f"no retrieved sentence holds a number of '{measure}'"


def _bound(r: RuleInput) -> str | None:
    """A bound asked for ("the maximum temperature", 最多几台) that no quoted unit states as one.

    Ablation: answered +0.000 / refused +0.000 (vetoes 2 rows); kept: without it the unseen knowledge base's
    "What is the maximum temperature I can set?" was answered with the default
    (`tests/adapters/test_agent_unseen_kb.py`).
    """
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
    Rule("measure", "after", _measure),
    Rule("bound", "after", _bound),
)
"""The decision's named rules, in the order they are tried (`AnswerabilityModel.decide`)."""
RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
