"""Offline query rewriting for English and Chinese: filler stripped, entities kept, 1–3 queries."""

from __future__ import annotations

import re

from haygraph import chinese_words
from haygraph.control.language import CJK, words_only
from haygraph.control.planning.input_check import clean_text

_FILLER_EN = [
    r"^(?:hi|hello|hey)(?: there)?\b[\s,!.]*",
    r"^(?:and|also|so|ok(?:ay)?|um+|uh+|er+|well|btw|by the way|sorry|thanks|thank you|"
    r"(?:a )?quick question|one more thing|one last thing|just (?:wondering|curious|checking))"
    r"(?![\w'-])[\s,!.:;–—-]*",
    r"^(?:could|can|would|will) you (?:please )?(?:tell me|let me know|explain|help me(?: to)?"
    r"(?: (?:find|understand|check))?)?\b",
    r"^i(?:'d| would) like to know\b",
    r"^i (?:want|need) to know\b",
    r"^i(?:'m| am) wondering\b",
    r"^(?:do you know|tell me)\b",
    r"\b(?:please|kindly)\b",
    r"\b(?:thanks|thank you)\b[.!]*$",
]
_FILLER_ZH = [
    "能不能告诉我", "可不可以告诉我", "可以告诉我", "帮我看看", "帮我查一下", "帮我查查", "我想问一下",
    "我想知道", "想了解一下", "请问一下", "请问下", "请问", "麻烦你", "麻烦您", "麻烦问下", "麻烦", "告诉我",
    "我想问下", "想问下", "我想问", "问一下", "一下",
    "你好", "您好", "帮我",
]  # fmt: skip
_TRAILING_ZH = re.compile(r"[啊吧呢吗呀嘛哦哈啦呗]+[\s?？!！。.~～]*$")
_LEADING_ZH = re.compile(
    r"^(?:好吧|好的|好|嗯+|哦+|噢|呃|额|那么|那个|对了|另外|话说|然后|是这样|是啊|是的|ok|okay)(?:[，,、.。!！~～\s]+|$)"
    r"|^(?:嗯+|哦+|噢|呃|话说|对了)",  # not 那么 unpunctuated: 那么多, 那么长 ("so many", "so long")
    re.IGNORECASE,
)
"""Discourse markers opening a chatty Chinese question ("好吧，…", "嗯，…", "话说…"): they carry no topic
and split the next word wrongly ("那年假" cuts as 那年 / 假)."""


def _strip_leading_zh(text: str) -> str:
    """`text` without its opening discourse markers and a leading 那 ("那年假有几天" → "年假有几天").

    A leading 那 ("so, …") goes unless it begins a demonstrative (那些, 那个, 那年 …) or a name jieba
    knows (那不勒斯).
    """
    out = text
    for _ in range(3):
        before = out
        out = _LEADING_ZH.sub("", out).lstrip(" ,，、")
        if out.startswith("那") and len(out) > 2:
            cut = chinese_words.cut(out)
            if len(cut[0]) < 3 and (out[1] not in _DEMONSTRATIVE or _glued_noun(out, cut)):
                out = out[1:].lstrip(" ,，、")
        if out == before:
            break
    return out


_DEMONSTRATIVE = frozenset("些个样里边天年时种么儿位次份会段条家本张件批")
"""What follows 那 when it means "that" (那些, 那个, 那年, 那时 …), not "so"."""

_FUNCTION_CHARS = frozenset(
    "的了是在和与及或也都就还又被把给对从到为以我你他她它们不没很才去来吗呢吧啊呀能会要可该得想应需请有让用做怎多几哪谁什"
)
"""Characters that do not continue a noun — function words, pronouns, modal and common verbs, question
words: after 那天 / 那年 they leave the demonstrative reading (那天 / 能请假吗, 那次 / 有问题吗)."""


def _glued_noun(text: str, cut: list[str]) -> bool:
    """Whether the character after 那 in `text` belongs to what follows it, not to a demonstrative.

    jieba cuts 那年假 as 那年 / 假 ("that year"), where it means "so, annual leave". Glued: the piece
    after 那年 / 那天 is a single content character (那年 / 假, 那天 / 数) or a word jieba only made
    up (那年 / 假要); not a word of its dictionary (那年 / 夏天), nor a piece that starts with a
    function, modal or question character (那天 / 是, 那天 / 能, 那年 / 会发). `cut`: jieba's cut of `text`.
    """
    if len(cut) < 2 or cut[0] != text[:2] or text[1] in "么样些个儿里边":  # 那么多, 那样, 那些: never
        return False
    nxt = cut[1]
    if not CJK.match(nxt[0]) or nxt[0] in _FUNCTION_CHARS:
        return False
    return len(nxt) == 1 or (len(nxt) == 2 and chinese_words.frequency(nxt) is None)


def _strip_fillers(text: str) -> str:
    out = text
    for _ in range(3):  # fillers can be stacked: "Hi, could you please tell me ..."
        before = out
        for pattern in _FILLER_EN:
            out = re.sub(pattern, " ", out, flags=re.IGNORECASE).strip(" ,")
        for phrase in _FILLER_ZH:
            out = out.replace(phrase, "")
        out = _TRAILING_ZH.sub("", out).strip(" ,，、")
        out = _strip_leading_zh(out)
        if out == before:
            break
    return " ".join(out.split()).strip(" ,，、?？!！。.~～")


def rewrite_query(text: str) -> list[str]:
    """1–3 retrieval queries: filler and politeness stripped, entities (numbers, ids, names) kept.

    The first query is the whole rewritten question; each further one is a separate sub-question
    when the message asks several. Never empty: falls back to the cleaned original text.
    """
    cleaned = clean_text(text)
    main = _strip_fillers(cleaned)
    queries = [main] if words_only(main) else []
    parts = [p for p in re.split(r"[?？]+", cleaned) if words_only(p)]
    if len(parts) > 1:
        for part in parts:
            sub = _strip_fillers(part)
            if words_only(sub) and sub not in queries and len(queries) < 3:
                queries.append(sub)
    return queries or [cleaned]
