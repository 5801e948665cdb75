"""The generation prompt of one turn, assembled inside the token budget.

`build_turn_prompt` collects what the prompt is made of from the state and the run's settings and
hands it to `haygraph.control.window.prompt_assembly.assemble_prompt`, which charges fixed costs
first, packs every part into its share, drops the lowest-ranked chunks and checks the measured total
against `window - output reserve`:

- system: `haygraph.control.prompts.GENERATION_SYSTEM`, the remembered entities and the summary;
- history: the last `HistoryConfig.keep_turns` turns before the question, verbatim;
- tool schemas: only those of the routed intent's tools (charged on the tool route);
- evidence: the usable chunks in rank order; tool results: reduced to their contract key fields
  when over their share;
- the question.

The same prompt is built with or without a model: in model mode it is sent, offline it is the
budget record and defines which evidence the extractive answer may use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from haygraph.control.errors import ReductionError
from haygraph.control.evidence import Evidence
from haygraph.control.graph.context import Context
from haygraph.control.graph.state import State
from haygraph.control.planning.injection import REMOVED_MARKER, is_instruction_like, strip_instructions
from haygraph.control.prompts import GENERATION_SYSTEM, READER_HEADER, READER_LINE
from haygraph.control.tools.types import ToolResult
from haygraph.control.window.history import messages_to_pairs
from haygraph.control.window.memory import earlier_turns
from haygraph.control.window.prompt_assembly import AssembledPrompt, assemble_prompt
from haygraph.control.window.reduction import reduce_to_key_fields
from haygraph.control.window.tokens import TokenCounter


def intent_tool_schemas(ctx: Context, state: State) -> list[dict[str, Any]]:
    """Return the schemas of the allowed tools of this turn's routed intent (`State.intent`).

    Only these count against the tool-schema share: tools of other intents and tools outside the
    session's allow-list are never injected (the same selection the tool-choice call binds).
    """
    intent = state.get("intent")
    if ctx.tool_registry is None or not intent:
        return []
    return ctx.tool_registry.schemas_for(intent, ctx.offered_allow_list)


def result_key_fields(ctx: Context) -> dict[str, tuple[str, ...]]:
    """Return the contract-declared key fields per tool name (empty without a registry)."""
    registry = ctx.tool_registry
    return {c.name: c.key_fields for c in registry if c.key_fields} if registry is not None else {}


def _as_data(item: Evidence) -> Evidence:
    """The evidence as the model sees it: instruction-like spans replaced by `REMOVED_MARKER`."""
    if not is_instruction_like(item.text):
        return item
    return item.model_copy(update={"text": strip_instructions(item.text, REMOVED_MARKER)})


def build_turn_prompt(
    ctx: Context,
    state: State,
    *,
    evidence: Sequence[Evidence] = (),
    tool_results: Sequence[ToolResult] = (),
) -> AssembledPrompt:
    """Assemble this turn's generation prompt within `ctx.budget` (see the module docstring).

    Evidence is data: instruction-like spans (`haygraph.control.planning.injection`) are replaced by
    `REMOVED_MARKER` before the model sees them; the state keeps the original text.

    Raises the `haygraph.control.errors.ContextError` subclasses of `assemble_prompt`
    (`WindowTooSmallError`, `BudgetExceededError`, ...) and `TokenizerUnavailableError`.
    """
    history = earlier_turns(list(state.get("messages") or []), ctx.history.keep_turns)
    hints = reader_hints(state.get("reading"), evidence) if ctx.chat_model is not None else ""
    return assemble_prompt(
        system=GENERATION_SYSTEM + hints,
        question=state.get("question", ""),
        counter=ctx.counter,
        config=ctx.budget,
        tool_schemas=intent_tool_schemas(ctx, state),
        history_summary=state.get("summary") or "",
        history_turns=messages_to_pairs(history),
        entities=state.get("entities") or {},
        evidence=[_as_data(e) for e in evidence],
        tool_results=tool_results,
        result_key_fields=result_key_fields(ctx),
        full_result_cap_tokens=ctx.full_result_cap_tokens,
    )


READER_HINTS = 3
"""Most reader spans a chat model's prompt lists."""


def reader_hints(reading: Mapping[str, Any] | None, evidence: Sequence[Evidence]) -> str:
    """The reader's spans in `evidence` for a chat model's system prompt ("" without any).

    A span's confidence is ``high`` for a margin of at least 2 (the reader prefers it to "no answer"
    by e^2 to 1), ``medium`` above 0, ``low`` otherwise. Instruction-like spans are left out: evidence is
    data.
    """
    if not reading:
        return ""
    ids = {e.id for e in evidence}
    lines = []
    for span in reading.get("spans") or []:
        if span.get("evidence_id") not in ids or is_instruction_like(str(span.get("text", ""))):
            continue
        margin = float(span.get("margin", 0.0))
        confidence = "high" if margin >= 2 else "medium" if margin > 0 else "low"
        lines.append(READER_LINE.format(id=span["evidence_id"], span=span["text"], confidence=confidence))
        if len(lines) == READER_HINTS:
            break
    return READER_HEADER + "\n".join(lines) if lines else ""


def results_for_state(
    results: Sequence[ToolResult],
    *,
    counter: TokenCounter,
    cap_tokens: int,
    key_fields: Mapping[str, Sequence[str]],
) -> tuple[list[ToolResult], bool]:
    """Return the results to keep in state: full content only up to `cap_tokens`, else key fields.

    A result over the cap keeps its contract key fields (or no content when its tool declares
    none). The flag says whether anything was replaced.
    """
    kept: list[ToolResult] = []
    changed = False
    for result in results:
        if result.content is not None and counter.count_json(result.content) > cap_tokens:
            fields = key_fields.get(result.name)
            try:
                content = reduce_to_key_fields(result.content, fields) if fields else None
            except ReductionError:
                content = None
            result = result.model_copy(update={"content": content})
            changed = True
        kept.append(result)
    return kept, changed
