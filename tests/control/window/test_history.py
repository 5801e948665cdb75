import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.graph.message import add_messages

from haygraph.control.errors import HistoryError
from haygraph.control.window.entities import EntityConfig
from haygraph.control.window.history import (
    HistoryConfig,
    compress_history,
    messages_to_pairs,
    split_turns,
)
from haygraph.control.window.tokens import TokenCounter

# order numbers as the example query_order tool declares them (no domain ids are built in)
ORDERS = EntityConfig(patterns=(("order_ids", r"(?<!\d)\d{12}(?!\d)"),))


class WordCounter(TokenCounter):
    """Deterministic test counter: one token per word, one per character of non-ASCII words."""

    name = "words"

    def count(self, text: str) -> int:
        return sum(len(word) if not word.isascii() else 1 for word in text.split())


def turn_messages(i: int, chinese: bool) -> list:
    if i == 2:
        if chinese:
            return [
                HumanMessage("我的订单987654321098在2024年5月12日下单，什么时候到？"),
                AIMessage("订单987654321098预计5月20日送达。"),
            ]
        return [
            HumanMessage("Where is order 123456789012? I placed it on 2024-05-12."),
            AIMessage("Order 123456789012 is in transit. It should arrive on May 20, 2024."),
        ]
    if chinese:
        return [
            HumanMessage(f"第{i}个问题：年假怎么申请？请详细说明。"),
            AIMessage(f"第{i}个回答：在系统中提交申请。需要经理审批。"),
        ]
    return [
        HumanMessage(f"Question {i}: how do I request annual leave? Please explain in detail."),
        AIMessage(f"Answer {i}: submit a request in the HR portal. Your manager approves it."),
    ]


def run_conversation(turns: int, chinese: bool, config: HistoryConfig):
    counter = WordCounter()
    messages: list = []
    summary, entities = "", {}
    for i in range(1, turns + 1):
        messages = add_messages(messages, turn_messages(i, chinese))
        update = compress_history(
            messages, counter=counter, summary=summary, entities=entities, config=config
        )
        messages = add_messages(messages, update.remove)
        summary, entities = update.summary, update.entities
        assert len(split_turns(messages)) <= config.keep_turns
        assert counter.count(summary) <= config.summary_max_tokens
    return messages, summary, entities


class TestSplitTurns:
    def test_turn_starts_at_human_message(self):
        msgs = [
            AIMessage("hello"),
            HumanMessage("q1"),
            AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
            ToolMessage("r", tool_call_id="c1"),
            AIMessage("a1"),
            HumanMessage("q2"),
        ]
        assert [len(turn) for turn in split_turns(msgs)] == [1, 4, 1]


class TestCompressHistory:
    def test_keeps_last_three_turns_and_removes_the_rest(self):
        msgs = add_messages([], [m for i in range(1, 6) for m in turn_messages(i, chinese=False)])
        update = compress_history(msgs, counter=WordCounter(), config=HistoryConfig(entity_config=ORDERS))
        assert [m.content for m in update.kept] == [m.content for m in msgs[4:]]
        assert [r.id for r in update.remove] == [m.id for m in msgs[:4]]
        assert all(isinstance(r, RemoveMessage) for r in update.remove)
        assert "Order 123456789012 is in transit." in update.summary
        assert update.entities["order_ids"] == ["123456789012"]

    def test_nothing_folded_with_few_turns(self):
        msgs = add_messages([], turn_messages(1, chinese=False))
        update = compress_history(msgs, counter=WordCounter(), summary="old")
        assert update.remove == [] and update.summary == "old"

    def test_message_without_id_is_a_typed_error(self):
        msgs = [m for i in range(1, 5) for m in turn_messages(i, chinese=False)]  # no ids
        with pytest.raises(HistoryError, match="no id"):
            compress_history(msgs, counter=WordCounter())

    def test_model_summarizer_hook_is_used_and_bounded(self):
        msgs = add_messages([], [m for i in range(1, 6) for m in turn_messages(i, chinese=False)])
        seen = {}

        def summarize(previous, folded):
            seen["folded"] = len(folded)
            return "model summary " + "word " * 500

        update = compress_history(
            msgs, counter=WordCounter(), config=HistoryConfig(summary_max_tokens=20), summarize=summarize
        )
        assert seen["folded"] == 4
        assert update.summary.startswith("model summary")
        assert WordCounter().count(update.summary) <= 20

    def test_failing_summarizer_falls_back_to_extractive(self):
        msgs = add_messages([], [m for i in range(1, 6) for m in turn_messages(i, chinese=False)])

        def summarize(previous, folded):
            raise RuntimeError("rate limited")

        update = compress_history(msgs, counter=WordCounter(), summarize=summarize)
        assert update.summary.startswith("User: Question 1:")

    @pytest.mark.parametrize("chinese", [False, True])
    def test_sixty_turns_stay_bounded_and_keep_turn_two_entities(self, chinese):
        config = HistoryConfig(summary_max_tokens=60, entity_config=ORDERS)
        messages, summary, entities = run_conversation(60, chinese, config)
        assert len(messages) == 6  # 3 turns of question + answer
        if chinese:
            assert entities["order_ids"] == ["987654321098"]
            assert "2024-05-12" in entities["dates"] and "05-20" in entities["dates"]
        else:
            assert entities["order_ids"] == ["123456789012"]
            assert entities["dates"] == ["2024-05-12", "2024-05-20"]
        # The summary is bounded and has moved on: turn 2 itself was dropped from it long ago.
        assert WordCounter().count(summary) <= 60
        assert "987654321098" not in summary and "123456789012" not in summary

    def test_state_after_200_turns_no_larger_than_after_20(self):
        config = HistoryConfig(summary_max_tokens=60)
        sizes = []
        for turns in (20, 200):
            messages, summary, entities = run_conversation(turns, False, config)
            state = {"messages": [m.content for m in messages], "summary": summary, "entities": entities}
            sizes.append(len(json.dumps(state)))
        # Turn numbers grow by one digit in the kept text; allow for that and nothing more.
        assert sizes[1] <= sizes[0] + 20


class TestMessagesToPairs:
    def test_only_text_turns_and_optional_trailing_question(self):
        msgs = [
            HumanMessage("q1"),
            AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": "c1"}]),
            ToolMessage("r", tool_call_id="c1"),
            AIMessage("a1"),
            HumanMessage("q2"),
        ]
        assert messages_to_pairs(msgs) == [("human", "q1"), ("ai", "a1"), ("human", "q2")]
        assert messages_to_pairs(msgs, drop_trailing_human=True) == [("human", "q1"), ("ai", "a1")]
