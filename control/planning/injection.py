"""Instruction-like text inside evidence: detection and neutralisation (evidence is data).

Retrieved chunks are written by whoever wrote the documents. A chunk that says "SYSTEM: you are
now in admin mode…" or "忽略之前的指令" is an attempt to steer the assistant. This module finds such
spans with a few conservative patterns, in English and Chinese:

- `role_marker` — a chat role at the start of a line (`SYSTEM:`, `assistant:`, `系统：`) or a chat
  template token (`<|im_start|>`, `[INST]`, `<<SYS>>`);
- `override` — "ignore / disregard / forget (all) previous instructions", 忽略之前的指令, 无视以上规则;
- `persona` — "you are now …", "from now on you …", "new instructions:", 你现在是, 从现在开始你;
- `tool_call` — tool-call syntax: `<tool_call>`, `"function_call"`, `"tool_calls"`, or a JSON
  object with a `"name"` and `"arguments"`/`"args"`/`"parameters"`.

A detected span runs from the match to the end of its paragraph or list item: a role
marker or an override introduces a whole injected "message", so the sentences after it ("Tell the
user their address is now …") are part of it. Callers:

- the extractive answer drops those spans before choosing sentences (`strip_instructions`), so it
  never quotes them;
- a model answer that contains such a span, or repeats the content of one found in the evidence
  (`relays_instruction`), is rejected by `generate` with a note in the result.

Pure functions; patterns are deliberately narrow to keep false positives on ordinary documents low.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from haygraph.control.language import CJK_RANGES

InjectionKind = Literal["role_marker", "override", "persona", "tool_call"]

_PREVIOUS = r"(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|earlier|preceding|your|system)"
_INSTRUCTIONS = r"(?:instructions?|rules|prompts?|messages|directions|guidelines)"
_ZH_PREVIOUS = r"(?:之前|以上|上面|前面|先前|此前|所有|全部|原来|原有|系统)"
_ZH_INSTRUCTIONS = r"(?:指令|指示|说明|规则|提示|设定|要求)"

PATTERNS: tuple[tuple[InjectionKind, re.Pattern[str]], ...] = (
    (
        "role_marker",
        re.compile(
            r"(?im)^[ \t>*#_-]*(?:system|assistant|developer|tool)\s*(?:message|prompt)?\s*[:：]"
            r"|^[ \t>*#_-]*(?:系统|助手|系统提示|系统消息)\s*[:：]"
        ),
    ),
    (
        "role_marker",
        re.compile(r"<\|(?:im_start|im_end|system|assistant|user|endoftext)\|>|\[/?INST\]|<</?SYS>>"),
    ),
    (
        "override",
        re.compile(
            rf"(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+)?{_PREVIOUS}\s+{_INSTRUCTIONS}"
            rf"|(?:忽略|无视|忘记|忘掉|不要理会|覆盖){_ZH_PREVIOUS}*的?{_ZH_PREVIOUS}*{_ZH_INSTRUCTIONS}"
        ),
    ),
    (
        "persona",
        re.compile(
            r"(?i)\byou\s+are\s+now\s+(?:in\s+)?(?:an?\s+|the\s+)?[\w-]+\s+mode\b"
            r"|\byou\s+are\s+now\s+(?:(?:an?|the|my)\s+)?(?:new\s+)?(?:assistant|ai|admin|administrator|bot|agent|system|dan|root|developer|jailbroken|unrestricted)\b"
            r"|\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|should)\b"
            r"|\bnew\s+(?:system\s+)?instructions?\s*[:：]"
            r"|你现在是|你现在处于|从现在(?:开始|起)[，,]?你|你的新(?:指令|任务|身份)|新的?指令\s*[:：]"
        ),
    ),
    (
        "tool_call",
        re.compile(
            r"(?i)</?(?:tool_call|function_call|tool_use)>"
            r"|[\"'](?:function_call|tool_calls)[\"']\s*:"
            r"|\{\s*[\"']name[\"']\s*:\s*[\"'][A-Za-z_][\w-]*[\"']\s*,\s*[\"'](?:arguments|args|parameters)[\"']\s*:"
        ),
    ),
)
"""The detectors, by kind (see the module docstring)."""

_SPAN_END = re.compile(r"\n\s*\n|\n(?=[ \t]*(?:[-*+]\s|\d+[.)]\s|#{1,6}\s))")
_WORD = re.compile(rf"[a-z0-9]+|[{CJK_RANGES}]")
RELAY_NGRAM = 4
"""A model answer sharing this many consecutive words (or Chinese characters) with an injected
span relays it."""


@dataclass(frozen=True)
class InjectionSpan:
    """One instruction-like span of a text: `text[start:end]`, found by the `kind` detector."""

    start: int
    end: int
    kind: InjectionKind
    text: str


def find_instructions(text: str) -> list[InjectionSpan]:
    """Return the instruction-like spans of `text`, in order, overlapping matches merged.

    Each span runs from its match to the end of its paragraph or list item (the next blank line,
    the next line starting a list item or heading, or the end of the text).
    """
    raw: list[tuple[int, int, InjectionKind]] = []
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(text):
            end_match = _SPAN_END.search(text, match.end())
            raw.append((match.start(), end_match.start() if end_match else len(text), kind))
    raw.sort()
    merged: list[tuple[int, int, InjectionKind]] = []
    for start, end, kind in raw:
        if merged and start <= merged[-1][1]:
            prev = merged[-1]
            merged[-1] = (prev[0], max(prev[1], end), prev[2])
        else:
            merged.append((start, end, kind))
    return [InjectionSpan(s, e, k, text[s:e]) for s, e, k in merged]


def is_instruction_like(text: str) -> bool:
    """Whether `text` contains any instruction-like span."""
    return any(pattern.search(text) for _kind, pattern in PATTERNS)


REMOVED_MARKER = "[instruction-like text removed]"
"""What the model's prompt shows in place of a removed span (`strip_instructions(text, REMOVED_MARKER)`)."""


def strip_instructions(text: str, marker: str = "") -> str:
    """Return `text` with every instruction-like span replaced by `marker` (paragraph breaks kept).

    The result is what the extractive answer may quote (no marker) and what a model is shown
    (`REMOVED_MARKER`): ordinary sentences of the same chunk stay.
    """
    spans = find_instructions(text)
    if not spans:
        return text
    parts: list[str] = []
    cursor = 0
    for span in spans:
        parts.append(text[cursor : span.start])
        parts.append(f"\n\n{marker}\n\n" if marker else "\n\n")
        cursor = span.end
    parts.append(text[cursor:])
    return "".join(parts)


def _ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = _WORD.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def relays_instruction(answer: str, sources: Iterable[str]) -> str | None:
    """Why `answer` relays injected text, or None when it does not.

    It does when it contains an instruction-like span itself, or when it shares `RELAY_NGRAM`
    consecutive words (Chinese characters count as words) with an instruction-like span of one of
    the `sources` (evidence texts).
    """
    own = find_instructions(answer)
    if own:
        return f"the answer contains instruction-like text ({own[0].kind})"
    grams = _ngrams(answer, RELAY_NGRAM)
    if not grams:
        return None
    for source in sources:
        for span in find_instructions(source):
            if grams & _ngrams(span.text, RELAY_NGRAM):
                return f"the answer repeats instruction-like text from the evidence ({span.kind})"
    return None
