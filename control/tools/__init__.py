"""Tool contracts and their execution: registry, allow-list, validation, timeouts, retries, budget.

`haygraph.control.tools` never imports Haystack, `retrieval` or `adapters`; concrete tools (orders database,
knowledge-base search, MCP tools) are built in `adapters`.
"""

from haygraph.control.tools.contract import ToolContract, ToolRuntimeInfo, format_validation_error
from haygraph.control.tools.errors import ToolContractError, ToolError, ToolFailure, ToolRegistrationError
from haygraph.control.tools.executor import (
    ContractToolExecutor,
    reduce_result,
    request_id_for,
    run_with_timeout,
)
from haygraph.control.tools.registry import ANY_INTENT, ToolRegistry

__all__ = [
    "ANY_INTENT",
    "ContractToolExecutor",
    "ToolContract",
    "ToolContractError",
    "ToolError",
    "ToolFailure",
    "ToolRegistrationError",
    "ToolRegistry",
    "ToolRuntimeInfo",
    "format_validation_error",
    "reduce_result",
    "request_id_for",
    "run_with_timeout",
]
