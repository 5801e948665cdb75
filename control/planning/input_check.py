"""Input checks: clean the raw question and say, in the user's language, what is wrong with it."""

from __future__ import annotations

import unicodedata

from pydantic import BaseModel

from haygraph.control.texts import EMPTY_MESSAGE, NO_WORDS, TOO_LONG


class QuestionCheck(BaseModel):
    """The cleaned question and, if it is unusable, what is wrong with it (in the user's language)."""

    text: str
    problem: str | None = None


_FULL_WIDTH_ALNUM = {
    **{0xFF10 + i: 0x30 + i for i in range(10)},
    **{0xFF21 + i: 0x41 + i for i in range(26)},
    **{0xFF41 + i: 0x61 + i for i in range(26)},
}
"""Full-width digits and Latin letters (ＯＫ, １２, ＶＰＮ) and their ASCII forms."""


def clean_text(text: str) -> str:
    """Drop control/format characters (tabs and newlines become spaces) and collapse whitespace.

    Full-width digits and Latin letters, which a Chinese input method types in its full-width mode
    ("ＶＰＮ怎么连？", "年假有１２天吗", "ＯＫ"), become their ASCII forms, as the documents and
    every word list write them; full-width punctuation (，？：) stays, as Chinese text writes it.
    """
    chars = []
    for ch in text.translate(_FULL_WIDTH_ALNUM):
        if ch in "\t\n\r\x0b\x0c":
            chars.append(" ")
        elif unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Co"):
            chars.append(ch)
    return " ".join("".join(chars).split())


def check_question(raw: object, max_chars: int) -> QuestionCheck:
    """Clean the raw question and say what is wrong with it, if anything.

    Problems: not text, empty or whitespace/control characters only, longer than `max_chars` (after
    cleaning), or no letter/digit at all (only symbols, punctuation or emoji). Mixed scripts are fine.
    """
    text = clean_text(raw) if isinstance(raw, str) else ""
    if not text:
        return QuestionCheck(text="", problem=EMPTY_MESSAGE.for_question(text))
    if len(text) > max_chars:
        problem = TOO_LONG.for_question(text, length=len(text), limit=max_chars)
        return QuestionCheck(text=text[:max_chars], problem=problem)
    if not any(unicodedata.category(ch)[0] in "LN" for ch in text):
        return QuestionCheck(text=text, problem=NO_WORDS.for_question(text))
    return QuestionCheck(text=text)
