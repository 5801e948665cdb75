"""Offline routing, rewriting and input checks (English and Chinese)."""

from __future__ import annotations

import pytest

from haygraph.control.rules import (
    RouteDecision,
    check_question,
    chitchat_kind,
    chitchat_reply,
    clean_text,
    extract_entities,
    rewrite_query,
    route_question,
)
from haygraph.control.tool_types import ToolCall


def order_call(order_id: str) -> ToolCall:
    return ToolCall(id="call_1", name="query_order", args={"order_id": order_id, "detail_level": "summary"})


class TestRouteQuestion:
    @pytest.mark.parametrize(
        "text",
        ["hi", "Hello!", "hey there", "Thanks so much!", "good morning", "How are you?", "who are you",
         "你好", "您好！", "谢谢", "早上好", "你是谁", "谢谢你啊", "bye"],
    )  # fmt: skip
    def test_chitchat_answers(self, text: str) -> None:
        assert route_question(text).route == "answer"

    @pytest.mark.parametrize(
        "text",
        ["Hi, what is the refund policy?", "hello how many leave days do I have", "谢谢，那退货政策呢",
         "How long does shipping take?", "快递一般几天到货", "退货政策是什么",
         "What is the order of the steps?", "thanks for the manual, where is the reset button"],
    )  # fmt: skip
    def test_knowledge_questions_retrieve(self, text: str) -> None:
        decision = route_question(text)
        assert decision.route == "retrieve"
        assert decision.tool_call is None

    @pytest.mark.parametrize(
        ("text", "order_id"),
        [
            ("Where is my order 123456789012?", "123456789012"),
            ("订单123456789012到哪了", "123456789012"),
            ("我的包裹 987654321098 还没到", "987654321098"),
            ("track package 111122223333 please", "111122223333"),
            ("123456789012", "123456789012"),
        ],
    )
    def test_order_with_number_calls_tool(self, text: str, order_id: str) -> None:
        decision = route_question(text)
        assert decision.route == "tool"
        assert decision.tool_call == order_call(order_id)

    @pytest.mark.parametrize(
        ("text", "clarification"),
        [
            ("Where is my order?", "Please give me your 12-digit order number so I can look it up."),
            (
                "my package hasn't arrived yet",
                "Please give me your 12-digit order number so I can look it up.",
            ),
            ("我的快递怎么还没到", "请提供您的 12 位订单号，我来帮您查询。"),
            ("物流状态查一下", "请提供您的 12 位订单号，我来帮您查询。"),
            (
                "my order 12345 is late",
                "'12345' is not a valid order number. "
                "Please give me your 12-digit order number so I can look it up.",
            ),
            (
                "订单1234567890123没到",
                "“1234567890123”不是有效的订单号。请提供您的 12 位订单号，我来帮您查询。",
            ),
        ],
    )
    def test_order_without_number_clarifies(self, text: str, clarification: str) -> None:
        decision = route_question(text)
        assert decision.route == "clarify"
        assert decision.clarification == clarification
        assert decision.tool_call is None

    def test_remembered_order_number_is_used(self) -> None:
        decision = route_question("where is my package?", {"order_ids": ["111111111111", "222222222222"]})
        assert decision.tool_call == order_call("222222222222")

    def test_thirteen_digits_is_not_an_order_id(self) -> None:
        assert extract_entities("1234567890123") == {}
        assert extract_entities("orders 123456789012 and 210987654321") == {
            "order_ids": ["123456789012", "210987654321"]
        }

    def test_tool_call_only_for_tool_route(self) -> None:
        assert RouteDecision(route="retrieve", tool_name="query_order").tool_call is None


class TestRewriteQuery:
    @pytest.mark.parametrize(
        ("text", "queries"),
        [
            ("帮我看看退货政策是什么呢", ["退货政策是什么"]),
            ("请问年假有几天啊？", ["年假有几天"]),
            ("麻烦能不能告诉我订单123456789012的状态吧", ["订单123456789012的状态"]),
            ("我想知道2024年5月的X-200价格", ["2024年5月的X-200价格"]),
            (
                "Could you please tell me the refund policy for product X-200?",
                ["the refund policy for product X-200"],
            ),
            ("I would like to know the vacation days in 2024, please", ["the vacation days in 2024"]),
            ("Can you tell me what is order 123456789012?", ["what is order 123456789012"]),
            ("annual leave", ["annual leave"]),
        ],
    )
    def test_strips_filler_keeps_entities(self, text: str, queries: list[str]) -> None:
        assert rewrite_query(text) == queries

    def test_several_questions_give_several_queries(self) -> None:
        assert rewrite_query("What is the refund policy? And how long does shipping take?") == [
            "What is the refund policy? And how long does shipping take",
            "What is the refund policy",
            "how long does shipping take",
        ]

    def test_at_most_three_queries(self) -> None:
        assert len(rewrite_query("a one? b two? c three? d four?")) == 3

    @pytest.mark.parametrize("text", ["请问", "please", "一下吗", "  please?  "])
    def test_never_empty(self, text: str) -> None:
        queries = rewrite_query(text)
        assert queries == [clean_text(text)]
        assert queries[0]


class TestCheckQuestion:
    def test_clean_text(self) -> None:
        assert clean_text("  what\x00 is\tthe\n\npolicy\u200b ") == "what is the policy"

    def test_ok_question(self) -> None:
        check = check_question("What's the policy? 政策", 2000)
        assert (check.text, check.problem) == ("What's the policy? 政策", None)

    def test_limit_counts_cleaned_text(self) -> None:
        assert check_question("abc\x00\x00", 3).problem is None
        assert check_question("abcd", 3).problem is not None


class TestChitchat:
    def test_kinds(self) -> None:
        assert chitchat_kind("thank you!") == "thanks"
        assert chitchat_kind("hi, who are you?") == "identity"
        assert chitchat_kind("早上好") == "greeting"
        assert chitchat_kind("hi what is the policy") is None

    def test_replies_in_language(self) -> None:
        assert chitchat_reply("谢谢") == "不客气！还有什么可以帮您？"
        assert chitchat_reply("thanks") == "You're welcome! Anything else I can help with?"
