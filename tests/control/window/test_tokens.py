from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

from haygraph.control.errors import TokenizerUnavailableError
from haygraph.control.language import split_sentences
from haygraph.control.window import tokens
from haygraph.control.window.tokens import (
    ChatModelCounter,
    MiniLMCounter,
    TiktokenCounter,
    TokenCounter,
    get_token_counter,
    truncate_to_tokens,
)


class WordCounter(TokenCounter):
    """Deterministic test counter: one token per whitespace-separated word (CJK: per character)."""

    name = "words"

    def count(self, text: str) -> int:
        return sum(len(word) if not word.isascii() else 1 for word in text.split())


class CountingModel(FakeListChatModel):
    """Fake chat model with its own tokenizer: every message counts 100 + words."""

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return sum(100 + len(str(m.content).split()) for m in messages)


class TestSplitSentences:
    def test_english_and_chinese(self):
        assert split_sentences("One. Two! Three?") == ["One.", "Two!", "Three?"]
        assert split_sentences("第一句。第二句！第三句") == ["第一句。", "第二句！", "第三句"]
        assert split_sentences("a\n\nb") == ["a", "b"]
        assert split_sentences("3.14 is pi") == ["3.14 is pi"]


class TestTruncateToTokens:
    def test_cuts_at_sentence_boundary(self):
        text = "One two three. Four five six. Seven eight."
        assert truncate_to_tokens(text, WordCounter(), 7) == "One two three. Four five six."
        assert truncate_to_tokens(text, WordCounter(), 100) == text

    def test_cuts_inside_sentence_only_when_no_sentence_fits(self):
        assert truncate_to_tokens("a b c d e f. g.", WordCounter(), 4) == "a b c d"
        # No spaces (Chinese): cut by characters.
        assert truncate_to_tokens("这是一个很长的句子。", WordCounter(), 3) == "这是一"
        assert truncate_to_tokens("anything", WordCounter(), 0) == ""


class TestChatModelCounter:
    def test_uses_model_tokenizer_when_it_has_one(self):
        model = FakeListChatModel(responses=["x"], custom_get_token_ids=lambda text: [0] * len(text))
        counter = ChatModelCounter(model, fallback=WordCounter())
        assert counter.count("hello world") == 11  # the model's counter: one id per character
        assert counter.name == "model:FakeListChatModel"

    def test_uses_model_message_counter(self):
        counter = ChatModelCounter(CountingModel(responses=["x"]), fallback=WordCounter())
        assert counter.count_messages([("system", "a b"), ("human", "c")]) == 203

    def test_falls_back_when_model_has_no_tokenizer(self):
        # LangChain's base implementation would download GPT-2; we must not call it.
        counter = ChatModelCounter(FakeListChatModel(responses=["x"]), fallback=WordCounter())
        assert counter.count("hello big world") == 3
        assert counter.count_messages([("human", "hi there")]) == 2 + 1 + tokens.MESSAGE_OVERHEAD_TOKENS
        assert counter.name.endswith("->words")

    def test_message_only_tokenizer_never_reaches_langchain_gpt2_default(self):
        counter = ChatModelCounter(CountingModel(responses=["x"]), fallback=WordCounter())
        assert counter.count("a b c") == 3  # text counted by the fallback, not LangChain's GPT-2

    def test_failing_model_counter_falls_back_with_warning(self, caplog):
        def broken(text):
            raise OSError("cannot download encoding")

        counter = ChatModelCounter(
            FakeListChatModel(responses=["x"], custom_get_token_ids=broken), fallback=WordCounter()
        )
        assert counter.count("a b") == 2
        assert counter.count_messages([("human", "a b")]) == 2 + 1 + tokens.MESSAGE_OVERHEAD_TOKENS
        assert "failed" in caplog.text
        assert counter.name.endswith("->words")

    def test_unknown_role_rejected(self):
        counter = ChatModelCounter(CountingModel(responses=["x"]), fallback=WordCounter())
        with pytest.raises(ValueError, match="unknown message role"):
            counter.count_messages([("robot", "x")])


class TestGetTokenCounter:
    def test_selection_loads_nothing(self):
        before = tokens._load_hf_tokenizer.cache_info().currsize
        assert isinstance(get_token_counter(), MiniLMCounter)
        assert isinstance(get_token_counter(offline="tiktoken"), TiktokenCounter)
        assert isinstance(get_token_counter(FakeListChatModel(responses=["x"])), ChatModelCounter)
        assert tokens._load_hf_tokenizer.cache_info().currsize == before

    def test_unknown_backend_rejected(self):
        with pytest.raises(ValueError, match="unknown offline token counter"):
            get_token_counter(offline="chars")  # type: ignore[arg-type]


class TestTiktokenCounter:
    def test_counts_with_bundled_cl100k_without_download(self):
        counter = TiktokenCounter("cl100k_base")
        # OpenAI's cookbook example: "tiktoken is great!" is 6 tokens in cl100k_base.
        assert counter.count("tiktoken is great!") == 6
        assert counter.count("") == 0
        assert (
            counter.count_messages([("human", "tiktoken is great!")])
            == 6 + 1 + tokens.MESSAGE_OVERHEAD_TOKENS
        )

    def test_unknown_encoding_is_a_typed_error(self):
        with pytest.raises(TokenizerUnavailableError, match="bundled encodings"):
            TiktokenCounter("gpt5_base").count("x")


class TestMiniLMCounter:
    def test_missing_tokenizer_file_is_a_typed_error(self, tmp_path):
        with pytest.raises(TokenizerUnavailableError, match="cannot load tokenizer"):
            MiniLMCounter(tmp_path / "nope.json").count("hello")

    @pytest.mark.integration
    def test_long_text_is_not_truncated_and_counts_are_stable(self):
        counter = MiniLMCounter()
        text = " ".join(f"word{i % 50} tokenization" for i in range(500))  # 1,000 words
        first = counter.count(text)
        assert first > 128  # the tokenizer file truncates to 128 unless disabled
        assert first >= 1000
        assert counter.count(text) == first
        assert counter.count("") == 0
        # Chinese: one word piece per character.
        assert counter.count("订单号") == 3
