"""Offline query rewriting for English and Chinese: filler stripped, entities kept, 1–3 queries."""

from __future__ import annotations

import re

from haygraph.control.language import words_only
from haygraph.control.planning.input_check import clean_text

_FILLER_EN = [
    r"^(?:hi|hello|hey|and|also|so)\b[\s,!.]*",
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
    "我想知道", "想了解一下", "请问一下", "请问", "麻烦你", "麻烦您", "麻烦", "告诉我", "我想问", "一下",
    "你好", "您好", "帮我",
]  # fmt: skip
_TRAILING_ZH = re.compile(r"[啊吧呢吗呀嘛哦]+[\s?？!！。.~～]*$")


def _strip_fillers(text: str) -> str:
    out = text
    for _ in range(3):  # fillers can be stacked: "Hi, could you please tell me ..."
        before = out
        for pattern in _FILLER_EN:
            out = re.sub(pattern, " ", out, flags=re.IGNORECASE).strip(" ,")
        for phrase in _FILLER_ZH:
            out = out.replace(phrase, "")
        out = _TRAILING_ZH.sub("", out).strip(" ,，、")
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
