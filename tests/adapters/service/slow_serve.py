"""`haygraph serve` as a real process (CLI, uvicorn, signals) whose `--model slow:SECONDS` is a test model.

Not a test module: `python -m tests.adapters.service.slow_serve serve --store DIR --model slow:2 ...`
runs the real CLI; only the chat-model resolution is patched so that `slow:SECONDS` gives a
`SlowChatModel` (each model call takes SECONDS), which keeps a turn in flight long enough to signal
the process mid-turn. Any other model spec resolves as usual.
"""

from __future__ import annotations

import sys

from langchain_core.language_models import BaseChatModel

from haygraph.adapters.cli.main import main
from haygraph.control.planning import model_calls
from tests.adapters.service.chat_models import SlowChatModel

_resolve = model_calls.resolve_model


def resolve_model(spec: str) -> BaseChatModel:
    """`slow:SECONDS` -> `SlowChatModel(delay_s=SECONDS)`; anything else as `haygraph` resolves it."""
    if spec.startswith("slow:"):
        return SlowChatModel(delay_s=float(spec.removeprefix("slow:")))
    return _resolve(spec)


if __name__ == "__main__":
    model_calls.resolve_model = resolve_model
    sys.exit(main(sys.argv[1:]))
