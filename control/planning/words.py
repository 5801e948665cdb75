"""The words of a question and a text that the offline answer and the decision match on.

`terms` weighs a text's English content words and Chinese characters and bigrams; `question_text`
drops a Chinese question's interrogative and politeness phrases first. The sentence picker
(`haygraph.control.planning.extractive`), the meaning signals (`haygraph.control.planning.meaning`) and
the decision (`haygraph.control.planning.decision`) share them from here, so neither of the first
two imports the other for them.
"""

from __future__ import annotations

import functools
import re

from haygraph.control.language import CJK_RUN

_EN_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")
_STOP_WORDS = (
    "a an and are as at be been but by can could do does for from has have how i if in into is it its "
    "me my of on or our please should so than that the their them then there these they this to was "
    "we what when where which who why will with would you your about tell know "
    "many much get got per i'm i've i'd it's what's am any some need want just also did were had "
    "there's don't let us"
)
_EN_STOP = frozenset(_STOP_WORDS.split(" "))
_ZH_STOP = frozenset("的了是吗呢吧啊呀么什怎我你您他她它们在有和与及或请问一下个这那哪")
_ZH_QUESTION_PHRASES = re.compile(
    "请问|请教|麻烦|能不能|能否|可不可以|可以吗|是不是|是否|有没有|会不会|要不要|告诉我|帮我看看|帮我查|帮我|"
    "我想知道|想知道|想问|一下|什么样|什么|怎么样|怎么|怎样|如何|为什么|为何|多少|哪些|哪个|哪里|哪儿|的话"
)
"""Chinese interrogative and politeness phrases: they say how a question is asked, not what about."""


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


_DIMENSIONS = {"length": "long"}
"""English nouns of dimension and the adjective a question asks with ("how long" … "length"). Only
length: "size" for "how big" made a unit on bundle sizes share the question's "big", and the answer
to "how big is vue.global.prod.js" quoted another build's 14 kB (235-page Vue set)."""


@functools.lru_cache(maxsize=4096)
def terms(text: str) -> dict[str, float]:
    """Return the weighted matching terms of a text (memoized: callers must not mutate the result).

    English content words (lowercase, plural-stripped, stop words removed; a hyphenated word also
    without its hyphens and as its parts; "length" also as "long", `_DIMENSIONS`)
    weigh 2; Chinese
    characters (minus function characters) weigh 1 and Chinese character bigrams 2.
    """
    low = text.lower()
    out: dict[str, float] = {}
    for word in _EN_WORD.findall(low):
        if word not in _EN_STOP:
            out[_stem(word)] = 2.0
            if "-" in word:  # "wi-fi" also matches "wifi"; "nwh-guest" also "guest"
                out[_stem(word.replace("-", ""))] = 2.0
                for part in word.split("-"):
                    if len(part) > 1 and part not in _EN_STOP:
                        out.setdefault(_stem(part), 2.0)
    for noun, adjective in _DIMENSIONS.items():
        if noun in out:  # "Minimum length: 14 characters" answers "how long must a password be"
            out.setdefault(adjective, 2.0)
    for run in CJK_RUN.findall(low):
        for ch in run:
            if ch not in _ZH_STOP:
                out[ch] = 1.0
        for i in range(len(run) - 1):
            if run[i] not in _ZH_STOP and run[i + 1] not in _ZH_STOP:
                out[run[i : i + 2]] = 2.0
    return out


def question_text(question: str) -> str:
    """The question without its Chinese interrogative and politeness phrases (请问, 能不能, 多少, ...).

    Those phrases carry no topic, so they are not terms to look for in the evidence; each is replaced
    by a space so no bigram spans the gap. English function words are stop words of `terms` already.
    """
    return _ZH_QUESTION_PHRASES.sub(" ", question)


def question_terms(question: str) -> dict[str, float]:
    """`terms` of `question_text`: the weighted terms a question asks about."""
    return terms(question_text(question))
