"""Graph state: the narrow input a caller sends and the full state the nodes share.

List and dict fields that several nodes write have reducers. A conversation thread keeps its
state across turns (checkpointer), so every per-turn field is reset by `analyze`, the entry node of
every turn: fields with reducers are reset with `langgraph.types.Overwrite`, plain fields are simply
written again. What survives between turns is only `messages` (the last turns, bounded by
`generate`), `summary`, `entities`, `turn` (the count) and `title` (the first question).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from haygraph.control.evidence import Evidence, evidence_key, merge_evidence
from haygraph.control.outcomes import Route, Status
from haygraph.control.tools.types import ToolCall, ToolResult

__all__ = [
    "InputState",
    "Route",
    "State",
    "Status",
    "add_timings",
    "evidence_key",
    "merge_evidence",
]


def add_timings(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """Reducer for `timings_ms`: per-node milliseconds, summed when a node runs more than once."""
    out = dict(left or {})
    for node, ms in (right or {}).items():
        out[node] = out.get(node, 0.0) + ms
    return out


class InputState(TypedDict):
    """What a caller sends for one turn."""

    question: str
    """The user's message for this turn (raw: it is cleaned and validated by `analyze`)."""

    messages: NotRequired[Annotated[list[AnyMessage], add_messages]]
    """Optional extra conversation messages; `analyze` appends the question itself."""


class State(InputState, total=False):
    """The full graph state (a thread's checkpoint holds it between turns)."""

    query: str
    """The main rewritten retrieval query (filler stripped, entities kept)."""

    queries: list[str]
    """1–3 retrieval queries for this turn; `query` is the first."""

    evidence: Annotated[list[Evidence], merge_evidence]
    """Evidence retrieved this turn, de-duplicated by id, best first."""

    candidates: list[Evidence]
    """Further chunks of this turn's retrieval (beyond `top_k` per query, up to `Context.answer_top_k`,
    and a multilingual store's best chunks in the other language): not read by the decision's words;
    the reader reads the other-language ones; the answer reads them when the decision says yes. Those
    the answer cites join `evidence`."""

    tool_calls: list[ToolCall]
    """Tool calls requested this turn by the router (rules or model)."""

    tool_results: Annotated[list[ToolResult], operator.add]
    """Results of this turn's tool calls; errors are results too."""

    intent: str | None
    """The routed tool intent this turn (e.g. "order"); selects the tools offered. None = no tools."""

    turn: int
    """Number of this turn in the thread, from 1 (kept and incremented by `analyze`); it makes model
    tool-call ids, and so the request ids of side-effect tools, unique across turns."""

    context_budget: dict[str, Any]
    """Token budget of this turn's prompt: per part allowed/used, totals vs limit (`window.prompt_assembly`).

    Filled by `generate` whenever it assembles a prompt (retrieve and tool routes, offline too);
    `{}` when no prompt was built; holds `error` when the prompt could not fit the window.
    """

    summary: str
    """Running summary of the turns folded out of `messages` (kept across turns)."""

    title: str
    """The thread's first usable message, set by `analyze` on that turn and kept: the thread's name in
    listings (`messages` loses its first question once the turn is folded into `summary`)."""

    route: Route
    """The route chosen by `analyze` for this turn."""

    input_problem: str | None
    """Why this turn's input was refused (empty, too long, no words); None when it was usable."""

    clarification: str | None
    """The question to ask the user back when `route` is "clarify" (or input was unusable)."""

    retry_count: int
    """How many expansions ran this turn; bounded by `Context.max_retries`."""

    quality: float | None
    """Best absolute relevance of this turn's evidence (set by `evaluate`; None = no evidence)."""

    answerable: float | None
    """Probability that this turn's evidence answers the question (`evaluate`, with
    `Context.answerability`; 0 when a rule refused; None = no decision model)."""

    decision: dict[str, Any] | None
    """The last answer-or-refuse decision of this turn (`Decision.to_dict`: answerable, probability,
    threshold, signals, rule); None when no decision was made."""

    reading: dict[str, Any] | None
    """The reader's last reading of this turn's top evidence (`haygraph.control.reading.Reading` as a
    dict: spans with offsets, margin, ids read); None without a reader or before `evaluate`."""

    retrieval_error: str | None
    """Why retrieval failed this turn (retriever missing or raising); None when it worked."""

    entities: dict[str, list[str]]
    """Key facts extracted from the conversation ("dates", kinds the tools declare...); kept across turns."""

    path: Annotated[list[str], operator.add]
    """Nodes visited this turn, in order."""

    status: Status
    """Outcome of this turn."""

    answer: str | None
    """The answer shown to the user; None when a model answer was rejected."""

    evidence_ids: list[str]
    """Ids of the evidence the answer cites (always a subset of `evidence`)."""

    notes: Annotated[list[str], operator.add]
    """Why this turn degraded or what was withheld (model fallback, timeout, injected text).

    Reset by `analyze` each turn."""

    timings_ms: Annotated[dict[str, float], add_timings]
    """Milliseconds spent per node this turn."""

    top_k: int
    """Number of chunks requested per retrieval query this turn."""
