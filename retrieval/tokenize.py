"""Language-aware tokenization for BM25: English stemming + stop words, jieba for Chinese.

Mixed text is split into CJK runs (segmented with jieba over its compact dictionary, `chinese_words`)
and other runs (lowercased, the bm25s default token pattern of two or more word characters, English
stop words removed, Snowball stemmed). This matches the bm25s defaults that reproduce Anserini's BM25
on SciFact (nDCG@10 0.679).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Literal

from haygraph import chinese_words

logger = logging.getLogger(__name__)

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"([{_CJK}]+)|((?:[^\W{_CJK}]){{2,}})")

# Function words that carry no topical signal in Chinese queries and documents.
CHINESE_STOPWORDS = frozenset(
    (  # noqa: SIM905 (a word list is easier to read and edit as text)
        "的 了 是 在 和 与 及 或 吗 呢 吧 啊 呀 哦 嘛 我 你 您 他 她 它 我们 你们 他们 这 那 这个 那个 "
        "有 就 也 都 要 会 能 可以 一个 什么 怎么 怎样 如何 请问 请 一下 么 着 过 把 被 给 对 从 到 为 "
        "以 之 其 而 但 并 如果 因为 所以 还 又 再 很 更 最"
    ).split()
)


@lru_cache(maxsize=1)
def _english_stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


class BM25Tokenizer:
    """Turns text into BM25 terms for one language setting.

    `language`: "en" (no jieba), "zh" (jieba for every CJK run) or "auto" (the same as "zh" for
    CJK runs and English processing for the rest; the default, since most knowledge bases mix both).
    """

    def __init__(
        self, language: Literal["auto", "en", "zh"] = "auto", stemming: bool = True, stopwords: bool = True
    ) -> None:
        if language not in ("auto", "en", "zh"):
            raise ValueError(f"language must be one of auto, en, zh, but got {language!r}")
        self.language = language
        self.stemming = stemming
        self.stopwords = stopwords

    def __call__(self, text: str) -> list[str]:
        """Tokenize one text."""
        lowered = text.lower()
        tokens: list[str] = []
        latin: list[str] = []
        for match in _TOKEN_RE.finditer(lowered):
            cjk, word = match.group(1), match.group(2)
            if word is not None:
                latin.append(word)
                continue
            self._flush(latin, tokens)
            latin = []
            tokens.extend(self._cjk_tokens(cjk))
        self._flush(latin, tokens)
        return tokens

    def many(self, texts: Iterable[str]) -> list[list[str]]:
        """Tokenize many texts; equal tokens share one string object.

        The stemmer returns a new string for every occurrence; sharing one per distinct token keeps a
        100k-chunk corpus's token lists at ~50 MB of references instead of ~300 MB of duplicate strings
        while the BM25 index is built.
        """
        shared: dict[str, str] = {}
        return [[shared.setdefault(token, token) for token in self(text)] for text in texts]

    def _flush(self, words: list[str], out: list[str]) -> None:
        if not words:
            return
        if self.stopwords:
            stop = _english_stopwords()
            words = [w for w in words if w not in stop]
        if self.stemming and words:
            words = _stemmer().stemWords(words)
        out.extend(words)

    def _cjk_tokens(self, run: str) -> list[str]:
        if self.language == "en":
            return list(run)
        pieces = [p for p in chinese_words.cut(run) if p.strip()]
        if self.stopwords:
            pieces = [p for p in pieces if p not in CHINESE_STOPWORDS]
        return pieces

    def to_dict(self) -> dict[str, Any]:
        """Serialize the settings."""
        return {"language": self.language, "stemming": self.stemming, "stopwords": self.stopwords}
