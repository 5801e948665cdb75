"""Offline query rewriting (English and Chinese)."""

from __future__ import annotations

import pytest

from haygraph.control.planning.input_check import clean_text
from haygraph.control.planning.rewrite import rewrite_query


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
