"""jieba's Chinese word cutting and part-of-speech tags over a compact dictionary: ~16 MB, not ~118 MB.

jieba keeps its 349,045-word dictionary twice in Python objects: the prefix dict ``FREQ`` (498,113
words and word prefixes -> frequency, ~63 MB of a process) and, once `jieba.posseg` is imported, the
tag table ``word_tag_tab`` (word -> tag, ~38 MB). Every `haygraph serve` process holds both (BM25 cuts
Chinese with the first, the decision's rules tag with the second). Here the same entries live in one
`marisa_trie.Trie` (1.3 MB) with the frequencies and tags in arrays indexed by the trie's key ids, and
jieba's own classes cut and tag with it: `CompactTokenizer` is a `jieba.Tokenizer` whose word graph
(``get_DAG``) and best route (``calc``) read the trie, `CompactPOSTokenizer` a `jieba.posseg.POSTokenizer`
whose tag table is the trie's. The HMM for unknown words is jieba's, unchanged.

Both give jieba's cuts, tags and frequencies exactly: ``benchmarks/bench_chinese_words.py`` compares every
text of the shared datasets and the handbook, and ``tests/test_chinese_words.py`` a sample.

The trie and arrays are built from the installed jieba's ``dict.txt`` on first use (~2 s) and kept in
``<cache dir>/jieba/<digest of dict.txt>.words`` ($HAYGRAPH_CACHE_DIR, else ~/.cache/haygraph), written
whole or not at all; later processes read that file (3.7 MB) and build no Python object per word. Where
the cache cannot be written, the dictionary is built in memory and a warning says so.

Public functions: `cut`, `tagged`, `frequency`, `warm_up`.
"""

from __future__ import annotations

import array
import hashlib
import io
import json
import logging
import math
import os
import struct
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

MAGIC = b"HGJIEBA1"
"""First bytes of a cached dictionary file (the format's version)."""

_LOCK = threading.RLock()


@dataclass(frozen=True)
class CompactWords:
    """jieba's prefix dictionary, read-only, with its tags (module docstring).

    As a mapping it behaves as jieba's ``Tokenizer.FREQ``: a word gives its frequency, a prefix of a word
    that is not a word itself gives 0, anything else is absent.
    """

    trie: Any
    """`marisa_trie.Trie` over every word and word prefix of the dictionary."""
    freq: array.array
    """Frequency by trie key id (0: a prefix only)."""
    tags: bytes
    """Index into `tag_names` by trie key id (0: no tag, a prefix only)."""
    tag_names: tuple[str, ...]
    total: int
    """Sum of the dictionary's frequencies (jieba's ``Tokenizer.total``)."""
    longest: int
    """Length of the longest word: no word graph edge spans more characters."""

    def get(self, word: str, default: Any = None) -> Any:
        """The frequency of `word` (0 for a prefix only), or `default` where it is neither."""
        key = self.trie.get(word)
        return default if key is None else self.freq[key]

    def __getitem__(self, word: str) -> int:
        key = self.trie.get(word)
        if key is None:
            raise KeyError(word)
        return int(self.freq[key])

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and word in self.trie

    def __len__(self) -> int:
        return len(self.freq)

    def __iter__(self) -> Iterator[str]:
        return iter(self.trie.keys())

    def tag(self, word: str, default: str = "x") -> str:
        """The part-of-speech tag of `word`, or `default` where the dictionary has none."""
        key = self.trie.get(word)
        index = 0 if key is None else self.tags[key]
        return self.tag_names[index] if index else default

    def to_bytes(self) -> bytes:
        """The file form: `MAGIC`, a JSON header, the frequencies, the tags, the trie."""
        header = json.dumps(
            {"total": self.total, "longest": self.longest, "tags": list(self.tag_names), "n": len(self.freq)}
        ).encode("utf-8")
        freq = array.array("I", self.freq).tobytes()
        return b"".join((MAGIC, struct.pack("<I", len(header)), header, freq, self.tags, self.trie.tobytes()))

    @classmethod
    def from_bytes(cls, data: bytes) -> CompactWords:
        """Read `to_bytes`'s form; ValueError where the data is not one whole."""
        if data[: len(MAGIC)] != MAGIC:
            raise ValueError("not a haygraph jieba dictionary (wrong first bytes)")
        try:
            return cls._parse(data, len(MAGIC))
        except (
            struct.error,
            KeyError,
            TypeError,
            UnicodeDecodeError,
            json.JSONDecodeError,
            RuntimeError,
        ) as exc:
            raise ValueError(f"truncated or damaged: {exc}") from exc

    @classmethod
    def _parse(cls, data: bytes, offset: int) -> CompactWords:
        import marisa_trie

        (size,) = struct.unpack_from("<I", data, offset)
        offset += 4
        header = json.loads(data[offset : offset + size])
        offset += size
        n = int(header["n"])
        freq = array.array("I")
        freq.frombytes(data[offset : offset + 4 * n])
        offset += 4 * n
        tags = bytes(data[offset : offset + n])
        offset += n
        if len(freq) != n or len(tags) != n:
            raise ValueError(f"truncated: {len(freq)} frequencies, {len(tags)} tags of {n}")
        trie = marisa_trie.Trie().frombytes(bytes(data[offset:]))  # RuntimeError where it is cut short
        if len(trie) != n:
            raise ValueError(f"truncated: {len(trie)} words of {n}")
        names = tuple(header["tags"])
        if tags and max(tags) >= len(names):
            raise ValueError(f"damaged: a tag index {max(tags)} past the {len(names)} tag names")
        return cls(trie, freq, tags, names, int(header["total"]), int(header["longest"]))

    @classmethod
    def build(cls, dictionary: bytes) -> CompactWords:
        """From the text of a jieba dictionary (``word freq [tag]`` lines), exactly as jieba reads it.

        Frequencies and the total as ``jieba.Tokenizer.gen_pfdict``, tags as
        ``jieba.posseg.POSTokenizer.load_word_tag`` (a repeated word: its last line wins).
        """
        import jieba
        import marisa_trie

        freq, total = jieba.Tokenizer.gen_pfdict(io.BytesIO(dictionary))
        word_tags: dict[str, str] = {}
        for line in dictionary.decode("utf-8").splitlines():
            parts = line.strip().split(" ")
            if len(parts) == 3:
                word_tags[parts[0]] = parts[2]
        trie = marisa_trie.Trie(freq)
        names = ("", *sorted(set(word_tags.values())))
        if len(names) > 256:
            raise ValueError(f"{len(names) - 1} distinct tags; at most 255 fit")
        index = {name: i for i, name in enumerate(names)}
        freqs = array.array("I", bytes(4 * len(trie)))
        tags = bytearray(len(trie))
        for word, key in trie.iteritems():
            freqs[key] = freq[word]
            tags[key] = index[word_tags[word]] if word in word_tags else 0
        longest = max((len(w) for w, f in freq.items() if f), default=1)
        return cls(trie, freqs, bytes(tags), names, total, longest)


def _dictionary_bytes() -> bytes:
    """The installed jieba's default dictionary (``dict.txt``)."""
    import jieba

    with jieba.Tokenizer().get_dict_file() as fh:
        data: bytes = fh.read()
    return data


def cache_path(dictionary: bytes) -> Path:
    """Where the compact form of `dictionary` is cached."""
    from haygraph.cache import default_cache_dir

    digest = hashlib.sha256(dictionary).hexdigest()[:20]
    return default_cache_dir() / "jieba" / f"{digest}.words"


@lru_cache(maxsize=1)
def compact_words() -> CompactWords:
    """The default dictionary, compact: read from the cache, else built and cached (module docstring)."""
    dictionary = _dictionary_bytes()
    return load_compact_words(dictionary, cache_path(dictionary))


def load_compact_words(dictionary: bytes, path: Path) -> CompactWords:
    """`dictionary` compact, read from `path`, else built and written there (where it can be)."""
    try:
        return CompactWords.from_bytes(path.read_bytes())
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        logger.warning("rebuilding jieba's compact dictionary: %s is unreadable (%s)", path, exc)
    logger.info("building jieba's compact dictionary (once, ~2 s) into %s", path)
    words = CompactWords.build(dictionary)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".words-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(words.to_bytes())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        logger.warning(
            "jieba's compact dictionary could not be cached in %s (%s); each process builds it anew, "
            "holding more memory. Set HAYGRAPH_CACHE_DIR to a writable directory.",
            path.parent,
            exc,
        )
    return words


def _classes() -> tuple[type, type]:
    import jieba
    import jieba.posseg

    class CompactTokenizer(jieba.Tokenizer):  # type: ignore[misc]
        """A `jieba.Tokenizer` over `CompactWords` (read-only: words cannot be added)."""

        def __init__(self, words: CompactWords) -> None:
            super().__init__()
            self.FREQ = words
            self.total = words.total
            self.initialized = True
            self._words = words
            logtotal = math.log(words.total)
            # jieba's edge weight, log(freq or 1) - log(total), once per word
            self._weights = array.array("d", (math.log(f or 1) - logtotal for f in words.freq))
            self._unknown = math.log(1) - logtotal

        def initialize(self, dictionary: Any = None) -> None:
            if dictionary:
                raise NotImplementedError("the compact dictionary is jieba's default one")

        def get_DAG(self, sentence: str) -> dict[int, list[int]]:
            prefixes = self._words.trie.iter_prefixes_with_ids
            freq, span = self._words.freq, self._words.longest
            dag: dict[int, list[int]] = {}
            for k in range(len(sentence)):
                ends = [k + len(word) - 1 for word, key in prefixes(sentence[k : k + span]) if freq[key]]
                dag[k] = ends or [k]
            return dag

        def calc(self, sentence: str, DAG: dict[int, list[int]], route: dict[int, Any]) -> None:
            n = len(sentence)
            route[n] = (0, 0)
            get, weights, unknown = self._words.trie.get, self._weights, self._unknown
            for idx in range(n - 1, -1, -1):
                best: tuple[float, int] | None = None
                for x in DAG[idx]:
                    key = get(sentence[idx : x + 1])
                    candidate = ((unknown if key is None else weights[key]) + route[x + 1][0], x)
                    if best is None or candidate > best:
                        best = candidate
                route[idx] = best  # type: ignore[assignment]

        def add_word(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("the compact dictionary is read-only")

        def del_word(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("the compact dictionary is read-only")

        def load_userdict(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("the compact dictionary is read-only")

        def suggest_freq(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("the compact dictionary is read-only")

    class _Tags:
        def __init__(self, words: CompactWords) -> None:
            self.tag = words.tag

        def get(self, word: str, default: str = "x") -> str:
            return self.tag(word, default)

    class CompactPOSTokenizer(jieba.posseg.POSTokenizer):  # type: ignore[misc]
        """A `jieba.posseg.POSTokenizer` over a `CompactTokenizer` and its tags."""

        def __init__(self, tokenizer: CompactTokenizer) -> None:
            self.tokenizer = tokenizer
            self.word_tag_tab = _Tags(tokenizer.FREQ)

        def initialize(self, dictionary: Any = None) -> None:
            self.tokenizer.initialize(dictionary)

    return CompactTokenizer, CompactPOSTokenizer


def _import_posseg() -> None:
    """Import `jieba.posseg` without its module-level tagger reading the dictionary into a dict.

    Importing it builds ``jieba.posseg.dt`` over the global ``jieba.dt``, whose ``load_word_tag`` reads
    all of ``dict.txt`` into ``word_tag_tab`` (~38 MB, and freeing it after leaves the heap fragmented).
    For that one import the global tokenizer hands it an empty dictionary; nothing here uses that tagger.
    """
    import sys

    if "jieba.posseg" in sys.modules:
        return
    import jieba

    jieba.dt.get_dict_file = lambda: io.BytesIO(b"")
    try:
        import jieba.posseg
    finally:
        del jieba.dt.get_dict_file
    jieba.posseg.dt.word_tag_tab = _DeferredTags(jieba.posseg.dt)


class _DeferredTags:
    """``jieba.posseg.dt``'s tag table, read from the dictionary as jieba would on its first use.

    So code beside haygraph that calls ``jieba.posseg`` itself gets jieba's tags, at jieba's cost.
    """

    def __init__(self, tagger: Any) -> None:
        self._tagger = tagger

    def _table(self) -> dict[str, str]:
        with _LOCK:
            if self._tagger.word_tag_tab is self:
                self._tagger.load_word_tag(self._tagger.tokenizer.get_dict_file())
        table: dict[str, str] = self._tagger.word_tag_tab
        return table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table(), name)

    def __getitem__(self, word: str) -> str:
        return self._table()[word]

    def __contains__(self, word: object) -> bool:
        return word in self._table()

    def __len__(self) -> int:
        return len(self._table())


@lru_cache(maxsize=1)
def _taggers() -> tuple[Any, Any]:
    with _LOCK:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        _import_posseg()
        tokenizer_class, pos_class = _classes()
        tokenizer = tokenizer_class(compact_words())
        return tokenizer, pos_class(tokenizer)


def cut(text: str) -> list[str]:
    """``jieba.lcut(text)``: the words of `text` (HMM on for words the dictionary lacks)."""
    return list(_taggers()[0].cut(text))


def tagged(text: str) -> list[tuple[str, str]]:
    """``jieba.posseg.lcut(text)`` as (word, tag) pairs."""
    return [(p.word, p.flag) for p in _taggers()[1].cut(text)]


def frequency(word: str) -> int | None:
    """``jieba.dt.FREQ.get(word)``: a word's dictionary frequency, 0 for a word prefix only, else None."""
    found: int | None = _taggers()[0].FREQ.get(word)
    return found


def warm_up() -> None:
    """Load the dictionary and jieba's HMM tables now (each first use loads whatever is not loaded)."""
    tagged("年假有几天")
    cut("年假有几天")
