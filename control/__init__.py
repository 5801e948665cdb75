"""haygraph control plane: a LangGraph graph that routes, retrieves, evaluates and answers from evidence.

`control` never imports Haystack: it talks to the `Retriever` protocol and the `Evidence` model,
which `adapters` implements over the Haystack pipelines.

Layout, bottom to top (a module imports only from its own level or below; `tests/control/test_layering.py`
checks it):

- base modules — `errors` (one exception tree), `language` (Chinese detection, sentences),
  `texts` (every user-facing message, English and Chinese), `prompts` (every model prompt),
  `outcomes` (`Route`, `Status`), `evidence` (`Evidence`, `Retriever`), `reading` (`Reader`,
  `Reading`, `AnswerSpan`: what an extractive reader says about the evidence);
- `tools` — tool contracts, offline triggers, registry, executor;
- `window` — the context window: tokens, budget, prompt assembly, history, entity memory;
- `planning` — routing, rewriting, relevance, extractive answers, tool choice and replies;
- `graph` — state, context, nodes, routers, checkpointers and `build_graph`;
- `api` — `Agent`, `run_turn`, `ask` and the stable result object.

Public API (`__all__`):

- run the agent: `Agent` (`ask`, `resume`), `ask`, `run_turn`, `resume_turn`, `result_from_state`,
  `RESULT_KEYS`;
- build and drive the graph: `build_graph`, `Context`, `InputState`, `State`, `Route`, `Status`,
  `memory_checkpointer`, `sqlite_checkpointer`;
- talk to a knowledge base: `Evidence`, `Retriever`; and to a reader: `Reader`, `Reading`, `AnswerSpan`;
- tools: `ToolCall`, `ToolResult`, `ToolExecutor` (contracts and execution: `haygraph.control.tools`);
- the pure helpers of each step: `check_question`, `route_question`, `RouteDecision`,
  `rewrite_query`, `extractive_answer`, `ExtractiveAnswer`, `insufficient_message`,
  `build_turn_prompt`, and the model mode's `resolve_model`, `GroundedAnswer`, `RewrittenQueries`;
- errors: `ControlError` and its subclasses `ConfigError`, `ModelOutputError`, `ContextError`, `ToolError`.
"""

from haygraph.control.api import RESULT_KEYS, Agent, ask, result_from_state, resume_turn, run_turn
from haygraph.control.errors import ConfigError, ContextError, ControlError, ModelOutputError, ToolError
from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.graph.builder import build_graph
from haygraph.control.graph.checkpointers import memory_checkpointer, sqlite_checkpointer
from haygraph.control.graph.context import Context
from haygraph.control.graph.state import InputState, State
from haygraph.control.graph.turn_prompt import build_turn_prompt
from haygraph.control.outcomes import Route, Status
from haygraph.control.planning.extractive import ExtractiveAnswer, extractive_answer, insufficient_message
from haygraph.control.planning.input_check import check_question
from haygraph.control.planning.model_calls import GroundedAnswer, RewrittenQueries, resolve_model
from haygraph.control.planning.rewrite import rewrite_query
from haygraph.control.planning.routing import RouteDecision, route_question
from haygraph.control.reading import AnswerSpan, Reader, Reading
from haygraph.control.tools.types import ToolCall, ToolExecutor, ToolResult

__all__ = [
    "RESULT_KEYS",
    "Agent",
    "AnswerSpan",
    "ConfigError",
    "Context",
    "ContextError",
    "ControlError",
    "Evidence",
    "ExtractiveAnswer",
    "GroundedAnswer",
    "InputState",
    "ModelOutputError",
    "Reader",
    "Reading",
    "Retriever",
    "RewrittenQueries",
    "Route",
    "RouteDecision",
    "State",
    "Status",
    "ToolCall",
    "ToolError",
    "ToolExecutor",
    "ToolResult",
    "ask",
    "build_graph",
    "build_turn_prompt",
    "check_question",
    "extractive_answer",
    "insufficient_message",
    "memory_checkpointer",
    "resolve_model",
    "result_from_state",
    "resume_turn",
    "rewrite_query",
    "route_question",
    "run_turn",
    "sqlite_checkpointer",
]
