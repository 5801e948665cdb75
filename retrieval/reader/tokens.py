"""The reader's input: question + passage windows in the bundled e5's own tokens, with character offsets.

The reader (`haygraph.retrieval.reader`) is the bundled multilingual-e5-small fine-tuned for extractive
question answering, so it reads text exactly as e5 does: each character mapped through the packed
model file's normalisation table, then the unigram pieces of that file (`e5_packed.build_tokenizer`).
This module keeps, for every passage token, the characters of the ORIGINAL passage it covers, so a
predicted span is a slice of the caller's text (what the evidence highlight needs).

One input row (a window), in the XLM-R pair layout e5 was distilled from::

    <s> query: QUESTION </s> </s> passage: PASSAGE-TOKENS[a:b] </s>

A question is cut to `MAX_QUESTION_TOKENS`; a passage longer than one window is read in windows of at
most `max_length` tokens that overlap by `stride` passage tokens (Haystack's `ExtractiveReader` and
the SQuAD 2.0 recipe do the same), so an answer near a window's edge is whole in the next one.
Training (`benchmarks/train_reader.py`) and the runtime share this code, so both see the same rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

MAX_QUESTION_TOKENS = 64
"""Question tokens kept (with the ``query: `` prefix); longer questions lose their tail."""

QUESTION_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "


@dataclass(frozen=True)
class Window:
    """One input row: token ids, where the passage tokens start, and their character offsets.

    `offsets[k]` is the (start, end) character range in the original passage of token
    ``ids[context_start + k]``; a span of tokens i..j (row positions) is the passage slice
    ``offsets[i - context_start][0] : offsets[j - context_start][1]``.
    """

    ids: tuple[int, ...]
    context_start: int
    offsets: tuple[tuple[int, int], ...]
    passage: int = 0
    """Index of the passage this window reads (callers reading several passages at once)."""

    @property
    def context_end(self) -> int:
        """Row position just after the last passage token."""
        return self.context_start + len(self.offsets)


def normalised(text: str, table: dict[int, str]) -> tuple[str, list[int]]:
    """`text` mapped per character through `table` (the packed file's normalisation), and its origins.

    Returns the mapped string and, for each of its characters, the index of the character of `text` it
    came from (a character may map to none or to several). NUL and lone surrogates become a space and
    U+FFFD first, as `e5_encoder.clean_text` does for the engine.
    """
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        code = ord(ch)
        if code == 0:
            mapped = " "
        elif 0xD800 <= code <= 0xDFFF:
            mapped = "\ufffd"
        else:
            mapped = table.get(code, ch)
        out.append(mapped)
        origin.extend([i] * len(mapped))
    return "".join(out), origin


Encode = Callable[[str], tuple[list[int], list[tuple[int, int]]]]
"""A function from a string to its token ids and each token's (start, end) offsets in that string."""


@dataclass
class ReaderTokens:
    """Turns (question, passages) into `Window`s with a unigram `encode` function and the special ids."""

    encode: Encode
    table: dict[int, str]
    bos: int
    eos: int

    def question_ids(self, question: str) -> list[int]:
        """The ``query: ``-prefixed question's ids, at most `MAX_QUESTION_TOKENS`."""
        text, _origin = normalised(QUESTION_PREFIX + question, self.table)
        return self.encode(text)[0][:MAX_QUESTION_TOKENS]

    def passage_tokens(self, passage: str) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        """The ``passage: `` prefix ids, then the passage's ids and their offsets in `passage`.

        A token that covers only whitespace or the prefix keeps an empty range at its position.
        """
        text, origin = normalised(PASSAGE_PREFIX + passage, self.table)
        ids, offsets = self.encode(text)
        shift = len(PASSAGE_PREFIX)
        prefix: list[int] = []
        body: list[int] = []
        spans: list[tuple[int, int]] = []
        for tid, (a, b) in zip(ids, offsets, strict=True):
            start = origin[a] if a < len(origin) else len(PASSAGE_PREFIX) + len(passage)
            end = origin[b - 1] + 1 if b > a else start
            if end <= shift and not body:
                prefix.append(tid)
                continue
            start, end = max(start - shift, 0), max(end - shift, 0)
            # the metaspace piece carries the space before a word: the word starts after it
            while start < end and passage[start].isspace():
                start += 1
            body.append(tid)
            spans.append((start, max(start, end)))
        return prefix, body, spans

    def windows(
        self,
        question: str,
        passages: Sequence[str],
        *,
        max_length: int,
        stride: int,
    ) -> list[Window]:
        """Every window of every passage for `question` (passage order, then position order)."""
        q = self.question_ids(question)
        out: list[Window] = []
        for index, passage in enumerate(passages):
            prefix, body, spans = self.passage_tokens(passage)
            head = [self.bos, *q, self.eos, self.eos, *prefix]
            room = max_length - len(head) - 1
            if room < 8:
                raise ValueError(f"max_length {max_length} leaves no room for the passage after the question")
            step = max(room - stride, 1)
            start = 0
            while True:
                part = body[start : start + room]
                out.append(
                    Window(
                        ids=(*head, *part, self.eos),
                        context_start=len(head),
                        offsets=tuple(spans[start : start + room]),
                        passage=index,
                    )
                )
                if start + room >= len(body):
                    break
                start += step
        return out
