"""Assemble the generation prompt inside the token budget, and check it.

Message layout (a list of `(role, content)` pairs with roles "system", "human", "ai" — the tuple
form every LangChain chat model accepts; `AssembledPrompt.to_langchain()` converts them with
`langchain_core.messages.convert_to_messages`). The headers are in `haygraph.control.prompts`:

1. `system`: the system text; then, if any, "Known facts from this conversation:" with the
   entities (one `kind: a, b` line each); then, if kept, "Summary of earlier conversation:".
2. The kept history turns, oldest first, as `human` / `ai` messages.
3. `human`: "Evidence:" with one `[evidence id] text` block per kept chunk, "Tool results:" with
   the rendered results, then "Question: ...".

Tool schemas are not written into the messages: the kept schemas are returned for the model's
`bind_tools`, and their compact-JSON token counts are charged to the budget.

After assembly the whole prompt is measured with the same counter. If it exceeds the window
minus the output reserve (tokenizers are not exactly additive across block boundaries), the
lowest-ranked kept chunk is dropped and the prompt rebuilt; if no chunk is left to drop,
`BudgetExceededError` is raised — the limit is checked, never assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, convert_to_messages

from haygraph.control.errors import BudgetExceededError, PromptInputError
from haygraph.control.evidence import Evidence
from haygraph.control.prompts import (
    BLOCK_SEPARATOR,
    ENTITIES_HEADER,
    EVIDENCE_HEADER,
    QUESTION_LINE,
    SUMMARY_HEADER,
    TOOL_RESULTS_HEADER,
)
from haygraph.control.tools.types import ToolResult
from haygraph.control.window.budget import BudgetAllocation, BudgetConfig, allocate_budget
from haygraph.control.window.entities import format_entities
from haygraph.control.window.reduction import PreparedToolResult, prepare_tool_results
from haygraph.control.window.tokens import TokenCounter, truncate_to_tokens

_ROLES = {"human": "human", "user": "human", "ai": "ai", "assistant": "ai"}


@dataclass(frozen=True)
class AssembledPrompt:
    """The prompt to send and the record of how it was budgeted."""

    #: Final messages as (role, content) pairs; roles are "system", "human" or "ai".
    messages: list[tuple[str, str]]
    #: Tool schemas that fit, in the given order, to pass to the model's `bind_tools`.
    tool_schemas: list[dict[str, Any]]
    #: Ids of the evidence chunks in the prompt, in rank order.
    evidence_ids: list[str]
    #: Tool results in the prompt (reduced or not), with their full content when under the cap.
    tool_results: list[PreparedToolResult]
    #: The `context_budget` state field: plain, JSON-able data.
    budget: dict[str, Any]
    #: Measured tokens of messages plus tool schemas.
    total_tokens: int

    def to_langchain(self) -> list[BaseMessage]:
        """Return the messages as LangChain message objects."""
        return convert_to_messages(self.messages)


def _evidence_block(item: Evidence, text: str) -> str:
    return f"[{item.id}] {text}"


def _section_costs(blocks: Sequence[str], header: str, counter: TokenCounter) -> list[int]:
    costs = [counter.count(block + BLOCK_SEPARATOR) for block in blocks]
    if costs:
        costs[0] += counter.count(header)
    return costs


def assemble_prompt(
    *,
    system: str,
    question: str,
    counter: TokenCounter,
    config: BudgetConfig,
    tool_schemas: Sequence[Mapping[str, Any]] = (),
    history_summary: str = "",
    history_turns: Sequence[tuple[str, str]] = (),
    entities: Mapping[str, Sequence[str]] | None = None,
    evidence: Sequence[Evidence] = (),
    tool_results: Sequence[ToolResult] = (),
    result_key_fields: Mapping[str, Sequence[str]] | None = None,
    full_result_cap_tokens: int = 2000,
) -> AssembledPrompt:
    """Build the prompt within `config`'s budget (layout and checks: see the module docstring).

    Args:
        system: System prompt text (fixed cost).
        question: The user's question (fixed cost).
        counter: The token counter used for every measurement.
        config: Window and shares.
        tool_schemas: JSON-able tool schemas, most relevant first; a suffix is dropped if over share.
        history_summary: Running summary of older turns.
        history_turns: Recent turns as (role, text), oldest first; roles human/user/ai/assistant.
            Newest turns are kept first, then the summary, when history is over its share.
        entities: Key entities by kind (fixed cost; injected into the system message).
        evidence: Retrieved chunks, best first.
        tool_results: Results of this turn's tool calls.
        result_key_fields: Key field specs per tool name, used to reduce results over their share.
        full_result_cap_tokens: Keep a result's full content for inspection only up to this size.

    Raises:
        WindowTooSmallError: The fixed costs and output reserve do not fit in the window.
        BudgetExceededError: The measured prompt exceeds the limit with no chunk left to drop.
        PromptInputError: An unknown history role.

    """
    turns = []
    for role, text in history_turns:
        if role not in _ROLES:
            raise PromptInputError(f"unknown history role {role!r}; valid: {sorted(_ROLES)}")
        turns.append((_ROLES[role], text))
    entities_block = format_entities(entities or {})
    entities_text = ENTITIES_HEADER + entities_block if entities_block else ""
    question_text = QUESTION_LINE.format(question=question)
    fixed = {
        "system": counter.count_messages([("system", system)]),
        "entities": counter.count(entities_text),
        "question": counter.count_messages([("human", question_text)]),
    }

    schemas = [dict(schema) for schema in tool_schemas]
    schema_costs = [counter.count_json(schema) for schema in schemas]
    newest_first = list(reversed(turns))
    history_items = [counter.count_messages([turn]) for turn in newest_first]
    if history_summary.strip():
        history_items.append(counter.count(SUMMARY_HEADER + history_summary))
    prepared = prepare_tool_results(
        tool_results,
        counter=counter,
        allowance=config.nominal("tool_results"),
        key_fields=result_key_fields,
        full_content_cap_tokens=full_result_cap_tokens,
    )
    result_costs = _section_costs([p.text for p in prepared], TOOL_RESULTS_HEADER, counter)
    chunk_costs = _section_costs([_evidence_block(e, e.text) for e in evidence], EVIDENCE_HEADER, counter)

    allocation = allocate_budget(
        config,
        fixed=fixed,
        item_costs={
            "tool_schemas": schema_costs,
            "history": history_items,
            "tool_results": result_costs,
            "chunks": chunk_costs,
        },
    )
    parts = allocation.parts
    kept_turns = list(reversed(newest_first[: min(parts["history"].kept, len(newest_first))]))
    summary_kept = parts["history"].kept > len(newest_first)
    kept_results = prepared[: parts["tool_results"].kept]
    kept_schemas = schemas[: parts["tool_schemas"].kept]
    chunks = [(e, e.text) for e in evidence[: parts["chunks"].kept]]
    if parts["chunks"].truncated_to is not None:
        top = evidence[0]
        overhead = counter.count(EVIDENCE_HEADER + _evidence_block(top, "") + BLOCK_SEPARATOR)
        chunks = [(top, truncate_to_tokens(top.text, counter, parts["chunks"].truncated_to - overhead))]
        chunks = [chunk for chunk in chunks if chunk[1]]

    system_text = system + entities_text + (SUMMARY_HEADER + history_summary if summary_kept else "")
    schema_tokens = sum(schema_costs[: len(kept_schemas)])
    while True:
        messages = _build_messages(system_text, kept_turns, chunks, kept_results, question_text)
        total = counter.count_messages(messages) + schema_tokens
        if total <= allocation.limit:
            break
        if not chunks:
            raise BudgetExceededError(total=total, limit=allocation.limit)
        chunks.pop()

    budget = _report(allocation, chunks, evidence, counter, total)
    return AssembledPrompt(
        messages=messages,
        tool_schemas=kept_schemas,
        evidence_ids=[item.id for item, _ in chunks],
        tool_results=kept_results,
        budget=budget,
        total_tokens=total,
    )


def _build_messages(
    system_text: str,
    turns: Sequence[tuple[str, str]],
    chunks: Sequence[tuple[Evidence, str]],
    results: Sequence[PreparedToolResult],
    question_text: str,
) -> list[tuple[str, str]]:
    sections = []
    if chunks:
        sections.append(EVIDENCE_HEADER + BLOCK_SEPARATOR.join(_evidence_block(e, t) for e, t in chunks))
    if results:
        sections.append(TOOL_RESULTS_HEADER + BLOCK_SEPARATOR.join(r.text for r in results))
    sections.append(question_text)
    return [("system", system_text), *turns, ("human", BLOCK_SEPARATOR.join(sections))]


def _report(
    allocation: BudgetAllocation,
    chunks: Sequence[tuple[Evidence, str]],
    evidence: Sequence[Evidence],
    counter: TokenCounter,
    measured: int,
) -> dict[str, Any]:
    chunk_part = allocation.parts["chunks"]
    used = sum(_section_costs([_evidence_block(e, t) for e, t in chunks], EVIDENCE_HEADER, counter))
    parts = {**allocation.parts}
    parts["chunks"] = dataclasses.replace(
        chunk_part, used=used, kept=len(chunks), dropped=len(evidence) - len(chunks)
    )
    report = dataclasses.replace(allocation, parts=parts).to_dict()
    report["measured_total"] = measured
    report["counter"] = counter.name
    report["dropped_evidence_ids"] = [e.id for e in evidence[len(chunks) :]]
    return report
