"""Model mode with a real local chat model (SmolLM2-135M, `local-llm` extra) over the handbook store.

Marked `slow` (run with `make test-slow`): loading takes ~20 s alone and ~1.5 min on a busy machine,
and a turn is several model calls at a few tokens/s. A 135M model answers poorly; the test checks
that the path is real and its guards hold: no crash, the JSON-prompt mode chosen up front, every
cited evidence id valid, and every fallback recorded with its reason. It prints load time,
tokens/s, fallback rate and per-turn latency (`pytest -s` shows them).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from haygraph.control.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]
CASE_IDS = ["ans-en-01", "ans-en-02", "ans-zh-01"]


def _local_model():
    pytest.importorskip("gguf", reason="the `local-llm` extra is not installed (gguf missing)")
    pytest.importorskip("accelerate", reason="the `local-llm` extra is not installed (accelerate missing)")
    from haygraph.adapters.local_llm import load_local_chat_model

    try:
        return load_local_chat_model("local:smollm2")
    except ConfigError as exc:
        pytest.skip(f"the `local-llm` extra is not installed: {exc}")


def test_unknown_local_model_is_a_config_error() -> None:
    from haygraph.adapters.local_llm import load_local_chat_model

    with pytest.raises(ConfigError, match=r"unknown local model 'gpt9'.*valid: smollm2"):
        load_local_chat_model("local:gpt9")


@pytest.mark.slow
@pytest.mark.integration
def test_smollm2_through_model_mode(handbook_store: Path) -> None:
    from haygraph.adapters.agent import build_agent
    from haygraph.control.planning.model_mode import ModelMode

    model = _local_model()
    model.max_new_tokens = 96
    model.warm_up()
    agent = build_agent(handbook_store, model=model)
    assert agent.context.structured_mode is ModelMode.JSON  # decided once, before any call
    cases = {
        c["id"]: c
        for c in map(json.loads, (REPO / "eval/cases/handbook_cases.jsonl").read_text("utf-8").splitlines())
    }
    latencies, fallbacks, notes_seen = [], 0, []
    for case_id in CASE_IDS:
        start = time.perf_counter()
        result = agent.ask(cases[case_id]["question"], thread_id=case_id)
        latencies.append(time.perf_counter() - start)
        retrieved = {e["id"] for e in result["evidence"]}
        assert set(result["evidence_ids"]) <= retrieved  # every citation is evidence of this turn
        assert result["status"] in {"completed", "insufficient_evidence", "degraded", "rejected"}
        if result["status"] == "completed":
            assert result["answer"] and result["evidence_ids"]
        fallbacks += bool(result["notes"])
        notes_seen += result["notes"]
        assert all(isinstance(n, str) and n for n in result["notes"])
        if result["status"] in {"degraded", "rejected"}:
            assert result["notes"]  # a fallback always says why
    tokens_per_s = model.generated_tokens / model.generate_seconds if model.generate_seconds else 0.0
    print(
        f"\nsmollm2: load {model.load_seconds:.1f} s, {tokens_per_s:.1f} tokens/s, "
        f"fallback rate {fallbacks}/{len(CASE_IDS)}, per-turn latency "
        + ", ".join(f"{s:.1f}" for s in latencies)
        + " s\nnotes: "
        + json.dumps(notes_seen, ensure_ascii=False)
    )
