"""Every user-facing message exists in English and Chinese, with the same placeholders."""

from __future__ import annotations

import string

import pytest

from haygraph.control import texts
from haygraph.control.texts import Bilingual

MESSAGES = {
    **{name: value for name, value in vars(texts).items() if isinstance(value, Bilingual)},
    **{f"CHITCHAT_REPLIES[{kind}]": value for kind, value in texts.CHITCHAT_REPLIES.items()},
}


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_both_languages_with_the_same_placeholders(name: str) -> None:
    message = MESSAGES[name]
    assert message.en.strip() and message.zh.strip()
    assert placeholders(message.en) == placeholders(message.zh)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in message.en)  # no Chinese in the English text


def test_language_follows_the_question() -> None:
    assert (
        texts.TOO_LONG.for_question("这太长了", length=5, limit=3)
        == "您的问题太长（5 个字符，上限 3）。请缩短后再问。"
    )
    assert texts.TOO_LONG.for_question("too long", length=5, limit=3) == (
        "Your question is too long (5 characters; the limit is 3). Please shorten it."
    )
    assert texts.RUN_FAILED.for_question("出错了吗") == "出了点问题，请稍后再试。"
    assert texts.NEED_DETAILS.for_question("") == "Could you give me a few more details?"
