from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessageChunk, HumanMessage

from haygraph.adapters.service.streaming import AnswerTokens, answer_pieces, closing_text, partial_answer

GENERATE = {"langgraph_node": "generate"}


def tool_chunks(name: str, args: dict[str, object], size: int, msg_id: str = "run-1") -> list[AIMessageChunk]:
    text = json.dumps(args, ensure_ascii=False)
    return [
        AIMessageChunk(
            content="",
            id=msg_id,
            tool_call_chunks=[
                {
                    "name": name if i == 0 else None,
                    "args": text[i : i + size],
                    "id": "c1" if i == 0 else None,
                    "index": 0,
                }
            ],
        )
        for i in range(0, len(text), size)
    ]


class TestAnswerTokens:
    def test_tool_call_chunks_stream_the_answer_text_only(self) -> None:
        answer = 'You get "20 days" a year — 年假二十天.'
        tokens = AnswerTokens()
        deltas = [
            tokens.feed(c, GENERATE)
            for c in tool_chunks("GroundedAnswer", {"answer": answer, "evidence_ids": ["a::1"]}, 5)
        ]
        assert "".join(deltas) == answer == tokens.text
        assert sum(1 for d in deltas if d) > 5  # really incremental
        assert not any("evidence_ids" in d or "{" in d for d in deltas)

    def test_json_content_stream(self) -> None:
        text = json.dumps({"answer": "Twenty days.", "evidence_ids": ["a::1"]})
        tokens = AnswerTokens()
        out = "".join(
            tokens.feed(AIMessageChunk(content=text[i : i + 4], id="r"), GENERATE)
            for i in range(0, len(text), 4)
        )
        assert out == "Twenty days."

    def test_other_nodes_schemas_and_messages_ignored(self) -> None:
        tokens = AnswerTokens()
        for c in tool_chunks("RewrittenQueries", {"queries": ["x"]}, 4):
            assert tokens.feed(c, {"langgraph_node": "analyze"}) == ""
        for c in tool_chunks("GroundedAnswer", {"answer": "hidden"}, 4):
            assert tokens.feed(c, {"langgraph_node": "analyze"}) == ""
        assert tokens.feed(HumanMessage(content="hi"), GENERATE) == ""
        for c in tool_chunks("SummarySchema", {"summary": "s"}, 4):
            assert tokens.feed(c, GENERATE) == ""
        assert tokens.text == ""

    def test_partial_answer_of_incomplete_json(self) -> None:
        chunk = AIMessageChunk(
            content="",
            tool_call_chunks=[{"name": "GroundedAnswer", "args": '{"answer": "Twen', "id": "c", "index": 0}],
        )
        assert partial_answer(chunk) == "Twen"
        empty = AIMessageChunk(
            content="", tool_call_chunks=[{"name": "GroundedAnswer", "args": '{"evid', "id": "c", "index": 0}]
        )
        assert partial_answer(empty) is None


class TestAnswerPieces:
    def test_pieces_end_after_citations_and_sentences(self) -> None:
        text = "Up to 5 days carry over. [leave.md::ab12] 每年十五天。[zh.md::cd34]"
        pieces = answer_pieces(text)
        assert "".join(pieces) == text
        assert pieces == ["Up to 5 days carry over. ", "[leave.md::ab12] ", "每年十五天。", "[zh.md::cd34]"]

    def test_at_most_max_pieces(self) -> None:
        text = " ".join(f"S{i}." for i in range(30))
        pieces = answer_pieces(text, max_pieces=4)
        assert len(pieces) == 4 and "".join(pieces) == text

    def test_empty(self) -> None:
        assert answer_pieces("") == []


@pytest.mark.parametrize(
    ("streamed", "answer", "expected"),
    [
        ("", "All of it.", "All of it."),
        ("All of", "All of it.", " it."),
        ("All of it.", "All of it.", ""),
        ("Model text", "Extractive fallback.", "\n\nExtractive fallback."),
        ("Model text", None, ""),
    ],
)
def test_closing_text(streamed: str, answer: str | None, expected: str) -> None:
    assert closing_text(streamed, answer) == expected
