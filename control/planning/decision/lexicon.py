"""The asked-type lexicon: what type of answer a question asks for, and whether a unit holds one.

`asked_type` reads a question ("how many times", 几次, "which version", 默认值 …) against `ASKED_TYPES`;
`holds_type` tells whether an answer unit holds a value of that type (a count, a number, an amount of
money, a duration, a version, a flag, a default …). `asked_time_unit` and `asked_measure` /
`holds_measure` are finer: the unit of time a question counts in ("几个小时"), the Chinese measure word
it counts in ("几层": a number of 层 or 楼). The sentence picker (`extractive`) and the decision's
signals and rules (`signals`, `rules`) read them; this module reads neither.
"""

from __future__ import annotations

import functools
import re

from haygraph.control.language import CJK_RANGES

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
            r"(?<!\d)\d{1,2}[:.]\d{2}(?!\d)|\b\d{1,2}\s*(?:am|pm|a\.m\.|p\.m\.|o'clock)|\bnoon\b|\bmidnight\b|"
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


_QUESTION_WORD = re.compile(r"[几多什么哪怎谁吗呢是为有]")

MEASURE_GROUPS: tuple[tuple[str, ...], ...] = (
    ("层", "楼"),
    ("页", "张"),
    ("台", "辆", "架", "艘", "部"),
    ("座", "栋", "幢", "所", "家", "间"),
    ("名", "位", "人", "员", "人次"),
    ("只", "支", "队"),
    ("本", "册", "卷", "部", "集"),
    ("米", "公里", "千米", "厘米", "毫米", "km", "m"),
    ("克", "千克", "公斤", "吨", "kg"),
    *((m,) for m in ("首", "篇", "章", "场", "届", "级", "颗", "枚", "株", "户", "项", "条", "倍", "块")),
)
"""Chinese measure words a question counts in (几层, 多少名, 多少公里), each with the words an answer may
use for the same thing (名/位/人, 家/间/所, 米/公里)."""
_MEASURE_WORDS = sorted({m for g in MEASURE_GROUPS for m in g if not m.isascii()}, key=len, reverse=True)
_ASKED_MEASURE = re.compile(
    rf"([{CJK_RANGES}]{{2}})?(?:是|为|有|达|共)?(?<![哪那这])(?:几|多少)\s*(?:个)?(?<!个)("
    + "|".join([*_MEASURE_WORDS, "个"])
    + rf")([{CJK_RANGES}]{{1,2}})?"
)
"""A count in a measure word: (the two characters before it, the measure word, the one or two after it).
个 counts whatever follows it: 几个会议室 counts 会议室 (几个 alone counts nothing in particular). A
measure word never follows 个, so after it 座 is the first character of the noun (多少个座位 counts
座位, which a table's 座位数 column states), not a measure word of its own."""


def asked_measure(question: str) -> str | None:
    """The Chinese measure word a question counts in ("Teleport 最多可以嵌套几层？" → 层), or None.

    After 个, what follows it ("多少个节点" → 节点, its first two characters).

    Not after 哪/那/这 (哪几种 asks which kinds, 那几年 is no question), and None for units of time,
    money (几块钱) and size, which `ASKED_TYPES` checks.
    """
    found = _measure_match(question)
    if found is None:
        return None
    return found.group(3) if found.group(2) == "个" else found.group(2)  # 几个会议室: 会议


def _measure_match(question: str) -> re.Match[str] | None:
    text = _TITLE_OR_QUOTE.sub(" ", question)
    found = _ASKED_MEASURE.search(text)
    if found is None or text.startswith("钱", found.end(2)):  # 几块钱: a price
        return None
    after = found.group(3)
    if found.group(2) == "个" and (after is None or _QUESTION_WORD.search(after)):
        return None
    return found


@functools.lru_cache(maxsize=256)
def _measure_pattern(question: str) -> re.Pattern[str] | None:
    found = _measure_match(question)
    if found is None:
        return None
    before, measure, after = found.groups()
    words = {m for group in MEASURE_GROUPS if measure in group for m in group}  # 个: none, only the noun
    nouns = [w for w in (after, before) if w and not _QUESTION_WORD.search(w)]
    counted = "|".join(re.escape(w) for w in [*sorted(words, key=len, reverse=True), *nouns])
    number = rf"(?:\d|{ZH_NUMERALS})[\d.,万亿千百]*\s*(?:多|余|来)?\s*(?:至|到|-|~|～)?\s*[\d.]*\s*(?:个)?"
    return re.compile(
        rf"{number}(?:{counted})|(?:{counted})[^\d\s，。；,;]{{0,2}}\s*(?:为|是|达|约|共|有)?\s*\d",
        re.IGNORECASE,
    )


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


def holds_measure(question: str, unit: str) -> bool:
    """Whether `unit` holds a number of what `question` counts (True when it counts in no measure word).

    For "几层": "共 12 层", "十二层" (or 楼, a word for the same thing: `MEASURE_GROUPS`); the thing
    counted may stand for the measure word, after the number ("多少颗犬齿": "具2至4犬齿") or before it
    ("规模是几级": "规模为7.2").
    """
    pattern = _measure_pattern(question)
    return pattern is None or bool(pattern.search(unit))
