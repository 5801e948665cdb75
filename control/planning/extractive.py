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


EN_NUMERALS = (
    r"(?<!\bthe )(?<!\bnew )(?<!\bthis )(?<!\bthat )(?<!\beach )(?<!\bany )(?<!\bevery )(?<!\bno )"
    r"(?<!\bwhich )(?<!\bother )(?<!\bsame )one|"
    r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|fifty|"
    r"sixty|hundred|thousand|million|once|twice|dozen|"
    r"an? (?=(?:day|week|month|hour|year|minute)s?\b)"
)
"""English number words (and "a"/"an" before a unit of time: "an hour", "a year"). Not "half": "taken in
half days" names a unit of leave, not how many days (it outranked the 12/15/20-day table); not the
pronoun "one" ("the new one", "each one", "no one")."""
ZH_NUMERALS = r"[零〇一二两三四五六七八九十百千万亿半几]+"
"""Chinese numerals (三年, 十二天, 两周, 半个月)."""
ZH_MEASURES = (
    r"(?:个|次|名|人|天|年|月|周|元|块|倍|项|条|种|家|张|台|份|位|岁|层|楼|页|本|辆|所|座|小时|分钟|秒|%|成|"
    r"公里|米|千克|公斤|克|万|亿|千|百)"
)
"""Measure words and units a Chinese numeral stands before when it counts something (三次, 两名, 五倍)."""


_SIZE_OR_TIME_UNIT = (
    r"\s*(?:ms|milliseconds?|s\b|secs?|seconds?|min|minutes?|h\b|hours?|days?|weeks?|months?|years?|"
    r"[kmgt]i?b|bytes?|px|em|rem|%|毫秒|秒|分钟|小时|天|周|个月|年|字节|兆)"
)
"""What turns a number into a measure (200ms, 14kb, 3 天): a count of times is none of these."""

_CURRENCY_CODE = r"\b(?:usd|eur|gbp|cny|rmb|jpy|hkd|sgd|chf)\b"
_CURRENCY_WORD = (
    r"(?:元|块|角|美元|欧元|英镑|日元|港币|港元|人民币|"
    r"\bdollars?\b|\beuros?\b|\bpounds?\b|\byuan\b|\bcents?\b)"
)
"""Currencies: an amount of money is a number with one of them (USD 12.00, 80 元), or a number shortly
after a currency in brackets or a price word ("住宿上限（元/间·晚）: 450", "Price: 12.00", "the fee is 30";
not "元素", not "a 16kb size cost")."""

_ZH_COUNT = (
    rf"(?!一\s*[个种套]|几)(?:{ZH_NUMERALS})\s*{ZH_MEASURES}|"
    r"(?:只|仅|唯|有且仅)(?:有|能有|可以有|能|可)?\s*一\s*[个种位套]"
)
"""A number in Chinese words (三年, 十二天, 两个) — not 一个 / 一种, the article "a" of any sentence
("类似一个 LRU 缓存"), nor 几个 ("several"), unless said as a count: 只有一个, 仅一种."""

ASKED_TYPES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "count": (
        re.compile(r"\bhow many times\b|\bhow many (?:re)?tries\b|几次|多少次|几遍|多少遍|几回|多少回"),
        re.compile(
            rf"\b(?:once|twice|thrice)\b|(?:\d+|{EN_NUMERALS}|several|multiple)\s*(?:more\s+)?times\b|"
            rf"(?:\d+|{ZH_NUMERALS})\s*(?:次|遍|回)|"
            rf"(?<![\w.])\d+(?![\w.:/-]|{_SIZE_OR_TIME_UNIT})",
            re.IGNORECASE,
        ),
    ),
    "version": (
        re.compile(
            r"\b(?:which|what|minimum|earliest|oldest|lowest) (?:\w+ )?versions?\b|"
            r"\bsince (?:which|what) version\b|"
            r"哪个版本|哪一版|什么版本|哪个版(?![\u4e00-\u9fff])|最低版本|版本号?是多少|从哪个版本|几版(?![\u4e00-\u9fff])"
        ),
        re.compile(
            r"\b[vV]?\d+\.(?:\d+|x)\b|\b[vV]\d+\b|\bversion\s+\d+|(?-i:[A-Z0-9]{2,})版|\d\s*版|版本\s*\d",
            re.IGNORECASE,
        ),
    ),
    "flag": (
        re.compile(
            r"\bwhich (?:cli |command[- ]line )?(?:flag|option|switch|command|parameter|argument|setting)\b|"
            r"\bwhat (?:cli |command[- ]line )?(?:flag|switch|command)\b|"
            r"\b(?:flag|option|command) (?:do|should) i\b|"
            r"\bwhich (?:\w+ )?(?:function|composable|hook|directive|macro)s?\b|"
            r"哪个(?:参数|选项|命令|开关|配置项)|哪条命令|什么(?:参数|选项|命令|开关)|用什么命令|"
            r"(?:哪个|哪些|什么|哪一个)[\u4e00-\u9fff]{0,4}?(?:函数|钩子|指令|宏|API|api)"
        ),
        re.compile(r"`[^`]+`|(?<![\w-])--?[A-Za-z][\w-]*|^\s*\$\s"),
    ),
    "duration": (
        re.compile(
            r"\bhow long\b|\bhow much time\b|"
            r"\bin (?:milliseconds|seconds|minutes|hours|days|weeks|months|years)\b|"
            r"\bhow many (?:working |calendar |business )?"
            r"(?:days|weeks|months|hours|years|minutes|seconds|milliseconds)\b|多久|多长时间|几天|几周|几个月|几年(?![级度])|几(?:个)?(?:小时|钟头|分钟|星期|工作日)|"
            r"多少(?:个)?(?:天|小时|分钟|秒|毫秒|周|个月|年)"
        ),
        re.compile(
            rf"(?:\d+|{EN_NUMERALS})\s*(?:-\s*)?(?:working\s+|calendar\s+|business\s+)?"
            r"(?:(?:work|business|week)?days?|nights?|weeks?|months?|hours?|hrs?|years?|minutes?|mins?|"
            r"seconds?|secs?|ms|milliseconds?)\b|"
            rf"(?:\d+|{ZH_NUMERALS})\s*(?:个)?(?:天|周|星期|月|小时|钟头|年|分钟|秒|毫秒|工作日)|"
            rf"(?:\d+|{EN_NUMERALS})\s*(?:-\s*)?(?:characters?|chars|letters|digits|words|lines|pages|"
            r"(?:kilo|centi|milli)?met(?:er|re)s?|km|cm|mm|miles?|feet|foot|inch(?:es)?)\b|"
            # an option's unit named apart from its bare value: "Seconds to wait … Default: `120`",
            # "timeout (ms): 5000", "超时时间（秒）：30", "单位为毫秒，默认 200"
            r"(?:\b(?:in|of)\s+|^\s*|[:→(,]\s*)(?:milliseconds|seconds|minutes|hours)\b[^.\n]{0,80}?(?<![\w.])\d+(?![\w.])|"
            r"[(（]\s*(?:ms|s|sec|secs|seconds|min|minutes|h|hours|毫秒|秒|分钟|小时|天)\s*[)）][^。；;\n]{0,30}?\d|"
            r"单位(?:为|是)\s*(?:毫秒|秒|分钟|小时|天)[^。；;\n]{0,30}?\d",
            re.IGNORECASE,
        ),
    ),
    "time": (
        re.compile(r"\b(?:at )?what time\b|\bwhat hour\b|几点|什么时间(?:到|来|去|上班|下班|开始|结束)"),
        re.compile(
            r"\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)|\bnoon\b|\bmidnight\b|"
            rf"(?:\d{{1,2}}|{ZH_NUMERALS})\s*[点时](?!间)|上午|下午|中午|早上|晚上|凌晨|"
            r"\d+\s*月\s*\d+\s*日|\d{4}\s*年",
            re.IGNORECASE,
        ),
    ),
    "size": (
        re.compile(
            r"\bhow (?:big|large|heavy)\b|\bwhat(?:'s| is) the (?:maximum |max |file )?size\b|"
            r"\bsize (?:limit|of)\b|\bhow much (?:disk|space|memory|storage|ram)\b|"
            r"\bhow many (?:mb|gb|kb|tb|bytes|megabytes|gigabytes)\b|"
            r"(?<!年龄)(?<!年纪)(?<!岁数)多大(?!年纪|岁数|学)|大小(?!写)|容量|多少\s*(?:mb|gb|kb|兆|字节)|多重|尺寸"
        ),
        re.compile(
            r"\d\s*(?:-\s*)?(?:[KMGTP]i?B|[kmgt]b|bytes?|(?:kilo|mega|giga|tera)bytes?|字节|兆|[KMGT]\b|"
            r"m²|m2|km²|km2|sqm|square (?:met|feet|foot|kilomet|mile)|hectares?|acres?|"
            r"平方米|平米|平方公里|平方千米|公顷|亩|[cmk]m\b|inch(?:es)?|寸|kg|公斤|克|"
            r"(?:people|persons|seats|guests)\b|人)",
            re.IGNORECASE,
        ),
    ),
    "date": (
        re.compile(
            r"\bwhen(?:'s| (?:is|are|was|were|do|does|did|will|would|can|could|should|must|shall|may|"
            r"might|has|have|had)\b)|\bwhen\s*[?？]|\b(?:by|until|till|since|from) when\b|"
            r"\bwhat (?:date|day)\b|\b(?:what|which) dates\b|\bwhich days?\b|什么时候|何时|哪天|几号|日期"
        ),
        re.compile(
            r"\b\d{1,2}:\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
            r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|\d+\s*[月日号点]|\b\d{4}\b",
            re.IGNORECASE,
        ),
    ),
    "default": (
        re.compile(r"\bdefault(?:s|ed)?\b|默认|缺省"),
        re.compile(
            r"\bdefaults?\s*(?:[:=]|to\b|is\b|value|of\b|setting)|\bthe default \w+ (?:is|are)\b|"
            r"\(default:?\s*[^)\s]|"
            r"\bby default\b|\bdefaulting to\b|"
            r"默认(?:值|为|是|的|情况下|设置|会|将|\*{0,2}\s*[:：]|\s*`)|缺省(?:值|为|是|[:：])|"
            r"默认[\u4e00-\u9fff]{1,4}?(?:为|是)\s*\S",
            re.IGNORECASE,
        ),
    ),
    "price": (
        re.compile(
            r"\bhow much (?:does|do|did|will|would|is|are|was)\b[^?？]*\b(?:cost|charge|pay|fee|price)|"
            r"\bhow much (?:money|do i (?:have to |need to )?pay|to pay)\b|"
            r"\bwhat (?:does|do) .{1,60}\bcost\b|"
            r"\bwhat(?:'s| is| are) the (?:\w+ )?(?:price|cost|fee|charge)s?\b|"
            r"多少钱|几块钱|什么价|价格?是多少|价钱|费用是?多少|收费(?:标准)?是?多少|收多少|花多少|付多少"
        ),
        re.compile(
            rf"(?:{_CURRENCY_CODE}|[¥￥$€£])\s*\d|"
            rf"\d[\d,.]*\s*(?:万|千|k)?\s*(?:{_CURRENCY_CODE}|{_CURRENCY_WORD})|"
            rf"(?:{_CURRENCY_CODE}|[¥￥$€£]|[（(]\s*{_CURRENCY_WORD}|{_CURRENCY_WORD}\s*[/）)]|"
            r"\bprices?\b|\bcosts?\b|\bfees?\b|\bcharges?\b|价格|费用|金额|收费)[^.。!！?？;；\n]{0,25}?\d|"
            r"\d\s*(?:%|万|亿)|\bper ?cent\b|\bfree\b|\bno charge\b|\bat no cost\b|免费|不收费|不收取",
            re.IGNORECASE,
        ),
    ),
    "number": (
        re.compile(
            r"\bhow (?:many|much)\b|\bwhat (?:percentage|amount|number)\b|\bmaximum\b|\bminimum\b|\blimit\b|"
            r"\b(?:largest|highest|biggest|smallest|lowest|maximum|minimum) (?:number|value|count)\b|多少|几|"
            r"(?:年龄|年纪|岁数)多大|多大(?:年纪|岁数)"
        ),
        re.compile(
            rf"\d|\b(?:{EN_NUMERALS})\b|{_ZH_COUNT}|"
            r"\b(?:multiple|any number of|unlimited|infinity)\b|多个|任意数量|数量不限|无限",
            re.IGNORECASE,
        ),
    ),
    "name": (
        re.compile(r"\bwho\b|\bwhose\b|\bwhich (?:team|person|department)\b|谁|哪位|哪个部门"),
        re.compile(r"\b[A-Z][a-z]+|经理|主管|部|负责人|总监|HR|CFO|CEO"),
    ),
    "reason": (
        re.compile(r"\bwhy\b|\bwhat is the reason\b|为什么|为何|原因|何故|得名"),
        re.compile(
            r"\bbecause\b|\bdue to\b|\bsince\b|\bso that\b|\bas a result\b|"
            r"因为|由于|因此|所以|因而|故|以便|为了",
            re.IGNORECASE,
        ),
    ),
    "definition": (
        re.compile(r"\bwhat does .+ mean\b|\bdefin(?:e|ition)\b|定义|内涵|含义|意思是|指什么"),
        re.compile(r"\bmeans\b|\brefers? to\b|\bis defined\b|是指|指的是|定义为|即|称为", re.IGNORECASE),
    ),
    "place": (
        re.compile(r"\bwhere\b|哪里|哪儿|在哪|什么地方"),
        re.compile(r"\bfloor\b|\broom\b|\bwing\b|\boffice\b|\bdesk\b|楼|室|厅|区|\b[A-Z][a-z]+"),
    ),
}
"""The asked-for answer type: (question pattern, answer-unit pattern), checked in this order.

A count ("how many times", 几次) is held by a number of times (3 times, 三次, a bare 3), not by a
measure (200ms, 14kb, 3 天); a duration ("how long", 多久) by a number with a unit of time — or, in
English, of length: "how long must a password be" asks for 14 characters; a version ("which
version", 哪个版本) by 3.2, v3 or 3.x; a flag or command name ("which flag…", 哪个参数) by a code span
or a ``--flag``; a size ("how big", "how many kb", 多大, 大小) by a number with a data or physical
unit (MB, 平方米, seats, a 27-inch screen) — checked before the date, so the "when" of "how many kb …
when X is false" does not make it a date question (nor does any "when" that joins a clause, "the
hotel limit when I travel": a date is asked by "when is/do/can …", "by when", "which dates", "which day",
held by a date, a year, a month or a weekday, "Tuesdays" too); a price ("how much
does … cost", 多少钱) by an amount of money (a number with a currency beside it or in the unit's
table header, a percentage of a price, or "free"/免费), not by any number (15 层 is no price); a
default value ("default", 默认) by the word stating a value or behaviour ("Defaults to 30",
"Default: 30", "by default", 默认值是 30, 默认为; not "the default content" / 默认内容, a default that
is a thing, not a setting).
"""

TYPE_BONUS = 1.5
"""Factor on the score of a unit that holds the asked-for type (a number for "how many", ...)."""


_TITLE_OR_QUOTE = re.compile(r"《[^》]*》|“[^”]*”|「[^」]*」|『[^』]*』|\"[^\"]*\"")


_DEFAULT_ACTION = re.compile(
    r"\bprevent\w*\s+(?:the\s+)?default\w*|\bdefault\s+(?:behaviou?rs?|actions?|events?)\b|"
    r"\bdefault\s+(?:slot\s+)?(?:content|slots?|exports?)\b|"
    r"(?:阻止|取消|禁止)默认|默认(?:行为|事件|动作|内容|插槽|导出)",
    re.IGNORECASE,
)
"""Defaults that are things, not values: the browser's default action ("prevent the default behaviour",
阻止默认行为), a slot's default content (默认内容, "default slot content"), a default export."""


def asked_type(question: str) -> str | None:
    """The type of answer a question asks for (`ASKED_TYPES`: flag, duration, date, size, default, ...).

    None when the question asks for none of them. Titles and quotations are left out: 《大小姐×执事！》
    names a book, it does not ask for a size.
    """
    asked = _DEFAULT_ACTION.sub(" ", _TITLE_OR_QUOTE.sub(" ", question)).lower()
    for name, (asks, _holds) in ASKED_TYPES.items():
        if asks.search(asked):
            return name
    return None


def holds_type(kind: str | None, unit: str) -> bool:
    """Whether `unit` holds an answer of the asked-for `kind` (False when no type was asked)."""
    return kind is not None and bool(ASKED_TYPES[kind][1].search(unit))


TIME_UNITS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = tuple(
    (
        re.compile(asks),
        re.compile(rf"(?:\d|{ZH_NUMERALS}|{EN_NUMERALS})[^.。;；,，]{{0,12}}?(?:{states})", re.I),
    )
    for asks, states in (
        (r"hours?|小时|钟头", r"\b(?:hours?|hrs?|h)\b|小时|钟头"),
        (r"minutes?|分钟", r"\b(?:minutes?|mins?)\b|分钟"),
        (r"seconds?|秒", r"\b(?:seconds?|secs?|s)\b|秒"),
        (r"(?:working |business |calendar )?days?|天|日|工作日", r"\b(?:work|business)?days?\b|天|日|工作日"),
        (r"weeks?|周|星期", r"\bweeks?\b|周|星期"),
        (r"months?|月", r"\bmonths?\b|月"),
        (r"years?|年", r"\byears?\b|年"),
    )
)
"""Units of time a question may count in ("how many hours", 几个小时), each with the pattern of a
duration stated in it (a number, then the unit within a few characters)."""
_ASKED_TIME_UNIT = re.compile(
    r"\bhow many ((?:working |business |calendar )?[a-z]+)\b|(?<![哪那这])(?:几|多少)\s*(?:个)?"
    r"(小时|钟头|分钟|秒|工作日|天|日|周|星期|月|年)",
    re.IGNORECASE,
)


def asked_time_unit(question: str) -> re.Pattern[str] | None:
    """What states a duration in the unit of time a question counts in ("几个小时": 4 小时), or None.

    "会议室最长能订几个小时" is answered by "单次预订时长不超过 4 小时", not by "预订最长 3 个月" of
    another rule; "how long" names no unit (None).
    """
    found = _ASKED_TIME_UNIT.search(question)
    if found is None:
        return None
    word = (found.group(1) or found.group(2)).lower()
    return next((states for asks, states in TIME_UNITS if asks.fullmatch(word)), None)


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
