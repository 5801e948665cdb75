"""Input checks: cleaning and the refusal messages of unusable input."""

from __future__ import annotations

from haygraph.control.planning.input_check import check_question, clean_text


class TestCheckQuestion:
    def test_clean_text(self) -> None:
        assert clean_text("  what\x00 is\tthe\n\npolicy\u200b ") == "what is the policy"

    def test_full_width_letters_and_digits_become_ascii(self) -> None:
        # a Chinese input method's full-width mode: the documents write VPN and 12
        assert clean_text("ＶＰＮ怎么连？年假有１２天吗") == "VPN怎么连？年假有12天吗"
        assert clean_text("ｏｋ，谢谢") == "ok，谢谢"  # full-width punctuation stays
        assert check_question("ＯＫ", 10).text == "OK"

    def test_ok_question(self) -> None:
        check = check_question("What's the policy? 政策", 2000)
        assert (check.text, check.problem) == ("What's the policy? 政策", None)

    def test_limit_counts_cleaned_text(self) -> None:
        assert check_question("abc\x00\x00", 3).problem is None
        assert check_question("abcd", 3).problem is not None

    def test_problems_are_in_the_users_language(self) -> None:
        assert check_question("", 10).problem == "Your message is empty. Please type a question."
        assert (
            check_question("这个问题太长了啊", 3).problem
            == "您的问题太长（8 个字符，上限 3）。请缩短后再问。"
        )
        assert check_question("?!", 10).problem == (
            "Your message contains no words, only symbols or punctuation. Please ask in words."
        )
        assert check_question(42, 10).problem == "Your message is empty. Please type a question."
