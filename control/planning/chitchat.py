"""Chit-chat: recognise a message that is only a greeting, thanks, closing or small talk, and reply to it.

A closing ("thanks, that's all", "ok thanks bye", "就这些，谢谢", "没有了，谢谢") is kind "bye" and gets a
closing reply, not "anything else?"; thanks or a closing followed by a question ("thanks, and what is
the refund policy?", "好的，那报销要多久？") is a question. An acknowledgement alone ("ok", "got it",
"I see", "好的", "好吧", "收到", "明白了") is kind "ack": it asks nothing, so nothing is retrieved for it
(a knowledge base holds "好" somewhere, and quoting that sentence back is no reply).
"""

from __future__ import annotations

from typing import Literal

from haygraph.control.language import words_only
from haygraph.control.texts import CHITCHAT_REPLIES

ChitchatKind = Literal["greeting", "thanks", "identity", "bye", "ack"]

_CHITCHAT_EN = {
    "thanks": [
        "thank you very much", "thank you so much", "thanks a lot", "thank you", "thanks", "thx", "ty",
        "that was helpful", "that helps", "very helpful", "appreciate it",
    ],
    "identity": ["who are you", "what are you", "what is your name", "what's your name"],
    "bye": [
        "that s all", "that is all", "that will be all", "that s it", "that s everything", "nothing else",
        "no more questions", "no further questions", "i m done", "i am done", "i m good", "all good",
        "have a nice day", "have a good day", "goodbye", "good bye", "bye bye", "bye", "see you",
        "see ya", "take care", "cheers",
    ],
    "greeting": [
        "good morning", "good afternoon", "good evening", "how are you doing", "how are you",
        "how is it going", "nice to meet you", "hello", "hey", "hi", "yo",
    ],
    "ack": [
        "got it", "i see", "i understand", "understood", "noted", "makes sense", "sounds good",
        "all right", "gotcha", "kk", "k", "ok", "okay", "alright",
    ],
}  # fmt: skip
_CHITCHAT_ZH = {
    "thanks": ["非常感谢", "多谢", "谢谢", "感谢", "辛苦了"],
    "identity": ["你是谁", "您是谁", "你叫什么"],
    "bye": [
        "没有别的了",
        "没别的了",
        "没有其他问题了",
        "没有问题了",
        "没问题了",
        "没有了",
        "没了",
        "就这些",
        "就这样",
        "先这样",
        "不用了",
        "再见",
        "拜拜",
        "回头见",
    ],
    "greeting": ["早上好", "下午好", "晚上好", "你好吗", "您好", "你好", "哈喽", "在吗", "嗨"],
    "ack": [
        "明白了",
        "明白",
        "知道了",
        "懂了",
        "了解了",
        "了解",
        "清楚了",
        "收到",
        "没问题",
        "好的",
        "好吧",
        "好",
    ],
}
_CHITCHAT_FILLER = {
    "there", "again", "so", "much", "very", "bot", "assistant", "ok", "okay", "and", "alright", "great",
    "perfect", "cool", "got", "it", "no", "nope", "fine", "sure", "then", "for", "your", "help", "now",
}  # fmt: skip
_ZH_FILLER_CHARS = set("啊呀呢吧吗嘛哦噢哈你您的了们好嗯行那就先")
_ACK_FILLER_CHARS = set("嗯哦噢行好")
_ACK_FILLER_WORDS = frozenset({"great", "perfect", "cool", "sure", "alright"})
"""Filler that is an acknowledgement on its own ("嗯嗯", "哦哦", "行", "great", "cool"); "fine" and
"no" alone may be what is looked up."""


def chitchat_kind(text: str) -> ChitchatKind | None:
    """Return the kind of chit-chat if the whole message is greeting/thanks/small talk, else None.

    "Hi, what is the refund policy?" is not chit-chat: something beyond the phrases must remain empty.
    A closing outranks thanks ("ok thanks bye" is "bye"), so the reply closes the conversation, and
    anything else outranks an acknowledgement ("ok thanks" is "thanks").
    """
    rest = " " + words_only(text.lower()) + " "
    found: list[str] = []
    for kind, phrases in _CHITCHAT_EN.items():
        for phrase in phrases:
            if f" {phrase} " in rest:
                rest = rest.replace(f" {phrase} ", " ")
                found.append(kind)
    for kind, phrases in _CHITCHAT_ZH.items():
        for phrase in phrases:
            if phrase in rest:
                rest = rest.replace(phrase, " ")
                found.append(kind)
    leftover = [w for w in rest.split() if w not in _CHITCHAT_FILLER and set(w) - _ZH_FILLER_CHARS]
    if leftover:
        return None
    if not found and (set(rest) & _ACK_FILLER_CHARS or set(rest.split()) & _ACK_FILLER_WORDS):
        return "ack"
    for kind in ("identity", "bye", "thanks", "greeting", "ack"):
        if kind in found:
            return kind  # type: ignore[return-value]
    return None


def chitchat_reply(text: str) -> str:
    """Return a short friendly reply to chit-chat, in the user's language; it makes no factual claim."""
    return CHITCHAT_REPLIES[chitchat_kind(text) or "greeting"].for_question(text)
