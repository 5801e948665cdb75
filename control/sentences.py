"""Sentence splitting for English and Chinese text, shared by truncation and extractive summaries."""

from __future__ import annotations

import re

# A sentence ends after Chinese end punctuation (no space needed) or after Western end
# punctuation followed by whitespace; line breaks also end a sentence.
_SENTENCE_END = re.compile(r"(?<=[。！？；])|(?<=[.!?;])\s+|\n+")


def split_sentences(text: str) -> list[str]:
    """Split `text` into sentences, keeping their end punctuation and dropping empty pieces.

    Chinese sentences end at 。！？；, English ones at . ! ? ; followed by whitespace, and every
    line break ends a sentence. Splitting is deliberately simple (no abbreviation handling): it is
    used to find safe cut points, where a cut after "e.g." is harmless.
    """
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece and piece.strip()]
