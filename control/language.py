"""Language helpers of the control plane: Chinese detection, words, sentence splitting (English + Chinese).

The one home of the CJK character class and the sentence-end pattern used by routing, replies,
extractive answers, truncation and summaries.
"""

from __future__ import annotations

import re
import unicodedata

CJK_RANGES = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
"""Character-class body of the CJK ideographs we treat as Chinese (Extension A, Unified, Compatibility)."""

CJK = re.compile(f"[{CJK_RANGES}]")
"""One Chinese character."""

CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
"""A run of Chinese characters."""

SENTENCE_END = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+|\n+")
"""Where a sentence ends: after Chinese end punctuation (no space needed), after Western end
punctuation followed by whitespace, or at line breaks."""


def normalize_input(text: str) -> str:
    """Return user input in Unicode NFKC form, the form identifiers are extracted from.

    Full-width forms become ASCII (``２０２４０５１２０００１`` -> ``202405120001``, ``ＡＢＣ`` -> ``ABC``);
    digits of other scripts (Arabic-Indic ``٢``, Devanagari ``२``) stay what they are, so the
    ASCII-only id patterns (``[0-9]``) reject them instead of misreading them.
    """
    return unicodedata.normalize("NFKC", text)


def is_chinese(text: str) -> bool:
    """Whether the text contains Chinese characters (replies then use Chinese)."""
    return bool(CJK.search(text))


_LATIN_WORD = re.compile(r"[a-z]+")


def script_weights(text: str) -> tuple[float, float]:
    """Shares of Chinese and English in `text`'s words (a Chinese character counts 1/1.5 of a word).

    Latin words are counted in lowercase: pass lowercased text.
    """
    cjk = len(CJK.findall(text)) / 1.5
    latin = len(_LATIN_WORD.findall(text))
    total = max(1.0, cjk + latin)
    return cjk / total, latin / total


def words_only(text: str) -> str:
    """Return the letters and digits of `text` as space-separated words (punctuation and symbols dropped)."""
    return " ".join("".join(ch if unicodedata.category(ch)[0] in "LN" else " " for ch in text).split())


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences, keeping their end punctuation and dropping empty pieces.

    Chinese sentences end at 。！？；, English ones at . ! ? ; followed by whitespace, and every
    line break ends a sentence. Splitting is deliberately simple (no abbreviation handling): it is
    used to find safe cut points, where a cut after "e.g." is harmless.
    """
    return [piece.strip() for piece in SENTENCE_END.split(text) if piece and piece.strip()]
