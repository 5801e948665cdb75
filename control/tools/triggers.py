"""Offline triggers: how a tool contract tells the rule-based router (no model) when to call it.

The generic router (`haygraph.control.planning.routing.route_question`) knows no domain: it walks
the registry and asks each contract's `OfflineTrigger` whether the message is for its tool. A
trigger declares, per language, the keywords of the tool's subject, the cues that the user means
their own case rather than the subject in general, the entity that fills an argument (its pattern,
the entity kind it is remembered under, and the clarification to ask when it is missing), and fixed
arguments. The example tools (`haygraph.adapters.examples.tools`) declare the one for `query_order`.

Matching, for one message (see `route_question` for the order over contracts):

1. The entity is found in the message and the message is on topic (`keywords`) — or consists of
   nothing but the entity and `bare_entity` is set: call the tool with the first value found.
2. On topic, about the user's own case (`specific`, when given) and not a general question
   (`general`): call the tool with the entity remembered from earlier turns, else ask for it
   (`EntityArgument.ask`, prefixed by `EntityArgument.invalid` when a malformed value was given).
   A trigger without an entity calls its tool with the fixed arguments.
3. Otherwise the trigger does not apply.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from haygraph.control.errors import ToolContractError
from haygraph.control.language import normalize_input
from haygraph.control.texts import Bilingual


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolContractError(f"{what} is not a valid regular expression ({exc}): {pattern!r}") from exc


@dataclass(frozen=True)
class Cues:
    """Words that signal something in a message, per language.

    `en` holds regular-expression fragments matched as whole words in the lowercased message
    (e.g. ``"orders?"``, ``"deliver(?:y|ed)"``); `zh` holds plain substrings (Chinese has no word
    boundaries), e.g. ``"订单"``.
    """

    en: tuple[str, ...] = ()
    zh: tuple[str, ...] = ()
    _en_regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "en", tuple(self.en))
        object.__setattr__(self, "zh", tuple(self.zh))
        if self.en:
            regex = _compile(r"\b(?:" + "|".join(self.en) + r")\b", "an English cue")
            object.__setattr__(self, "_en_regex", regex)

    def found_in(self, text: str) -> bool:
        """Whether any cue occurs in `text`."""
        if self._en_regex is not None and self._en_regex.search(text.lower()):
            return True
        return any(cue in text for cue in self.zh)


@dataclass(frozen=True)
class EntityArgument:
    """An entity found in the user's words that fills one argument of the tool."""

    argument: str
    """The argument of the contract's `args_model` it fills, e.g. "order_id"."""

    kind: str
    """The entity kind it is remembered under across turns (`State.entities`), e.g. "order_ids"."""

    pattern: str
    """Regular expression finding a valid value in free text (with its own boundaries)."""

    ask: Bilingual
    """The clarification asked when the value is missing, e.g. "Please give me your order number"."""

    malformed: str | None = None
    """Regular expression finding a value the user meant but got wrong (e.g. too few digits)."""

    invalid: Bilingual | None = None
    """Prefix of `ask` naming a malformed value, with a `{value}` placeholder."""

    _regex: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _malformed_regex: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_regex", _compile(self.pattern, f"entity {self.kind!r} pattern"))
        if self.malformed is not None:
            regex = _compile(self.malformed, f"entity {self.kind!r} malformed pattern")
            object.__setattr__(self, "_malformed_regex", regex)

    def find_all(self, text: str) -> list[str]:
        """Return every valid value in `text` (NFKC-normalised first, see `normalize_input`), in order."""
        return [match.group(0) for match in self._regex.finditer(normalize_input(text))]

    def without_values(self, text: str) -> str:
        """Return `text` (NFKC-normalised) with every valid value blanked out."""
        return self._regex.sub(" ", normalize_input(text))

    def find_malformed(self, text: str) -> str | None:
        """Return the first malformed value in `text` (NFKC-normalised), or None."""
        if self._malformed_regex is None:
            return None
        match = self._malformed_regex.search(normalize_input(text))
        return match.group(0) if match else None

    def clarification(self, question: str, wrong: str | None = None) -> str:
        """Return the question asking for the value in the language of `question`, naming `wrong` if given."""
        prefix = self.invalid.for_question(question, value=wrong) if wrong and self.invalid else ""
        return prefix + self.ask.for_question(question)


@dataclass(frozen=True, eq=False)
class OfflineTrigger:
    """When the offline router calls a tool (see the module docstring for the matching rules).

    Compared and hashed by identity (its `args` are a dict), so a contract holding it stays hashable.
    """

    keywords: Cues
    """The message is about the tool's subject (e.g. order, delivery, 订单, 快递)."""

    specific: Cues | None = None
    """The message is about the user's own case (my, where is, 我的, 还没); None = no such condition."""

    general: Cues | None = None
    """General questions about the subject that the knowledge base answers (policy, how long, 一般)."""

    entity: EntityArgument | None = None
    """The entity filling an argument; None = the tool needs no value from the user."""

    args: Mapping[str, Any] = field(default_factory=dict)
    """Fixed arguments added to every offline call (e.g. {"detail_level": "summary"})."""

    bare_entity: bool = True
    """A message that is nothing but the entity value (e.g. just an order number) calls the tool."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", dict(self.args))
        if self.entity is not None and self.entity.argument in self.args:
            raise ToolContractError(
                f"offline trigger: argument {self.entity.argument!r} is filled by the entity and "
                "must not also be a fixed argument"
            )
