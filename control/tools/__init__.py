"""Tool contracts and their execution: registry, allow-list, validation, timeouts, retries, budget.

Modules: `types` (calls, results, the executor protocol), `contract` (`ToolContract`), `triggers`
(`OfflineTrigger`: when the offline router calls a tool), `registry` (`ToolRegistry`), `executor`
(`ContractToolExecutor`). Errors are in `haygraph.control.errors` (`ToolError` and subclasses,
re-exported here).

`haygraph.control.tools` never imports Haystack, `retrieval` or `adapters`; concrete tools (orders
database, knowledge-base search, MCP tools) are built in `adapters`.
"""

from haygraph.control.errors import ToolContractError, ToolError, ToolFailure, ToolRegistrationError
from haygraph.control.tools.contract import ANY_INTENT, ToolContract, ToolRuntimeInfo, format_validation_error
from haygraph.control.tools.executor import (
    ContractToolExecutor,
    reduce_result,
    request_id_for,
    run_with_timeout,
)
from haygraph.control.tools.registry import ToolRegistry
from haygraph.control.tools.triggers import Cues, EntityArgument, OfflineTrigger
from haygraph.control.tools.types import ToolCall, ToolExecutor, ToolResult, ToolStatus

__all__ = [
    "ANY_INTENT",
    "ContractToolExecutor",
    "Cues",
    "EntityArgument",
    "OfflineTrigger",
    "ToolCall",
    "ToolContract",
    "ToolContractError",
    "ToolError",
    "ToolExecutor",
    "ToolFailure",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolResult",
    "ToolRuntimeInfo",
    "ToolStatus",
    "format_validation_error",
    "reduce_result",
    "request_id_for",
    "run_with_timeout",
]
