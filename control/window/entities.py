"""Rule-based extraction of key entities from English and Chinese text.

Kinds (keys of the returned dict) and what is recognised — deliberately modest:

- `dates`: 2024-05-12, 2024/5/12, 2024.5.12, May 12 2024, May 12th, 2024, 12 May 2024,
  2024年5月12日 -> normalized to YYYY-MM-DD; 5月12日 / 5月12号 / May 12 -> MM-DD (no year);
  relative expressions (下周一, 明天, next Monday, tomorrow ...) are kept as written, lowercased,
  because they cannot be resolved without the date they were said on.
- `money`: $120, US$120, 120 USD, 120 dollars, 120美元 -> "120 USD"; ¥300, ￥300, RMB 300,
  人民币300元, 300元, 300块 -> "300 CNY" (¥ is read as yuan: the product's users are Chinese,
  not Japanese); €50, 50 EUR -> "50 EUR". Thousands separators are removed.
- `user_ids`: U12345 / E-1234 style ids (U or E, optional dash, 4+ digits), and the id after
  工号 / 员工号 / 用户ID / employee id / user id / staff no. (3+ characters).
- `emails`: ordinary addresses, lowercased.
- `products`: names from a configurable list (matched case-insensitively, reported as listed),
  model numbers after 型号 / model (must contain a digit: "型号 X-200", "model AB12"), and, when
  `quoted_products` is on, short names in 《》 or 「」 brackets.
- further kinds given as (kind, pattern) in `EntityConfig.patterns` — e.g. the `order_ids` that the
  example `query_order` tool declares; a `Context` adds the entities of its tool registry's offline
  triggers, so the generic plane itself knows no domain ids.

Each match is masked before the next kind is searched, so a date is never also read as an amount
or an id. `merge_entities` unions results across turns without duplicates, most recent last,
bounded per kind.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from haygraph.control.errors import ConfigError
from haygraph.control.language import normalize_input

ENTITY_KINDS = ("dates", "money", "user_ids", "emails", "products")
"""The built-in kinds, always present in `extract_entities` results (declared kinds are added)."""

_MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?"
_NUM = r"(?P<amt>[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?|[0-9]+(?:\.[0-9]+)?)"
_WEEKDAY_EN = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|week|month|year"

_DATE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"(?<![0-9])(?P<y>[0-9]{4})[-/.](?P<m>[0-9]{1,2})[-/.](?P<d>[0-9]{1,2})(?![0-9])"), "ymd"),
    (
        re.compile(r"(?<![0-9])(?P<y>[0-9]{4})\s*年\s*(?P<m>[0-9]{1,2})\s*月\s*(?P<d>[0-9]{1,2})\s*[日号]"),
        "ymd",
    ),
    (re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(?P<y>[0-9]{{4}})\b", re.IGNORECASE), "ymd"),
    (re.compile(rf"\b{_DAY}\s+{_MONTH},?\s+(?P<y>[0-9]{{4}})\b", re.IGNORECASE), "ymd"),
    (re.compile(r"(?<![0-9年])(?P<m>[0-9]{1,2})\s*月\s*(?P<d>[0-9]{1,2})\s*[日号]"), "md"),
    (re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:,\s*)?[0-9])", re.IGNORECASE), "md"),
    (
        re.compile(
            r"(?:下下|下|上|本|这)个?(?:周|星期|礼拜)[一二三四五六日天]|(?:今|明|后|昨|前)天|大后天|下个?月|下周"
        ),
        "rel",
    ),
    (
        re.compile(rf"\b(?:next|last|this)\s+(?:{_WEEKDAY_EN})\b|\b(?:today|tomorrow|yesterday)\b", re.I),
        "rel",
    ),
]

_MONEY_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"(?:人民币|RMB|CNY|[¥￥])\s*{_NUM}\s*(?:元|块钱|块)?", re.IGNORECASE), "CNY"),
    (re.compile(rf"(?:US)?\$\s*{_NUM}"), "USD"),
    (re.compile(rf"€\s*{_NUM}"), "EUR"),
    (re.compile(rf"(?<![0-9.,]){_NUM}\s*(?:USD\b|dollars?\b|美元|美金)", re.IGNORECASE), "USD"),
    (re.compile(rf"(?<![0-9.,]){_NUM}\s*(?:EUR\b|euros?\b|欧元)", re.IGNORECASE), "EUR"),
    (re.compile(rf"(?<![0-9.,]){_NUM}\s*(?:元|块钱|块|CNY\b|RMB\b)", re.IGNORECASE), "CNY"),
]

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_USER_ID_PATTERNS = [
    re.compile(
        r"(?:工号|员工号|员工编号|用户ID|用户编号|employee\s*(?:id|no\.?|number)|user\s*(?:id|no\.?)|"
        r"staff\s*(?:id|no\.?))\s*(?:is|为|是)?\s*[:：#]?\s*(?P<id>[A-Za-z]{0,3}-?[0-9]{3,})",
        re.IGNORECASE,
    ),
    re.compile(r"(?<![A-Za-z0-9@-])(?P<id>[UE]-?[0-9]{4,})(?![A-Za-z0-9@])"),
]
_MODEL_NUMBER = re.compile(
    r"(?:型号|\bmodel)\s*(?:is|为|是)?\s*[:：]?\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9])", re.I
)
_QUOTED = re.compile(r"《(?P<name>[^《》\n]{1,40})》|「(?P<name2>[^「」\n]{1,40})」")


@dataclass(frozen=True)
class EntityConfig:
    """Settings of `extract_entities`."""

    #: Product names to recognise (case-insensitive), reported as spelled here.
    product_names: tuple[str, ...] = ()
    #: Also read short names in 《》 or 「」 brackets as product names.
    quoted_products: bool = True
    #: Further kinds as (kind, regular expression); the whole match is the value. Searched after
    #: the built-in kinds except products, so a date or amount is never also read as one of them.
    patterns: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "patterns", tuple((str(k), str(p)) for k, p in self.patterns))
        for kind, pattern in self.patterns:
            try:
                _compiled(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"EntityConfig.patterns: the pattern of {kind!r} is not a valid regular expression: {exc}"
                ) from exc


@functools.lru_cache(maxsize=64)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _mask(text: str, match: re.Match[str]) -> str:
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def _add(found: dict[str, list[str]], kind: str, value: str) -> None:
    if value and value not in found[kind]:
        found[kind].append(value)


def _normalize_date(match: re.Match[str], mode: str) -> str | None:
    if mode == "rel":
        return re.sub(r"\s+", " ", match.group(0).lower())
    groups = match.groupdict()
    month = int(groups["m"]) if groups.get("m") else _MONTHS[groups["mon"].lower().rstrip(".")]
    day = int(groups["d"])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{groups['y']}-{month:02d}-{day:02d}" if mode == "ymd" else f"{month:02d}-{day:02d}"


def _normalize_amount(raw: str) -> str:
    amount = raw.replace(",", "")
    if "." in amount:
        amount = amount.rstrip("0").rstrip(".")
    return amount


def extract_entities(text: str, config: EntityConfig | None = None) -> dict[str, list[str]]:
    """Return the entities found in `text` by kind (every kind present, in order of appearance).

    Memoized per (text, config): a turn's question and answer are scanned more than once.
    """
    found = _extract_cached(text, config if config is not None else EntityConfig())
    return {kind: list(values) for kind, values in found.items()}


@functools.lru_cache(maxsize=2048)
def _extract_cached(text: str, config: EntityConfig) -> dict[str, tuple[str, ...]]:
    found = _extract(text, config)
    return {kind: tuple(values) for kind, values in found.items()}


def _extract(text: str, config: EntityConfig) -> dict[str, list[str]]:
    text = normalize_input(text)  # full-width digits and letters are ids too; patterns are ASCII-only
    found: dict[str, list[str]] = {kind: [] for kind in ENTITY_KINDS}
    for kind, _pattern in config.patterns:
        found.setdefault(kind, [])
    rest = text
    hits: list[tuple[int, str, str]] = []  # (position, kind, value) to report in text order

    def scan(pattern: re.Pattern[str], kind: str, value_of: object) -> None:
        nonlocal rest
        for match in list(pattern.finditer(rest)):
            value = value_of(match)  # type: ignore[operator]
            if value:
                hits.append((match.start(), kind, value))
                rest = _mask(rest, match)

    scan(_EMAIL, "emails", lambda m: m.group(0).lower())
    for pattern, mode in _DATE_PATTERNS:
        scan(pattern, "dates", lambda m, mode=mode: _normalize_date(m, mode))
    for pattern, currency in _MONEY_PATTERNS:
        scan(pattern, "money", lambda m, cur=currency: f"{_normalize_amount(m.group('amt'))} {cur}")
    for pattern in _USER_ID_PATTERNS:
        scan(pattern, "user_ids", lambda m: m.group("id").upper())
    for kind, declared in config.patterns:
        scan(_compiled(declared), kind, lambda m: m.group(0))
    for name in sorted(config.product_names, key=len, reverse=True):
        scan(re.compile(re.escape(name), re.IGNORECASE), "products", lambda m, name=name: name)
    scan(
        _MODEL_NUMBER, "products", lambda m: m.group("name") if re.search(r"[0-9]", m.group("name")) else None
    )
    if config.quoted_products:
        scan(_QUOTED, "products", lambda m: (m.group("name") or m.group("name2")).strip())
    for _, kind, value in sorted(hits, key=lambda hit: hit[0]):
        _add(found, kind, value)
    return found


def merge_entities(
    *entity_dicts: Mapping[str, Sequence[str]], max_per_kind: int = 10
) -> dict[str, list[str]]:
    """Union entity dicts (oldest first) without duplicates, keeping the `max_per_kind` most recent.

    A value seen again moves to the end (most recent). Every kind in `ENTITY_KINDS` is present in
    the result; unknown kinds from the inputs are kept as well.
    """
    if max_per_kind < 1:
        raise ValueError(f"max_per_kind must be >= 1, but got {max_per_kind}")
    merged: dict[str, list[str]] = {kind: [] for kind in ENTITY_KINDS}
    for entities in entity_dicts:
        for kind, values in entities.items():
            bucket = merged.setdefault(kind, [])
            for value in values:
                if value in bucket:
                    bucket.remove(value)
                bucket.append(value)
    return {kind: values[-max_per_kind:] for kind, values in merged.items()}


def format_entities(entities: Mapping[str, Sequence[str]]) -> str:
    """Render the non-empty kinds as lines `kind: a, b` for direct injection into the prompt."""
    lines = [f"{kind}: {', '.join(values)}" for kind, values in entities.items() if values]
    return "\n".join(lines)
