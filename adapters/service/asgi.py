"""Small pieces shared by the service's pure-ASGI middleware (metrics, audit, tracing, keys, load control)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # `haygraph audit` and `serve --help` read this module without the web stack
    from starlette.types import Message, Scope, Send

TEMPLATE_CACHE = 4096

MCP_PATH = "/mcp"
"""Where `serve` answers MCP over Streamable HTTP (see `mcp_http`)."""


def is_api_path(path: str) -> bool:
    """Whether a path is the API: `/v1/...` or `/mcp` (authenticated, rate-limited, admitted as work)."""
    return path.startswith("/v1/") or path == MCP_PATH


class StatusRecorder:
    """An ASGI `send` that passes every message on and remembers the response's status code.

    `status` is 500 until the response starts, so a request whose app raised before answering counts
    as a server error.
    """

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status = 500

    async def __call__(self, message: Message) -> None:
        """Note the status of ``http.response.start``, then send `message` on."""
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        await self.send(message)


class RouteTemplates:
    """A request's route template (`/v1/jobs/{job_id}`, never the path with its ids), from the app's routes.

    Recent (method, path) pairs are cached, at most `TEMPLATE_CACHE` (matching every route costs ~50 µs).
    """

    def __init__(self, routes: Any) -> None:
        self.routes = routes
        """The app's router."""
        self._templates: dict[tuple[str, str], str] = {}

    def of(self, scope: Scope) -> str:
        """The template of the route `scope` matches; `unmatched` when none does."""
        key = (scope["method"], scope["path"])
        found = self._templates.get(key)
        if found is None:
            found = self._match(scope)
            if len(self._templates) >= TEMPLATE_CACHE:
                self._templates.clear()  # paths with ids are unbounded: start over rather than grow
            self._templates[key] = found
        return found

    def _match(self, scope: Scope) -> str:
        from starlette.routing import Match

        partial = None
        for route in self.routes.routes:
            match, _ = route.matches(scope)
            if match == Match.FULL:
                return str(getattr(route, "path", "other"))
            if match == Match.PARTIAL and partial is None:
                partial = str(getattr(route, "path", "other"))
        return partial or "unmatched"
