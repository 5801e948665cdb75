"""haygraph control plane: a LangGraph graph that routes, retrieves, evaluates and answers from evidence.

`control` never imports Haystack: it talks to the `Retriever` protocol and the `Evidence` model,
which `adapters` implements over the Haystack pipelines.
"""

from haygraph.control.api import RESULT_KEYS, Agent, ask, result_from_state, run_turn
from haygraph.control.context import Context
from haygraph.control.errors import ConfigError, ControlError, ModelOutputError
from haygraph.control.evidence import Evidence, Retriever
from haygraph.control.extractive import ExtractiveAnswer, extractive_answer, insufficient_message
from haygraph.control.generation import build_turn_prompt
from haygraph.control.graph import build_graph
from haygraph.control.model_mode import GroundedAnswer, RewrittenQueries, resolve_model
from haygraph.control.rules import RouteDecision, check_question, rewrite_query, route_question
from haygraph.control.state import InputState, Route, State, Status
from haygraph.control.threads import memory_checkpointer, sqlite_checkpointer
from haygraph.control.tool_types import ToolCall, ToolExecutor, ToolResult

__all__ = [
    "RESULT_KEYS",
    "Agent",
    "ConfigError",
    "Context",
    "ControlError",
    "Evidence",
    "ExtractiveAnswer",
    "GroundedAnswer",
    "InputState",
    "ModelOutputError",
    "Retriever",
    "RewrittenQueries",
    "Route",
    "RouteDecision",
    "State",
    "Status",
    "ToolCall",
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
    "rewrite_query",
    "route_question",
    "run_turn",
    "sqlite_checkpointer",
]
