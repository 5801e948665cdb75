import pytest

from haygraph.retrieval.tokenize import BM25Tokenizer


class TestBM25Tokenizer:
    def test_english_stemming_and_stop_words(self):
        assert BM25Tokenizer()("The employees are running quickly to the offices") == [
            "employe",
            "run",
            "quick",
            "offic",
        ]

    def test_english_without_stemming_or_stop_words(self):
        assert BM25Tokenizer(stemming=False, stopwords=False)("The employees are running") == [
            "the",
            "employees",
            "are",
            "running",
        ]

    def test_chinese_jieba_segmentation(self):
        # jieba words, not characters; the function word 的 is dropped
        assert BM25Tokenizer()("请假流程需要提前申请的") == ["请假", "流程", "需要", "提前", "申请"]

    def test_chinese_stop_words_kept_when_disabled(self):
        assert "的" in BM25Tokenizer(stopwords=False)("我的申请")

    def test_mixed_text(self):
        assert BM25Tokenizer()("VPN账号申请 password reset 密码重置") == [
            "vpn",
            "账号",
            "申请",
            "password",
            "reset",
            "密码",
            "重置",
        ]

    def test_english_only_mode_splits_cjk_into_characters(self):
        assert BM25Tokenizer("en")("VPN账号 running") == ["vpn", "账", "号", "run"]

    def test_symbols_and_single_letters_give_no_terms(self):
        assert BM25Tokenizer()("!!! ??? ... a I x") == []

    def test_many(self):
        assert BM25Tokenizer().many(["running", "婚假"]) == [["run"], ["婚假"]]

    def test_bad_language(self):
        with pytest.raises(ValueError, match="auto, en, zh"):
            BM25Tokenizer("fr")  # type: ignore[arg-type]

    def test_to_dict(self):
        assert BM25Tokenizer("zh", False, True).to_dict() == {
            "language": "zh",
            "stemming": False,
            "stopwords": True,
        }
