"""Shared test doubles for the control-plane graph tests: real, tiny `Retriever` implementations.

Not a test module (no `test_` prefix); imported by the graph and planning tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from haygraph.control.evidence import Evidence

_WORD = re.compile(r"[a-z0-9]+|[\u4e00-\u9fff]")
_STOP = {
    "the",
    "a",
    "an",
    "is",
    "are",
    "of",
    "do",
    "does",
    "how",
    "what",
    "many",
    "i",
    "my",
    "to",
    "in",
    "for",
    "your",
    "and",
    "all",
}
_STOP |= set("的了是吗呢有几多少天")


def tokens(text: str) -> set[str]:
    return {t for t in _WORD.findall(text.lower()) if t not in _STOP}


@dataclass
class KeywordRetriever:
    """Ranks its documents by word overlap with the query; each document has a fixed relevance.

    Like the real query pipeline it records the query-term coverage in `meta["term_coverage"]` (here
    unweighted: the share of the query's words in the document), a signal of the answerability model.
    """

    docs: list[Evidence]

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        q = tokens(query)
        scored = [(len(q & tokens(d.text)), i, d) for i, d in enumerate(self.docs)]
        hits = [(n, i, d) for n, i, d in scored if n > 0]
        hits.sort(key=lambda t: (-t[0], t[1]))
        return [
            d.model_copy(update={"score": float(n), "meta": {**d.meta, "term_coverage": n / len(q)}})
            for n, _i, d in hits[:top_k]
        ]


@dataclass
class CountingRetriever:
    """Wraps a retriever and records every call as (query, top_k, filters)."""

    inner: Any
    calls: list[tuple[str, int, dict[str, Any] | None]] = field(default_factory=list)

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        self.calls.append((query, top_k, filters))
        return self.inner.retrieve(query, top_k=top_k, filters=filters)


class FailingRetriever:
    """A retriever whose backend is down."""

    def __init__(self) -> None:
        self.calls = 0

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        self.calls += 1
        raise ConnectionError("index unavailable")


def ev(id_: str, text: str, relevance: float, source: str = "") -> Evidence:
    return Evidence(id=id_, text=text, score=0.0, relevance=relevance, source=source or id_.split("::")[0])


HANDBOOK = [
    ev(
        "hr.md::leave",
        "Full-time employees receive 20 days of annual leave per year. Unused annual leave expires on "
        "31 March of the following year. Leave requests go through the HR portal.",
        0.82,
    ),
    ev(
        "hr.md::remote",
        "Remote work requires written approval from your manager. Equipment is provided.",
        0.74,
    ),
    ev("zh.md::nianjia", "员工每年享有15天带薪年假。年假需提前两周申请！病假另行计算。", 0.79),
    ev("ops.md::parking", "Parking permits are issued by facilities. The parking garage opens at 7am.", 0.71),
]


def handbook_retriever() -> CountingRetriever:
    return CountingRetriever(KeywordRetriever(list(HANDBOOK)))


ANSWER_PART = re.compile(r"(.+?) \[([^\[\]]+)\]\s*")


def cited_sentences(answer: str) -> list[tuple[str, str]]:
    """Split an extractive answer "s1 [id1] s2 [id2]" into (sentence, id) pairs."""
    parts = [(m.group(1).strip(), m.group(2)) for m in ANSWER_PART.finditer(answer)]
    assert "".join(f"{s} [{i}] " for s, i in parts).strip() == answer.strip(), answer
    return parts
