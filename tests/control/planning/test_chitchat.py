"""Chit-chat recognition and replies."""

from __future__ import annotations

import pytest

from haygraph.control.planning.chitchat import chitchat_kind, chitchat_reply
from haygraph.control.planning.routing import route_question
from haygraph.control.texts import CHITCHAT_REPLIES


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


class TestClosings:
    @pytest.mark.parametrize(
        "text",
        ["thanks, that's all", "that's all, thanks", "ok thanks bye", "bye", "Thank you, that is all!",
         "no, that's it. thanks for your help", "all good, cheers",
         "就这些，谢谢", "没有了，谢谢", "再见", "好的，就这样吧", "没有别的了，谢谢您"],
    )  # fmt: skip
    def test_closings_are_bye_with_a_closing_reply(self, text: str) -> None:
        assert chitchat_kind(text) == "bye"
        assert route_question(text).route == "answer"
        assert chitchat_reply(text) == CHITCHAT_REPLIES["bye"].for_question(text)
        assert chitchat_reply(text) != CHITCHAT_REPLIES["thanks"].for_question(text)  # no "anything else?"

    @pytest.mark.parametrize("text", ["好的，谢谢", "ok thanks", "great, thank you", "好的谢谢你"])
    def test_thanks_with_an_ok_is_thanks(self, text: str) -> None:
        assert chitchat_kind(text) == "thanks"
        assert route_question(text).route == "answer"

    @pytest.mark.parametrize(
        "text",
        ["thanks, and what is the refund policy?", "好的，那报销要多久？", "ok, what is the default timeout?",
         "that's all I know about the VPN, how do I connect?", "谢谢，没有了的话怎么申请报销？",
         "is that all?", "no more than how many days?", "I see the error on login, why?", "好用吗",
         "收到货了吗", "fine", "no"],
    )  # fmt: skip
    def test_questions_after_thanks_or_ok_stay_questions(self, text: str) -> None:
        assert chitchat_kind(text) is None
        assert route_question(text).route == "retrieve"

    def test_closing_replies_in_both_languages(self) -> None:
        assert chitchat_reply("thanks, that's all") == (
            "You're welcome. Goodbye, and come back any time you have a question!"
        )
        assert chitchat_reply("就这些，谢谢") == "好的，再见！有问题随时再来问我。"


class TestAcknowledgements:
    @pytest.mark.parametrize(
        "text",
        ["ok", "OK.", "okay, great", "got it", "I see", "understood", "great", "好", "好的", "好吧",
         "好吧！！！", "嗯嗯", "嗯嗯嗯，好吧！！！", "收到", "明白了", "知道了", "懂了", "哦哦", "行",
         "没问题"],
    )  # fmt: skip
    def test_an_acknowledgement_alone_is_not_retrieved(self, text: str) -> None:
        assert chitchat_kind(text) == "ack"
        assert route_question(text).route == "answer"
        assert chitchat_reply(text) == CHITCHAT_REPLIES["ack"].for_question(text)

    def test_ack_replies_in_both_languages(self) -> None:
        assert chitchat_reply("got it") == (
            "Okay. Ask me whenever you have another question about the knowledge base."
        )
        assert chitchat_reply("好的") == "好的。还有其他问题，随时问我。"

    @pytest.mark.parametrize(
        ("text", "kind"),
        [("好的，谢谢", "thanks"), ("ok thanks", "thanks"), ("ok bye", "bye"), ("好的，就这样吧", "bye"),
         ("没问题了", "bye"), ("你好", "greeting"), ("understood, thanks", "thanks")],
    )  # fmt: skip
    def test_any_other_kind_outranks_an_acknowledgement(self, text: str, kind: str) -> None:
        assert chitchat_kind(text) == kind
