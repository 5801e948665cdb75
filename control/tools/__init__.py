"""Tool contracts and their execution: registry, allow-list, validation, timeouts, retries, budget.

`control.tools` never imports Haystack, `retrieval` or `adapters`; concrete tools (orders database,
knowledge-base search, MCP tools) are built in `adapters`.
"""

from control.tools.contract import ToolContract, ToolRuntimeInfo, format_validation_error
from control.tools.errors import ToolContractError, ToolError, ToolFailure, ToolRegistrationError
from control.tools.executor import ContractToolExecutor, reduce_result, request_id_for, run_with_timeout
from control.tools.registry import ANY_INTENT, ToolRegistry

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
