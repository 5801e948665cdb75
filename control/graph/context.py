"""Per-run settings of the graph, passed with `graph.invoke(..., context=Context(...))`.

The thread id is not a setting: it travels in the LangGraph config
(`{"configurable": {"thread_id": ...}}`) together with the checkpointer. A graph invoked without a
context runs with the graph's default (`build_graph(context=...)`, else `Context()`).
"""

from __future__ import annotations

import copy
import dataclasses
import reprlib
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from haygraph.control.errors import ConfigError
from haygraph.control.evidence import Retriever
from haygraph.control.graph.deadlines import check_timeout
from haygraph.control.planning.decision.model import AnswerabilityModel, shipped_model
from haygraph.control.planning.model_mode import ModelMode, resolve_model_mode
from haygraph.control.reading import Reader
from haygraph.control.tools.executor import ContractToolExecutor
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.types import ToolExecutor
from haygraph.control.window.budget import BudgetConfig
from haygraph.control.window.history import HistoryConfig
from haygraph.control.window.tokens import TokenCounter, get_token_counter


@dataclass(kw_only=True)
class Context:
    """Runtime settings of one graph run; validated on construction (`ConfigError` names the bad value).

    Relevance scale: `relevance_threshold` and `min_evidence_relevance` are compared with
    `Evidence.relevance` — an absolute score such as the dense cosine similarity of the chunk with
    the query. For evidence whose `relevance` is None the ranking `score` is used instead, so a
    retriever without absolute scores must put its scores on a comparable 0–1 scale itself.
    """

    retriever: Retriever | None = None
    """The knowledge base; None means every retrieval fails softly (status `degraded`)."""

    model: BaseChatModel | str | None = None
    """A LangChain chat model, a "provider:model" string (`langchain` extra), or None = offline rules."""

    model_mode: str = "auto"
    """How structured output is obtained from `model`: "auto" (probe once, at construction), "native"
    (`with_structured_output` / `bind_tools`) or "json" (JSON prompt, Pydantic validation, one repair);
    see `haygraph.control.planning.model_mode`."""

    relevance_threshold: float = 0.5
    """Best-evidence relevance below which retrieval counts as poor and is expanded."""

    min_evidence_relevance: float | None = None
    """Relevance an evidence item needs to be usable for the answer; None = `relevance_threshold`."""

    answerability: AnswerabilityModel | None = field(default_factory=shipped_model)
    """The evaluate step's answerability decision (`haygraph.control.planning.decision`): below
    its threshold the turn expands, then refuses with `insufficient_evidence`. Default: the weights
    shipped with the package (`shipped_model()`, loaded once on first use); None = decide on
    `relevance_threshold` alone (the older heuristic)."""

    reader: Reader | None = None
    """The extractive reader the evaluate step runs over the top evidence (`haygraph.control.reading`):
    its no-answer margin feeds the decision and its best span is what the answer gives first. None =
    no reader (the decision and the answer read the evidence's words alone). `build_agent` passes the
    trained one (`query.reader.model`, default ``bundled``)."""

    max_retries: int = 1
    """Maximum expansions per turn (the evaluate/expand loop bound)."""

    top_k: int = 3
    """Chunks per retrieval query."""

    expand_top_k: int = 5
    """Chunks requested by an expansion (with the original question)."""

    answer_top_k: int = 5
    """Chunks the answer may read: each retrieval asks for this many (at least `top_k`). The first
    `top_k` of each query, in the retriever's order, are the evidence the decision reads; the others
    are `candidates`, which the answer reads too once the decision says yes (the best 3 by relevance
    are quoted). So a chunk the fusion puts 4th but the relevance model puts higher ("Hybrid employees
    may work remotely up to 2 days per week" for "how many days per week … from home") can answer,
    while what the decision reads — and so what is refused — stays as with `top_k` alone."""

    tool_executor: ToolExecutor | None = None
    """Runs tool calls under their contracts; None = every tool call gets an error result.

    Built from `tool_registry` + `tool_allow_list` when None and a registry is given; a
    `ContractToolExecutor` passed here supplies `tool_registry` and `tool_allow_list` when those are None.
    """

    tool_registry: ToolRegistry | None = None
    """The tool contracts the graph knows: the router's catalogue and the source of offered schemas.

    The entities its contracts' offline triggers declare (e.g. "order_ids") are added to
    `history.entity_config.patterns`, so they are extracted and remembered like dates or ids.
    """

    tool_allow_list: tuple[str, ...] | None = None
    """Tools this session may see and call (deny by default); None = the executor's allow-list."""

    max_tool_calls_per_turn: int = 2
    """Per-turn call budget of the executor built from `tool_registry` (a given executor keeps its own)."""

    max_question_chars: int = 2000
    """Longer questions are refused with status `needs_clarification`."""

    filters: dict[str, Any] | None = field(default=None)
    """Haystack-style filters passed to every `Retriever.retrieve` call of the run (e.g. tenant / access
    filters). `with_filters` narrows them for one call (`Agent.ask(..., filters=...)`)."""

    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """Context window and shares of the generation prompt (default: 8192 tokens, default shares)."""

    history: HistoryConfig = field(default_factory=HistoryConfig)
    """Turns kept verbatim (3), running-summary size and entity bounds of the conversation."""

    token_counter: TokenCounter | None = None
    """Counter for the budget; None = the chat model's own counter with a model, else MiniLM's."""

    model_summary: bool = True
    """With a model, it writes the running summary of folded turns; otherwise it is extractive."""

    full_result_cap_tokens: int = 2000
    """A tool result's full content stays in state (for inspection) only up to this many tokens."""

    retrieve_timeout_s: float = 5.0
    """Deadline of one retrieve / expand step (all its queries); past it the turn is `degraded`."""

    model_timeout_s: float = 30.0
    """Deadline of each chat-model call (routing, rewriting, generation, summary), retries included;
    past it the node falls back to the offline rules / extractive answer, with a note."""

    model_retries: int = 1
    """Retries of a transient model failure (rate limit, connection error, 5xx) within the deadline."""

    preapproved_tools: tuple[str, ...] = ()
    """Side-effect tools this caller approved in advance: they run without pausing for confirmation.

    Every other allowed tool whose contract has `side_effects=True` pauses the graph with LangGraph's
    `interrupt()` before it runs (status `needs_confirmation`; resume with `Agent.resume`)."""

    _counter: TokenCounter | None = field(default=None, init=False, repr=False, compare=False)
    _retriever_warm: bool = field(default=False, init=False, repr=False, compare=False)
    _mode: ModelMode = field(default=ModelMode.NATIVE, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not 0.0 <= self.relevance_threshold <= 1.0:
            raise ConfigError(f"relevance_threshold must be in [0, 1], but got {self.relevance_threshold}")
        if self.min_evidence_relevance is not None and not 0.0 <= self.min_evidence_relevance <= 1.0:
            raise ConfigError(
                f"min_evidence_relevance must be in [0, 1] or None, but got {self.min_evidence_relevance}"
            )
        if self.answerability is not None and not isinstance(self.answerability, AnswerabilityModel):
            raise ConfigError(
                "answerability must be an AnswerabilityModel or None, "
                f"but got {type(self.answerability).__name__}"
            )
        if self.reader is not None and not isinstance(self.reader, Reader):
            raise ConfigError(
                f"reader must have a read(question, evidence) method, got {type(self.reader).__name__}"
            )
        if self.max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, but got {self.max_retries}")
        if not isinstance(self.budget, BudgetConfig):
            raise ConfigError(f"budget must be a BudgetConfig, but got {type(self.budget).__name__}")
        if not isinstance(self.history, HistoryConfig):
            raise ConfigError(f"history must be a HistoryConfig, but got {type(self.history).__name__}")
        for name in ("top_k", "expand_top_k", "answer_top_k", "max_question_chars", "full_result_cap_tokens"):
            value = getattr(self, name)
            if value <= 0:
                raise ConfigError(f"{name} must be > 0, but got {value}")
        check_timeout("retrieve_timeout_s", self.retrieve_timeout_s)
        check_timeout("model_timeout_s", self.model_timeout_s)
        if (
            isinstance(self.model_retries, bool)
            or not isinstance(self.model_retries, int)
            or self.model_retries < 0
        ):
            raise ConfigError(f"model_retries must be an int >= 0, but got {self.model_retries!r}")
        if isinstance(self.preapproved_tools, str):
            raise ConfigError(
                "preapproved_tools must be a sequence of tool names, "
                f"not the string {self.preapproved_tools!r}"
            )
        self.preapproved_tools = tuple(self.preapproved_tools)
        if self.filters is not None and not isinstance(self.filters, dict):
            raise ConfigError(
                f"filters must be a dict (Haystack filter syntax), but got {reprlib.repr(self.filters)}"
            )
        if isinstance(self.model, str):
            from haygraph.control.planning.model_calls import resolve_model

            self.model = resolve_model(self.model)
        if isinstance(self.model, BaseChatModel):
            self._mode = resolve_model_mode(self.model, self.model_mode)
        elif self.model_mode.strip().lower() != "auto":
            ModelMode.from_str(self.model_mode)  # validate the name even without a model
        self._wire_tools()
        self._add_tool_entities()

    def _add_tool_entities(self) -> None:
        """Extract the entity kinds the registry's offline triggers declare (see `tool_registry`)."""
        if self.tool_registry is None:
            return
        entity_config = self.history.entity_config
        declared = [p for p in self.tool_registry.entity_patterns() if p not in entity_config.patterns]
        if declared:
            entity_config = dataclasses.replace(entity_config, patterns=(*entity_config.patterns, *declared))
            self.history = dataclasses.replace(self.history, entity_config=entity_config)

    def with_filters(self, filters: dict[str, Any] | None) -> Context:
        """Return a copy of this context whose retrievals also apply `filters` (None = this context).

        The copy's `filters` are `filters` AND this context's own (`combine_filters`), so a per-call
        filter can narrow, never widen, what the session may retrieve. Nothing is re-validated or
        reloaded: the copy shares the model, tools and token counter.
        """
        if filters is None:
            return self
        if not isinstance(filters, dict):
            raise ConfigError(
                f"filters must be a dict (Haystack filter syntax), but got {reprlib.repr(filters)}"
            )
        self.counter  # noqa: B018 - resolve the counter once, so every narrowed copy shares it (and its memo)
        narrowed = copy.copy(self)
        narrowed.filters = combine_filters(self.filters, filters)
        return narrowed

    def _wire_tools(self) -> None:
        """Derive registry / allow-list / executor from each other (see the three fields)."""
        if self.max_tool_calls_per_turn < 0:
            raise ConfigError(f"max_tool_calls_per_turn must be >= 0, but got {self.max_tool_calls_per_turn}")
        if isinstance(self.tool_allow_list, str):
            raise ConfigError(
                f"tool_allow_list must be a sequence of tool names, not the string {self.tool_allow_list!r}"
            )
        if self.tool_registry is not None and not isinstance(self.tool_registry, ToolRegistry):
            raise ConfigError(
                f"tool_registry must be a ToolRegistry, but got {type(self.tool_registry).__name__}"
            )
        executor = self.tool_executor
        if isinstance(executor, ContractToolExecutor):
            if self.tool_registry is None:
                self.tool_registry = executor.registry
            if self.tool_allow_list is None:
                self.tool_allow_list = tuple(executor.allow_list)
        if self.tool_allow_list is not None:
            self.tool_allow_list = tuple(self.tool_allow_list)
        if self.tool_registry is not None and executor is None:
            if self.tool_allow_list is None:
                raise ConfigError(
                    "tool_registry was given without tool_allow_list: pass the names this session may "
                    "call (e.g. tool_allow_list=DEFAULT_ALLOW_LIST), or a ContractToolExecutor"
                )
            self.tool_executor = ContractToolExecutor(
                self.tool_registry, self.tool_allow_list, max_calls_per_turn=self.max_tool_calls_per_turn
            )

    def warm_retriever(self) -> None:
        """Call the retriever's `warm_up()` (Haystack convention: load models, idempotent) once.

        Loading a model is start-up work, not a query: it runs before the retrieve deadline starts
        (`retrieve_timeout_s`), so a cold start is not reported as a retriever timeout. A
        retriever without `warm_up` is left alone; one whose warm-up raises fails its query instead.
        """
        if self._retriever_warm or self.retriever is None:
            return
        warm_up = getattr(self.retriever, "warm_up", None)
        if callable(warm_up):
            warm_up()
        self._retriever_warm = True

    @property
    def offered_allow_list(self) -> tuple[str, ...]:
        """The tool names a model may be shown this session (empty without an allow-list)."""
        return self.tool_allow_list or ()

    def retrieval_depth(self, top_k: int | None = None) -> int:
        """Chunks one retrieval asks for: `answer_top_k`, or the turn's `top_k` if larger.

        `top_k` defaults to `self.top_k`; the first `top_k` are the decision's evidence, the rest candidates.
        """
        return max(self.top_k if top_k is None else top_k, self.answer_top_k)

    @property
    def usable_relevance(self) -> float:
        """The relevance an evidence item needs to be used in an answer."""
        if self.min_evidence_relevance is not None:
            return self.min_evidence_relevance
        return self.relevance_threshold

    @property
    def chat_model(self) -> BaseChatModel | None:
        """The resolved chat model, or None in offline mode."""
        return self.model if isinstance(self.model, BaseChatModel) else None

    @property
    def structured_mode(self) -> ModelMode:
        """The model mode decided at construction (`ModelMode.NATIVE` when there is no model)."""
        return self._mode

    @property
    def counter(self) -> TokenCounter:
        """The budget's token counter: `token_counter`, else resolved once (model's or MiniLM) and cached."""
        if self.token_counter is not None:
            return self.token_counter
        if self._counter is None:
            self._counter = get_token_counter(self.chat_model)
        return self._counter


def combine_filters(*filters: dict[str, Any] | None) -> dict[str, Any] | None:
    """AND together Haystack-style filters (None entries are skipped); None when none is given.

    One filter is returned as it is; several become `{"operator": "AND", "conditions": [...]}`.
    """
    given = [f for f in filters if f]
    if not given:
        return None
    if len(given) == 1:
        return given[0]
    return {"operator": "AND", "conditions": given}
