"""The decision's fitted model and `AnswerabilityModel.decide`: rules before, the model, rules after.

Three weight files ship: ``answerability_reader.json`` (fitted with the reader's signals and the
meaning encoder: the default, `shipped_model(encoder, reader=True)`; a missing file is an error),
``answerability_meaning.json`` (the encoder, no reader) and ``answerability.json`` (neither).

A logistic model with one weight block per language (blended by the question's CJK share, as
`haygraph.retrieval.relevance` does) maps the signals to a probability; its weights are trained by
``python -m benchmarks.train_answerability`` on the tune parts only.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Evidence
from haygraph.control.planning.decision.rules import RULE_NAMES, RULES, RuleInput
from haygraph.control.planning.decision.signals import (
    FEATURE_NAMES,
    MARGIN_SCALE,
    answerability_features,
    answerability_signals,
)
from haygraph.control.planning.meaning import MeaningEncoder
from haygraph.control.reading import Reading

WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability.json"
"""The shipped weights without a meaning encoder (package data), by ``benchmarks.train_answerability``."""
MEANING_WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability_meaning.json"
"""The shipped weights with the meaning encoder (``benchmarks.train_answerability --meaning``)."""
READER_WEIGHTS_FILE = Path(__file__).resolve().parent / "answerability_reader.json"
"""The shipped weights with the trained reader's margin (``benchmarks.train_answerability --reader``)."""


@dataclass(frozen=True)
class Decision:
    """The answer-or-refuse decision of one evaluate step, with the signals it read.

    `rule` says why a rule refused: before the model ("no evidence", "no content terms"; then `signals`
    is empty) or after it (e.g. the asked-for type is absent; `signals` and `probability` are the
    model's).
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
        read_items: Sequence[Evidence] = (),
    ) -> Decision:
        """Whether `evidence` answers `question`, with the probability and the signals behind it.

        `asked`: the user's own words when `question` is the rewritten query (whether it is a yes/no
        question is read from them: rewriting drops the trailing 吗). `reading`: the reader's reading of
        the evidence and of `read_items` (the candidates it read beside them).

        A loop: no evidence is no answer; the ``before`` rules of `RULES` (not `disabled`); the model's
        probability against the threshold; the ``after`` rules, which veto a yes.
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
        """Probability that `evidence` answers `question` (0 when a rule before the model refuses)."""
        return self.decide(question, evidence).probability


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
