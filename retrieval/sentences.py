"""Rule-based sentence segmentation and language detection for English, Chinese and mixed text.

Haystack's own sentence splitting (`SentenceSplitter`, `DocumentSplitter(split_by="sentence")`, the
default separators of `RecursiveDocumentSplitter`) needs NLTK's punkt data, which must be downloaded
and cannot be here; these pure functions need no data files.

Rules:

- Chinese: a sentence ends after 。！？；… (and the ASCII ``! ? ;`` when written right after a Chinese
  character); closing quotes and brackets that follow (”’」』）》】") stay with the sentence.
- English: a sentence ends at ``. ! ?`` (plus closing quotes/brackets) followed by whitespace and then
  a capital letter, an opening quote or bracket, a Chinese character, or the end of the text. A period
  does not end a sentence after a common abbreviation (e.g., i.e., Mr., Dr., No., vs., etc.), after a
  single-letter initial, or after a list marker at the start of a line ("1.", "a)"). Decimals (3.5),
  URLs and e-mail addresses contain no "period + whitespace" and are therefore never split.
- Line breaks: a line break ends a sentence when the next line starts a list item or when either side
  of it is Chinese (Chinese text has no spaces, so a line break there is a boundary); a hard-wrapped
  English line continues its sentence.
"""

from __future__ import annotations

import re
from typing import Literal

__all__ = ["detect_language", "sentence_spans", "split_sentences"]

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RE = re.compile(f"[{_CJK}]")
_LATIN_RE = re.compile(r"[A-Za-z\u00c0-\u024f]")
_CLOSERS = "\"'”’」』）》】)]"
_ZH_END = "。！？；…"

# Lowercase abbreviations (without their final period) after which a period does not end a sentence.
_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "etc", "vs", "cf", "al", "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "no", "nos"}
    | {"fig", "figs", "eq", "eqs", "approx", "dept", "est", "inc", "ltd", "co", "corp", "mt", "ave", "rd"}
    | {"jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "vol", "vols"}
    | {"pp", "ed", "eds", "rev", "gen", "col", "lt", "sgt", "capt", "u.s", "u.k", "a.m", "p.m", "ph.d"}
)

# Candidate ends: Chinese terminators (any run), or ASCII . ! ? runs; closing quotes/brackets follow.
_ZH_BOUNDARY_RE = re.compile(f"[{_ZH_END}]+[{re.escape(_CLOSERS)}]*")
_EN_BOUNDARY_RE = re.compile(f"[.!?;]+[{re.escape(_CLOSERS)}]*(?=\\s|$)|[!?;]+(?=[{_CJK}])")
_NEXT_START_RE = re.compile(f"\\s+(?=[A-Z\u00c0-\u00de\"'“‘(\\[{_CJK}]|$)")
_LIST_MARKER_RE = re.compile(r"^\s*(?:[-*+•]|[0-9]{1,3}[.)]|[A-Za-z][.)])\s+")
_LINE_START_TOKEN_RE = re.compile(r"[ \t]*([0-9]{1,3}|[A-Za-z]|[ivxlcdm]{1,5})", re.IGNORECASE)


def _ends_with_abbreviation(text: str, dot: int) -> bool:
    """Whether the period at `dot` follows an abbreviation, an initial or a line-start list marker."""
    line_start = text.rfind("\n", 0, dot) + 1
    token_start = max(line_start, text.rfind(" ", 0, dot) + 1, text.rfind("\t", 0, dot) + 1)
    token = text[token_start:dot].lstrip("(\"'“‘[").lower()
    if not token:
        return False
    if token in _ABBREVIATIONS or token.rstrip(".") in _ABBREVIATIONS:
        return True
    if len(token) == 1 and token.isalpha():  # an initial such as "J. Smith"
        return True
    return bool(_LINE_START_TOKEN_RE.fullmatch(text, line_start, dot))  # "1. Item" / "a. Item"


def _boundaries(text: str) -> list[int]:
    """Return the sorted end offsets (exclusive) of every sentence but the last."""
    ends: set[int] = set()
    for match in _ZH_BOUNDARY_RE.finditer(text):
        ends.add(match.end())
    for match in _EN_BOUNDARY_RE.finditer(text):
        end, punct = match.end(), match.group()
        if end < len(text) and _CJK_RE.match(text, end):  # "中文!中文": ASCII mark written in Chinese
            if match.start() > 0 and _CJK_RE.match(text, match.start() - 1):
                ends.add(end)
            continue
        if punct[0] == ";":
            continue  # an English semicolon joins clauses of one sentence
        if not _NEXT_START_RE.match(text, end):
            continue
        if punct[0] == "." and punct.count(".") == 1 and _ends_with_abbreviation(text, match.start()):
            continue
        ends.add(end)
    for match in re.finditer(r"\n", text):
        pos = match.start()
        line = text[text.rfind("\n", 0, pos) + 1 : pos].rstrip()
        next_end = text.find("\n", pos + 1)
        next_line = text[pos + 1 : next_end if next_end >= 0 else len(text)]
        blank = not line or not next_line.strip()
        chinese = blank or bool(_CJK_RE.match(line[-1]) or _CJK_RE.match(next_line.lstrip()[:1]))
        if blank or chinese or line[-1] in _ZH_END or _LIST_MARKER_RE.match(next_line):
            ends.add(pos)
    return sorted(e for e in ends if 0 < e < len(text))


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Return ``(start, end)`` offsets of the sentences of `text`, without surrounding whitespace.

    ``[text[s:e] for s, e in sentence_spans(text)]`` equals ``split_sentences(text)``; the offsets let a
    caller keep the original whitespace between sentences.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for end in [*_boundaries(text), len(text)]:
        piece = text[start:end]
        stripped = piece.strip()
        if stripped:
            left = start + (len(piece) - len(piece.lstrip()))
            spans.append((left, left + len(stripped)))
        start = end
    return spans


def split_sentences(text: str) -> list[str]:
    """Split English, Chinese or mixed text into sentences (stripped, none empty).

    >>> split_sentences("Dr. Li earns 3.5 times more, e.g. in May. 你好。再见！")
    ['Dr. Li earns 3.5 times more, e.g. in May.', '你好。', '再见！']
    """
    return [text[s:e] for s, e in sentence_spans(text)]


def detect_language(text: str) -> Literal["zh", "en", "mixed"]:
    """Classify text by its share of CJK characters among CJK characters plus Latin letters.

    Share >= 0.6 -> ``"zh"``; share < 0.05 (including text without letters) -> ``"en"``; otherwise
    ``"mixed"``. Latin letters are counted one by one, so Chinese prose with a few English product
    names stays ``"zh"`` only when Chinese clearly dominates.
    """
    cjk = len(_CJK_RE.findall(text))
    latin = len(_LATIN_RE.findall(text))
    if cjk + latin == 0:
        return "en"
    share = cjk / (cjk + latin)
    if share >= 0.6:
        return "zh"
    if share < 0.05:
        return "en"
    return "mixed"
