"""The FastAPI application: routes, API-key check, error shape, streaming responses.

Every error is `{"error": {"type": ..., "message": ...}}` with its status code: 400 (invalid JSON or
request, refused upload), 401 (API key or token), 403 (read-only key writing), 404 (route, thread, model,
source, job, evidence), 408 (body not received in time), 409 (conflict), 413 (body or file too
large), 422 (wrong types, missing or unknown fields), 429 (overloaded or rate-limited, with
`Retry-After`), 503 (not ready, shutting down, the store's or threads' database or the identity
provider's keys unavailable), 504 (deadline).
No stack trace ever reaches a client.
OpenAPI docs are served at `/docs`; the web page at `/` (its static files, `web/`, under `/assets/`).

Every response carries security headers (`SecurityHeadersMiddleware`): a strict
Content-Security-Policy (scripts, styles and connections from this origin only, no inline script,
`frame-ancestors 'none'`), `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Header, HTTPException, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.sse import EventSourceResponse, format_sse_event
from fastapi.staticfiles import StaticFiles
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from haygraph.adapters.service import mcp_http, metrics, openai_chat
from haygraph.adapters.service.admission import LoadControlMiddleware, RateLimitMiddleware
from haygraph.adapters.service.asgi import is_api_path
from haygraph.adapters.service.audit import AuditMiddleware
from haygraph.adapters.service.citations import locate_quote
from haygraph.adapters.service.documents import MAX_FILES_PER_UPLOAD, DocumentManager, UploadRefused
from haygraph.adapters.service.errors import (
    AuthenticationError,
    AuthUnavailableError,
    BadRequestError,
    DeadlineExceededError,
    ForbiddenError,
    InsufficientStorageError,
    NotReadyError,
    PayloadTooLargeError,
    ServiceError,
    ShuttingDownError,
    StoreUnavailableError,
    ThreadsUnavailableError,
    error_response,
)
from haygraph.adapters.service.keys import Caller
from haygraph.adapters.service.schemas import (
    AskRequest,
    AskResult,
    ConfirmRequest,
    ErrorResponse,
    EvidenceView,
    IndexJobView,
    RemovalView,
    SearchRequest,
    SearchResponse,
    SourceView,
    StatusView,
    ThreadSummary,
    ThreadView,
    UploadView,
    search_payload,
)
from haygraph.adapters.service.service import HaygraphService
from haygraph.adapters.service.tenancy import check_filters, merge_filters
from haygraph.adapters.service.turns import ask_turn, stream_turn
from haygraph.adapters.tracing import Tracing

logger = logging.getLogger(__name__)

_HTTP_TYPES = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}
_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse, "description": text}
    for code, text in (
        (400, "Invalid JSON or request"),
        (401, "Missing or invalid API key or token (the message says why)"),
        (403, "The API key is read-only"),
        (408, "The request body was not received in time"),
        (422, "Wrong types, missing or unknown fields"),
        (429, "Overloaded or rate-limited: retry after the Retry-After header's seconds"),
        (503, "Not ready, shutting down, a database or the identity provider's keys unavailable"),
        (504, "Deadline exceeded"),
        (507, "The server's disk is full: an upload was not saved, nothing changed"),
    )
}
WEB_DIR = Path(__file__).with_name("web")
"""The web page's static files (package data)."""

_PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
# FastAPI's /docs page loads Swagger UI from a CDN and starts it with an inline script: that page only.
_DOCS_CSP = (
    "default-src 'none'; script-src 'self' https://cdn.jsdelivr.net 'unsafe-inline'; "
    "style-src 'self' https://cdn.jsdelivr.net; img-src 'self' data: https://fastapi.tiangolo.com; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_DOCS_PATHS = frozenset({"/docs", "/docs/oauth2-redirect", "/redoc"})
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}
_MULTIPART_ALLOWANCE = 64 * 1024
"""Bytes a multipart upload may carry beyond the largest file (part headers, boundaries)."""
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
_SSE_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {"schema": {"type": "string"}}},
        "description": "Server-sent events",
    }
}


def _service_error(exc: ServiceError) -> JSONResponse:
    headers: dict[str, str] | None = None
    if isinstance(exc, AuthenticationError):
        invalid = str(exc).startswith("invalid token")
        headers = {"WWW-Authenticate": 'Bearer error="invalid_token"' if invalid else "Bearer"}
    elif isinstance(exc, ThreadsUnavailableError | StoreUnavailableError | AuthUnavailableError):
        headers = {"Retry-After": "5"}
    return error_response(exc.status_code, exc.error_type, str(exc), headers)


def _validation_message(exc: RequestValidationError) -> tuple[int, str, str]:
    errors = list(exc.errors())
    if any(e.get("type") == "json_invalid" for e in errors):
        detail = next(e for e in errors if e.get("type") == "json_invalid")
        reason = (detail.get("ctx") or {}).get("error", "")
        return 400, "invalid_json", f"request body is not valid JSON{f': {reason}' if reason else ''}"
    parts = []
    for e in errors:
        where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {e.get('msg')}")
    return 422, "invalid_request", "; ".join(parts)


class ApiKeyMiddleware:
    """Checks `Authorization: Bearer KEY` (or a JWT) on every `/v1/` route and `/mcp` before the body is read.

    401 otherwise, 503 `auth_unavailable` when the issuer's keys cannot be fetched. With `--auth oidc`
    and no `Authorization` header, an SSO proxy's `X-Forwarded-Access-Token` is the token (verified the
    same way: a forged header gains nothing).
    """

    def __init__(self, app: ASGIApp, service: HaygraphService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 for an API request without a valid key; otherwise record the caller in the scope."""
        if scope["type"] == "http" and is_api_path(scope["path"]):
            headers = Headers(scope=scope)
            authorization = headers.get("authorization")
            if authorization is None and self.service.verifier is not None:
                forwarded = headers.get("x-forwarded-access-token")  # an SSO proxy in front of the page
                authorization = f"Bearer {forwarded}" if forwarded else None
            try:
                caller = await self.service.authenticate_request(authorization)
            except (AuthenticationError, AuthUnavailableError) as exc:
                await _service_error(exc)(scope, receive, send)
                return
            scope.setdefault("state", {})["caller"] = caller  # also for the audit line of a refusal
            if not caller.write and is_document_write(scope["method"], scope["path"]):
                refused = ForbiddenError(
                    "this API key is read-only: it may not upload, re-index or remove documents"
                )
                await _service_error(refused)(scope, receive, send)  # before an upload is read
                return
        await self.app(scope, receive, send)


def is_document_write(method: str, path: str) -> bool:
    """Whether a request changes the documents (upload, re-index, remove): refused for read-only keys."""
    if not path.startswith("/v1/sources"):
        return False
    return method == "DELETE" or (method == "POST" and (path == "/v1/sources" or path.endswith("/reindex")))


class SecurityHeadersMiddleware:
    """Adds the security headers (see the module docstring) to every HTTP response, errors included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Set the headers on the response start message."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        csp = _DOCS_CSP if scope["path"] in _DOCS_PATHS else _PAGE_CSP

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["Content-Security-Policy"] = csp
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodySizeLimitMiddleware:
    """Refuses request bodies over `max_bytes` with 413 in the error shape (`upload_bytes` for uploads).

    Starlette's own `RequestBodyLimitMiddleware` replaces any response to an oversized request with
    a plain-text one, so this small middleware is used instead: a declared `Content-Length` over the
    limit is refused before the body is read; a chunked body is counted while it is read.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, upload_bytes: int | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.upload_bytes = upload_bytes

    @staticmethod
    def _too_large(limit: int) -> HTTPException:
        return HTTPException(413, f"request body is larger than the limit of {limit} bytes")

    def _limit(self, scope: Scope) -> int:
        if self.upload_bytes is not None and scope["method"] == "POST" and scope["path"] == "/v1/sources":
            return self.upload_bytes + _MULTIPART_ALLOWANCE
        return self.max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the declared length, then count the bytes actually received."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self._limit(scope)
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            exc = self._too_large(limit)
            await error_response(413, "request_too_large", str(exc.detail))(scope, receive, send)
            return
        received = 0

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._too_large(limit)  # FastAPI re-raises HTTPExceptions from body reading
            return message

        await self.app(scope, counting_receive, send)


_bearer = HTTPBearer(auto_error=False, description="An API key from the --api-keys file (none without it).")


def current_caller(
    request: Request, _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)] = None
) -> Caller:
    """The caller authenticated by `ApiKeyMiddleware` (declared with HTTPBearer for the OpenAPI docs)."""
    return request.state.caller  # type: ignore[no-any-return]


CallerDep = Annotated[Caller, Depends(current_caller)]


def _sse(kind: str | None, data: Any) -> bytes:
    return format_sse_event(
        event=kind, data_str=data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    )


def create_app(service: HaygraphService) -> FastAPI:
    """The ASGI app over `service` (started and closed by the app's lifespan)."""
    tracing = Tracing(content=service.settings.trace_content) if service.settings.tracing else None
    mcp_manager: Any = None  # the /mcp session manager (mount_mcp, below)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await service.start()
        if tracing is not None:
            tracing.start()
        try:
            async with mcp_http.running(mcp_manager):
                yield
        finally:  # uvicorn has let in-flight requests finish before this runs
            await service.close()
            if service.settings.metrics != "off":
                metrics.disable_component_timing()
            if tracing is not None:
                await asyncio.to_thread(tracing.close)  # exports the spans left

    app = FastAPI(
        title="haygraph",
        summary="Evidence-cited answers from your knowledge base: search, ask, stream, OpenAI chat.",
        version=_version(),
        lifespan=lifespan,
        responses=_ERRORS,
    )
    settings = service.settings
    app.add_middleware(
        LoadControlMiddleware,
        admission=service.admission,
        body_timeout_s=settings.body_timeout_s,
        send_timeout_s=settings.send_timeout_s,
    )
    app.add_middleware(RateLimitMiddleware, limiter=service.rate_limiter, stats=service.admission.stats)
    app.add_middleware(
        BodySizeLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        upload_bytes=settings.max_upload_bytes,
    )
    app.add_middleware(ApiKeyMiddleware, service=service)
    app.add_middleware(SecurityHeadersMiddleware)  # added last = runs first: every response has them
    if service.audit is not None:
        app.add_middleware(AuditMiddleware, audit=service.audit)  # outside the key check: sees 401s
    if settings.metrics != "off":
        metrics.SERVICE_COLLECTOR.bind(service)
        metrics.enable_component_timing()
        app.add_middleware(metrics.MetricsMiddleware, routes=app.router)  # outermost: counts every answer
    if tracing is not None:
        from haygraph.adapters.service.traces import TracingMiddleware

        app.add_middleware(TracingMiddleware, routes=app.router, tracing=tracing)  # around everything else
    _add_error_handlers(app)
    timeout = service.settings.request_timeout_s

    def ready() -> None:
        service.check_ready()

    @app.get("/healthz", tags=["health"], summary="Liveness: the process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get(
        "/readyz",
        tags=["health"],
        summary="Readiness: store loaded and reachable, model warm, threads database reachable",
        description="503 with the reason (`not_ready`, `shutting_down`, `store_unavailable`, "
        "`threads_unavailable`) while requests cannot be served; 200 with the counters otherwise. "
        "Each call runs `SELECT 1` on the store's and the threads' PostgreSQL pools, when they are used.",
    )
    async def readyz() -> dict[str, Any]:
        if service.draining:
            raise ShuttingDownError("the service is shutting down: send new requests elsewhere")
        ready()
        await service.check_dependencies()
        assert service.knowledge is not None
        snap = service.knowledge.current
        return {
            "status": "ready",
            "store_version": snap.version,
            "documents": snap.documents,
            "reloads": service.knowledge.reloads,
            "model": service.settings.model
            or ("custom" if service.base_context and service.base_context.chat_model else "offline"),
            "threads": service.settings.threads_backend,
            "active_runs": service.runs.active,
            "load": {
                "in_flight": service.admission.stats.in_flight,
                "max_in_flight": service.admission.max_in_flight,
                "waiting": service.admission.stats.waiting,
                "max_queue": service.admission.max_queue,
                "rejected": service.admission.stats.rejected,
                "rate_limited": service.admission.stats.rate_limited,
            },
        }

    if settings.metrics != "off":

        @app.get(
            "/metrics",
            tags=["health"],
            summary="Prometheus metrics (text format)",
            description="Served with `--metrics loopback` to 127.0.0.1 / ::1 clients, with `--metrics key` "
            "to `Authorization: Bearer $HAYGRAPH_METRICS_KEY`; 403 / 401 otherwise. See docs/operations.md.",
            response_class=Response,
        )
        async def metrics_route(request: Request) -> Response:
            client = request.client.host if request.client is not None else None
            refused = metrics.check_access(settings.metrics, client, request.headers.get("authorization"))
            if refused is not None:
                if settings.metrics == "key":
                    raise AuthenticationError(refused)
                raise ForbiddenError(refused)
            body, content_type = await asyncio.to_thread(metrics.exposition)
            return Response(body, media_type=content_type)

    @app.get("/v1/models", tags=["openai"], summary="The one model served: haygraph")
    async def models(_caller: CallerDep) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [{"id": openai_chat.MODEL_ID, "object": "model", "created": 0, "owned_by": "haygraph"}],
        }

    @app.post("/v1/search", response_model=SearchResponse, tags=["knowledge base"], summary="Ranked chunks")
    async def search(body: SearchRequest, caller: CallerDep) -> dict[str, Any]:
        ready()
        assert service.knowledge is not None
        filters = merge_filters(caller.tenant, check_filters(body.filters))
        work = asyncio.to_thread(
            service.knowledge.search, body.query, top_k=body.top_k, mode=body.mode, filters=filters
        )
        try:
            result = await asyncio.wait_for(work, timeout)
        except TimeoutError as exc:
            raise DeadlineExceededError(f"the search took longer than the {timeout:g} s deadline") from exc
        return search_payload(result)

    @app.post(
        "/v1/ask", response_model=AskResult, tags=["agent"], summary="Answer one turn with cited evidence"
    )
    async def ask(body: AskRequest, caller: CallerDep, request: Request) -> dict[str, Any]:
        ready()
        turn = service.turn(
            caller, body.question, thread_id=body.thread_id, filters=check_filters(body.filters)
        )
        result = await ask_turn(turn)
        audit_ask(request, result, body.question, body.thread_id)
        return result

    @app.post(
        "/v1/ask/stream",
        response_class=Response,  # a streamed EventSourceResponse is returned as is
        responses=_SSE_DOC,
        tags=["agent"],
        summary="Answer one turn as server-sent events: progress, token, result (or error)",
    )
    async def ask_stream(body: AskRequest, caller: CallerDep, request: Request) -> EventSourceResponse:
        ready()
        turn = service.turn(
            caller, body.question, thread_id=body.thread_id, filters=check_filters(body.filters)
        )

        async def events() -> AsyncIterator[bytes]:
            async for event in stream_turn(turn):
                if event.kind in ("result", "error"):
                    audit_ask(request, event.data, body.question, body.thread_id)
                yield _sse(event.kind, event.data)

        return EventSourceResponse(events(), headers=_SSE_HEADERS)

    @app.post(
        "/v1/chat/completions",
        responses=_SSE_DOC,
        tags=["openai"],
        summary="OpenAI-compatible chat completions (model haygraph); `stream: true` sends SSE chunks",
    )
    async def chat_completions(
        body: openai_chat.ChatCompletionRequest,
        caller: CallerDep,
        request: Request,
        x_thread_id: Annotated[str | None, Header()] = None,
    ) -> Any:
        ready()
        question, history = openai_chat.question_and_history(body)
        turn = service.turn(
            caller,
            question,
            thread_id=x_thread_id or body.user,
            filters=check_filters(body.filters),
            history=history,
        )
        thread = x_thread_id or body.user
        if not body.stream:
            result = await ask_turn(turn)
            audit_ask(request, result, question, thread)
            return openai_chat.completion(result)
        return EventSourceResponse(
            _chat_events(turn, lambda data: audit_ask(request, data, question, thread)), headers=_SSE_HEADERS
        )

    @app.get(
        "/v1/threads/{thread_id}",
        response_model=ThreadView,
        tags=["agent"],
        summary="What a thread remembers",
    )
    async def thread(thread_id: str, caller: CallerDep) -> dict[str, Any]:
        ready()
        return await service.thread(caller, thread_id)

    @app.post(
        "/v1/threads/{thread_id}/confirm",
        response_model=AskResult,
        tags=["agent"],
        summary="Approve or deny the side-effect tool calls a needs_confirmation turn waits for",
    )
    async def confirm(
        thread_id: str, body: ConfirmRequest, caller: CallerDep, request: Request
    ) -> dict[str, Any]:
        ready()
        result = await ask_turn(await service.confirmation(caller, thread_id, approve=body.approve))
        request.state.audit = {"outcome": result.get("status"), "approve": body.approve}
        return result

    _add_web_routes(app, service)
    mcp_manager = mcp_http.mount_mcp(app, service)  # MCP over Streamable HTTP at /mcp

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    app.mount("/assets", StaticFiles(directory=WEB_DIR), name="assets")
    return app


def _documents(service: HaygraphService) -> DocumentManager:
    if service.documents is None:
        raise NotReadyError("the service is not ready: the store is still loading")
    return service.documents


def _add_web_routes(app: FastAPI, service: HaygraphService) -> None:
    """The endpoints behind the web page: threads, evidence, status, sources, uploads and indexing jobs."""
    tags: list[str | Enum] = ["documents"]

    @app.get(
        "/v1/threads", response_model=list[ThreadSummary], tags=["agent"], summary="The caller's threads"
    )
    async def threads(
        caller: CallerDep, limit: Annotated[int, Query(ge=1, le=200, description="At most this many")] = 50
    ) -> list[dict[str, Any]]:
        return await service.threads(caller, limit=limit)

    @app.get(
        "/v1/evidence/{chunk_id:path}",
        response_model=EvidenceView,
        tags=["knowledge base"],
        summary="One stored chunk the key may see, the quote (else the answer span) highlighted",
    )
    async def evidence(
        chunk_id: str,
        caller: CallerDep,
        quote: Annotated[
            str | None, Query(max_length=4000, description="Text an answer quoted from this chunk")
        ] = None,
        start: Annotated[
            int | None, Query(ge=0, le=10_000_000, description="An answer span's first offset (with end)")
        ] = None,
        end: Annotated[
            int | None, Query(ge=0, le=10_000_000, description="Offset just past the span (with start)")
        ] = None,
    ) -> dict[str, Any]:
        found = service.evidence(caller, chunk_id)
        span: tuple[int, int] | None = None
        if quote:  # the cited text first: what the answer quotes from this chunk
            span = await asyncio.to_thread(locate_quote, found["text"], quote)
        if span is None and start is not None and end is not None and start < end <= len(found["text"]):
            span = (start, end)  # else the reader's span (`answer_spans`): offsets into this chunk's text
        found["highlight"] = (
            None if span is None else {"start": span[0], "end": span[1], "page": _page_at(found, span[0])}
        )
        return found

    @app.get("/v1/status", response_model=StatusView, tags=["health"], summary="Store, models and the key")
    async def status(caller: CallerDep) -> dict[str, Any]:
        return service.status(caller)

    @app.get("/v1/sources", response_model=list[SourceView], tags=tags, summary="The key's documents")
    async def sources(caller: CallerDep) -> list[dict[str, Any]]:
        return await asyncio.to_thread(_documents(service).sources, caller)

    @app.post(
        "/v1/sources",
        status_code=202,
        response_model=UploadView,
        tags=tags,
        summary="Upload documents (multipart `files`) or add a website (`url`), indexed by a background job",
        description="Every format `haygraph index` reads. Each refused file (type, name, size, zip bomb) "
        "is listed with its reason; the others are indexed by the job whose status is "
        "`GET /v1/jobs/{job_id}`. 400 when no file is accepted, 413 when the request is larger than "
        "`--max-upload-bytes`, 403 for a read-only key, 507 when the server's disk is full (nothing "
        "changed; upload again once space is freed). With the form field `url` instead of files, the "
        "job crawls that website (a page, a sitemap or a site root) into the key's tenant, within the "
        "operator's limits; posting the same URL again re-syncs it. 400 for a URL that is not http(s), "
        "or whose host is loopback or private while the operator has not allowed such hosts.",
    )
    async def upload(
        caller: CallerDep,
        request: Request,
        files: Annotated[
            list[UploadFile] | None, File(description="The documents to upload and index")
        ] = None,
        url: Annotated[
            str | None,
            Form(max_length=2000, description="A website to crawl and index (instead of files)"),
        ] = None,
    ) -> dict[str, Any]:
        documents = _documents(service)
        if url is not None:
            return await _add_site(documents, caller, request, url, files)
        files = files or []
        request.state.audit = {"object": [str(f.filename or "") for f in files][:MAX_FILES_PER_UPLOAD]}
        documents.check_write(caller)
        if not files:  # as a missing required field was before `url` existed: 422
            missing = "Field required (documents as multipart `files`, or a website as the form field `url`)"
            raise RequestValidationError([{"type": "missing", "loc": ("body", "files"), "msg": missing}])
        if len(files) > MAX_FILES_PER_UPLOAD:
            raise BadRequestError(f"at most {MAX_FILES_PER_UPLOAD} files per upload, got {len(files)}")
        results: list[dict[str, Any]] = []
        accepted: list[Path] = []
        too_large = no_space = 0
        for upload in files:
            try:
                path = await asyncio.to_thread(
                    documents.save_upload, caller, upload.filename, upload.file, upload.size
                )
            except UploadRefused as exc:
                too_large += exc.too_large
                no_space += exc.no_space
                results.append({"name": str(upload.filename or ""), "accepted": False, "error": str(exc)})
                continue
            finally:
                await upload.close()
            accepted.append(path)
            results.append({"name": path.name, "accepted": True, "error": None})
        if not accepted:
            message = "; ".join(r["error"] for r in results) or "no file was uploaded"
            if no_space == len(files):
                raise InsufficientStorageError(message)
            raise PayloadTooLargeError(message) if too_large == len(files) else BadRequestError(message)
        job = documents.start_indexing(caller, accepted)
        request.state.audit = {
            "outcome": "accepted",
            "object": [r["name"] for r in results if r["accepted"]],
            "refused_files": [r["name"] for r in results if not r["accepted"]] or None,
            "job": job.id,
        }
        return {"job": job.to_json(), "files": results}

    @app.get(
        "/v1/jobs/{job_id}", response_model=IndexJobView, tags=tags, summary="An indexing job's progress"
    )
    async def job(job_id: str, caller: CallerDep) -> dict[str, Any]:
        return _documents(service).job(caller, job_id).to_json()

    @app.delete(
        "/v1/sources/{source_id:path}",
        response_model=RemovalView,
        tags=tags,
        summary="Remove a document (all its chunks, and its uploaded file)",
    )
    async def remove(source_id: str, caller: CallerDep, request: Request) -> dict[str, Any]:
        documents = _documents(service)
        documents.check_write(caller)
        removed = await asyncio.to_thread(documents.remove, caller, source_id)
        request.state.audit = {"outcome": "removed", "chunks": removed.get("chunks")}
        return removed

    @app.post(
        "/v1/sources/{source_id:path}/reindex",
        status_code=202,
        response_model=IndexJobView,
        tags=tags,
        summary="Index an uploaded document again, or re-sync a web page's site (a background job)",
    )
    async def reindex(source_id: str, caller: CallerDep, request: Request) -> dict[str, Any]:
        documents = _documents(service)
        documents.check_write(caller)
        job = documents.reindex(caller, source_id)
        request.state.audit = {"outcome": "accepted", "job": job.id}
        return job.to_json()


async def _add_site(
    documents: DocumentManager, caller: Caller, request: Request, url: str, files: list[UploadFile] | None
) -> dict[str, Any]:
    """`POST /v1/sources` with `url`: check it (scheme, host, address) and queue the crawl's job."""
    request.state.audit = {"action": "site", "object": [url[:300]]}
    documents.check_write(caller)
    if files:
        raise BadRequestError("send either files or a website `url`, not both")
    try:
        site = await asyncio.to_thread(documents.check_site, url)
    except UploadRefused as exc:
        raise BadRequestError(str(exc)) from exc
    job = documents.start_site(caller, site)
    request.state.audit = {"action": "site", "outcome": "accepted", "object": [site], "job": job.id}
    return {"job": job.to_json(), "files": [], "site": site}


def audit_ask(request: Request, result: dict[str, Any], question: str, thread_id: str | None) -> None:
    """Note an ask's outcome for its audit line (`AuditMiddleware`).

    Its status and evidence ids and the question (kept only with `--audit-questions`), or the error type
    of a stream that ended in one.
    """
    if "error" in result:
        request.state.audit = {"outcome": result["error"].get("type"), "thread": thread_id}
        return
    request.state.audit = {
        "outcome": result.get("status"),
        "evidence_ids": list(result.get("evidence_ids") or []),
        "thread": thread_id,
        "question": question,
    }


async def _chat_events(turn: Any, on_result: Any = None) -> AsyncIterator[bytes]:
    """The OpenAI streaming format: role chunk, content chunks, a final chunk with the result, [DONE]."""
    cid, created = openai_chat.new_completion_id(), int(time.time())
    yield _sse(None, openai_chat.chunk(cid, created, {"role": "assistant", "content": ""}))
    streamed = ""
    async for event in stream_turn(turn):
        if event.kind == "token":
            streamed += event.data["text"]
            yield _sse(None, openai_chat.chunk(cid, created, {"content": event.data["text"]}))
        elif event.kind == "result":
            result = event.data
            if on_result is not None:
                on_result(result)
            if result.get("status") == "rejected":
                tail = f"\n\n{openai_chat.REJECTED_TEXT}" if streamed else openai_chat.REJECTED_TEXT
            else:
                tail = openai_chat.citation_suffix(
                    result.get("answer") or "", list(result.get("evidence_ids") or [])
                )
            if tail:
                yield _sse(None, openai_chat.chunk(cid, created, {"content": tail}))
            yield _sse(
                None,
                openai_chat.chunk(cid, created, {}, finish=openai_chat.finish_reason(result), result=result),
            )
        elif event.kind == "error":
            if on_result is not None:
                on_result(event.data)
            yield _sse(None, event.data)
            return
    yield _sse(None, "[DONE]")


def _add_error_handlers(app: FastAPI) -> None:
    from haygraph.retrieval.errors import QueryError, StoreError

    @app.exception_handler(ServiceError)
    async def on_service_error(_request: Request, exc: ServiceError) -> JSONResponse:
        return _service_error(exc)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        status, kind, message = _validation_message(exc)
        return error_response(status, kind, message)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            message = f"no route {request.method} {request.url.path}; see /docs"
        else:
            message = str(exc.detail)
        return error_response(
            exc.status_code, _HTTP_TYPES.get(exc.status_code, "http_error"), message, exc.headers
        )

    @app.exception_handler(QueryError)
    async def on_query_error(_request: Request, exc: QueryError) -> JSONResponse:
        return _service_error(BadRequestError(" ".join(str(exc).split())))

    @app.exception_handler(StoreError)
    async def on_store_error(request: Request, exc: StoreError) -> JSONResponse:
        # the detail names the database server: it goes to the log, not to the client
        logger.warning("store failure on %s %s: %s", request.method, request.url.path, exc)
        metrics.set_database_up("store", False)
        return _service_error(
            StoreUnavailableError("the knowledge base's store is unavailable right now; retry shortly")
        )

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("unexpected failure on %s %s", request.method, request.url.path, exc_info=exc)
        return error_response(
            500, "internal_error", f"unexpected failure ({type(exc).__name__}); see the server log"
        )


def _version() -> str:
    from haygraph import __version__

    return str(__version__)


def _page_at(found: dict[str, Any], offset: int) -> int | None:
    """The page of `offset` in a `Service.evidence` chunk: its page, or a later one from its page breaks."""
    page = found.get("page")
    for at, number in found.get("page_breaks") or []:
        if at <= offset:
            page = number
    return page if isinstance(page, int) else None
