"""Chit-chat recognition and replies."""

from __future__ import annotations

import pytest

from haygraph.control.planning.chitchat import chitchat_kind, chitchat_reply
from haygraph.control.planning.routing import route_question


class TestChitchat:
    def test_kinds(self) -> None:
        assert chitchat_kind("thank you!") == "thanks"
        assert chitchat_kind("hi, who are you?") == "identity"
        assert chitchat_kind("早上好") == "greeting"
        assert chitchat_kind("hi what is the policy") is None

    def test_replies_in_language(self) -> None:
        assert chitchat_reply("谢谢") == "不客气！还有什么可以帮您？"
        assert chitchat_reply("thanks") == "You're welcome! Anything else I can help with?"

    @pytest.mark.parametrize(
        "text",
        ["hi", "Hello!", "hey there", "Thanks so much!", "good morning", "How are you?", "who are you",
         "你好", "您好！", "谢谢", "早上好", "你是谁", "谢谢你啊", "bye"],
    )  # fmt: skip
    def test_chitchat_is_answered_without_retrieval(self, text: str) -> None:
        assert route_question(text).route == "answer"
