"""`haygraph serve`: the knowledge base and the agent as an HTTP API (FastAPI on uvicorn).

Endpoints: `/healthz`, `/readyz`, `/v1/search`, `/v1/ask`, `/v1/ask/stream` (server-sent events),
OpenAI-compatible `/v1/chat/completions` and `/v1/models`, `/v1/threads/{id}`, MCP over Streamable HTTP
at `/mcp` (`mcp_http`); API keys bound to tenants; threads in memory, SQLite or PostgreSQL. Needs the
`serve` extra (`fastapi`, `uvicorn`, `mcp`; `langgraph-checkpoint-postgres` and `psycopg` for PostgreSQL
threads).

```python
from haygraph.adapters.service import HaygraphService, ServiceSettings, create_app

app = create_app(HaygraphService(ServiceSettings(store_dir="kb")))  # for any ASGI server
```

Names are imported lazily, so `haygraph.adapters.service.errors` stays cheap to import.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "create_app": "haygraph.adapters.service.app",
    "ServiceError": "haygraph.adapters.service.errors",
    "ServiceConfigError": "haygraph.adapters.service.errors",
    "Caller": "haygraph.adapters.service.keys",
    "KeyGrant": "haygraph.adapters.service.keys",
    "KeyRing": "haygraph.adapters.service.keys",
    "load_api_keys": "haygraph.adapters.service.keys",
    "serve": "haygraph.adapters.service.server",
    "HaygraphService": "haygraph.adapters.service.service",
    "ServiceSettings": "haygraph.adapters.service.settings",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'haygraph.adapters.service' has no attribute {name!r}")
