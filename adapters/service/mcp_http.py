"""MCP over Streamable HTTP in `haygraph serve`: the knowledge base and the agent at `/mcp`.

The tools are `haygraph serve-mcp`'s — `search_knowledge_base`, `get_chunk` — plus `ask`, which runs the
same turn as `POST /v1/ask` (`HaygraphService.turn` + `ask_turn`: the same graph, deadline, outcome
metrics and refusal for a key that sees no documents) and returns the answer with its citations, or the
refusal. The MCP SDK serves them (`FastMCP` on its `StreamableHTTPSessionManager`).

A request to `/mcp` goes through the service's middleware like any `/v1/` request: the API key or JWT
(`Authorization: Bearer ...`) is checked first (401 before any MCP processing), the key's rate limit and
the admission slots apply to every POST (429 with `Retry-After`), the body size limit too. Each tool
call is bound to the tenant of the request's credentials (`request.state.caller`), never to anything in
its arguments; a request's `filters` narrow what the tenant sees, never widen it.

Stateless, JSON responses: every POST is answered on its own (no `Mcp-Session-Id`, no server-sent
stream), so any `serve` process behind a load balancer can answer any request, and a client keeps
working across a restart. Nothing of a conversation is kept between calls (each `ask` is a new one).

An `ask` leaves one audit line (with `--audit-log`): its outcome and evidence ids, `"via": "mcp"`. A
request refused before MCP processing (401, 413, 429) leaves one line of action `mcp` (`AuditMiddleware`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from mcp.server.fastmcp.exceptions import ToolError
from mcp.server.fastmcp.server import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request
from starlette.routing import Route

from haygraph.adapters.mcp.server import Access, create_bound_mcp_server
from haygraph.adapters.service.asgi import MCP_PATH
from haygraph.adapters.service.audit import actor_of
from haygraph.adapters.service.errors import ServiceError
from haygraph.adapters.service.keys import Caller
from haygraph.adapters.service.tenancy import ScopedRetriever
from haygraph.adapters.service.turns import ask_turn

if TYPE_CHECKING:
    from fastapi import FastAPI
    from mcp.server.fastmcp import Context, FastMCP
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from haygraph.adapters.service.service import HaygraphService

logger = logging.getLogger(__name__)

__all__ = ["MCP_PATH", "create_service_mcp_server", "mount_mcp", "running"]


def caller_of(ctx: Context[Any, Any, Any]) -> Caller:
    """The caller `ApiKeyMiddleware` authenticated for the HTTP request behind a tool call."""
    request = ctx.request_context.request
    caller = request.scope.get("state", {}).get("caller") if isinstance(request, Request) else None
    if not isinstance(caller, Caller):  # only reachable if the app were mounted without the key check
        raise ToolError("this call is not authenticated")
    return caller


def create_service_mcp_server(service: HaygraphService) -> FastMCP:
    """The MCP server of `service`: every tool call bound to its HTTP request's caller (stateless, JSON)."""

    def access(ctx: Context[Any, Any, Any]) -> Access:
        caller = caller_of(ctx)
        try:
            service.check_ready()
        except ServiceError as exc:
            raise ToolError(str(exc)) from None
        assert service.knowledge is not None
        scoped = ScopedRetriever(service.knowledge.retriever, caller.tenant)

        async def ask(question: str, filters: dict[str, Any] | None) -> dict[str, Any]:
            return await ask_for(service, caller, question, filters)

        return Access(scoped, scoped.lookup, ask)

    return create_bound_mcp_server(
        access,
        "haygraph",
        host=service.settings.host,
        port=service.settings.port,
        stateless_http=True,
        json_response=True,
        streamable_http_path=MCP_PATH,
        transport_security=transport_security(service),
    )


def transport_security(service: HaygraphService) -> TransportSecuritySettings:
    """The SDK's Host/Origin check (against DNS rebinding): on only where no credential is needed.

    Without keys or tokens, `serve` listens on loopback only and a web page the user visits could reach it
    through a rebound name: then only loopback names may be the `Host` (421) and `Origin` (403). With keys
    or tokens a rebound page holds no credential, and a reverse proxy may pass on its own `Host`.
    """
    if service.keyring is not None or service.verifier is not None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    loopback = ["127.0.0.1", "localhost", "[::1]"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*loopback, *(f"{h}:*" for h in loopback)],
        allowed_origins=[
            f"{scheme}://{h}{port}" for scheme in ("http", "https") for h in loopback for port in ("", ":*")
        ],
    )


async def ask_for(
    service: HaygraphService, caller: Caller, question: str, filters: dict[str, Any] | None
) -> dict[str, Any]:
    """One `/v1/ask` turn for `caller` (no thread); its audit line; a service error as a tool error."""
    try:
        result = await ask_turn(service.turn(caller, question, filters=filters))
    except ServiceError as exc:
        _audit(
            service, caller, question, "refused" if exc.status_code < 500 else "failed", error=exc.error_type
        )
        raise ToolError(str(exc)) from None
    _audit(
        service,
        caller,
        question,
        str(result.get("status")),
        evidence_ids=list(result.get("evidence_ids") or []),
    )
    return result


def _audit(service: HaygraphService, caller: Caller, question: str, outcome: str, **fields: Any) -> None:
    if service.audit is not None:
        service.audit.record(
            "ask",
            actor=actor_of(caller),
            tenant=caller.tenant,
            outcome=outcome,
            via="mcp",
            question=question,  # kept only with --audit-questions
            **fields,
        )


def mount_mcp(app: FastAPI, service: HaygraphService) -> StreamableHTTPSessionManager:
    """Add the `/mcp` route to `app`; the returned session manager must run in the app's lifespan."""
    server = create_service_mcp_server(service)
    server.streamable_http_app()  # creates the session manager with the server's settings
    manager = server.session_manager
    # an ASGI app as the endpoint: Starlette hands it the request as is (every method; the SDK answers them)
    app.router.routes.append(Route(MCP_PATH, StreamableHTTPASGIApp(manager), include_in_schema=False))
    return manager


@contextlib.asynccontextmanager
async def running(manager: StreamableHTTPSessionManager | None) -> AsyncIterator[None]:
    """Run `manager` (its task group serves the MCP requests) for the app's lifetime; None: nothing."""
    if manager is None:
        yield
        return
    async with manager.run():
        yield
