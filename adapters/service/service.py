"""`HaygraphService`: the long-lived state behind the HTTP API — store, model, graphs, threads, keys.

Loaded once per process: the knowledge base (warmed up, reloaded when the store changes), the chat
model (or offline mode), the tool executors and the thread checkpointer. Each request gets its own
`Context` (a `dataclasses.replace` of the base one) carrying the caller's tenant-scoped retriever,
its filters and its tool allow-list; nothing per-request is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.types import Command

from haygraph.adapters.evidence_reader import evidence_reader
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import DEFAULT_ALLOW_LIST, build_example_registry
from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.meaning_encoder import default_meaning_encoder
from haygraph.adapters.service.admission import Admission, RateLimiter
from haygraph.adapters.service.audit import AuditLog
from haygraph.adapters.service.documents import UPLOADS_DIR, DocumentManager
from haygraph.adapters.service.errors import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    NotReadyError,
    ServiceConfigError,
    StoreUnavailableError,
    ThreadsUnavailableError,
)
from haygraph.adapters.service.keys import ANONYMOUS, Caller, KeyRing, load_api_keys
from haygraph.adapters.service.metrics import set_database_up
from haygraph.adapters.service.oidc import TokenVerifier, load_oidc_settings, looks_like_jwt
from haygraph.adapters.service.settings import ServiceSettings
from haygraph.adapters.service.tenancy import ScopedRetriever, thread_key
from haygraph.adapters.service.threads import (
    describe_threads_db,
    open_checkpointer,
    ping_threads,
    threads_unavailable,
)
from haygraph.adapters.service.turns import RunCounter, TurnRequest
from haygraph.adapters.tenancy import SHARED_TENANT
from haygraph.control import Context, build_graph, result_from_state
from haygraph.control.api import pending_confirmation
from haygraph.control.planning import meaning
from haygraph.control.planning.decision.model import shipped_model
from haygraph.control.texts import Bilingual
from haygraph.control.tools import ContractToolExecutor

logger = logging.getLogger(__name__)

NO_DOCUMENTS_FOR_KEY = Bilingual(
    en="This API key (tenant {tenant}) can see no documents in the knowledge base, so nothing can be "
    "answered. Ask the service's operator to index documents for this tenant (--meta tenant={tenant}) "
    "or shared by every tenant (--meta tenant=*).",
    zh="此 API 密钥（租户 {tenant}）在知识库中看不到任何文档，因此无法回答。请联系服务管理员为该租户索引文档"
    "（--meta tenant={tenant}），或索引所有租户共享的文档（--meta tenant=*）。",
)
"""The refusal of a key that sees no documents (instead of "could not find evidence")."""


_PROBES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="haygraph-ready")
"""Threads of the store's readiness probe (`check_dependencies`), apart from the default executor."""
PROBE_DEADLINE_S = 3.0
"""Longest a readiness probe of the store waits (the ping's own connection wait is 2 s)."""

WARM_QUESTIONS = ("How many days of annual leave do I get?", "年假有几天？")
"""Asked once at start-up (one English, one Chinese), answers discarded: see `HaygraphService._warm_turns`."""


def settle_memory() -> None:
    """Collect garbage once, then move every object that survived out of the collector's sight.

    Everything loaded so far (the store, the models, the compiled graphs) lives as long as the process
    or its store version does; without `gc.freeze()` every full collection walks all of it again — ~90
    ms with the event loop stopped, several times a minute under load (measured on the handbook store),
    which is what a 429 or a `/readyz` probe then waits for. After a store reload see `MemorySettler`.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class MemorySettler:
    """After a store reload: unfreeze at once, settle again once the replaced version can be gone.

    Turns that started on the replaced version keep it (they are pinned to it) until they end, at the
    latest at the request deadline; freezing while they run would keep whatever of it sits in reference
    cycles for good. So a reload unfreezes everything (the collector may reclaim the old version as soon
    as it is garbage) and `settle_memory` runs `delay_s` later, in a timer thread; a further reload
    before then restarts the wait.
    """

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def __call__(self) -> None:
        """A new store version serves (called in the reloading thread)."""
        gc.unfreeze()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.delay_s, settle_memory)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """Drop a pending settle (the service is closing)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


class HaygraphService:
    """The loaded state: `load()` (sync, fail-fast), then `start()` / `close()` in the server loop."""

    def __init__(self, settings: ServiceSettings, *, model: BaseChatModel | None = None) -> None:
        """`model` overrides `settings.model` with a chat-model object (tests, embedding applications)."""
        self.settings = settings
        self.keyring: KeyRing | None = load_api_keys(settings.api_keys) if settings.api_keys else None
        self.verifier: TokenVerifier | None = (
            TokenVerifier(load_oidc_settings(settings.oidc_config)) if settings.oidc_config else None
        )
        """Verifies identity-provider JWTs (`--auth oidc`); None: API keys only."""
        self.audit: AuditLog | None = (
            AuditLog(settings.audit_log, questions=settings.audit_questions) if settings.audit_log else None
        )
        """The audit trail (`--audit-log`); None: none."""
        self.knowledge: LiveKnowledgeBase | None = None
        self.documents: DocumentManager | None = None
        """Sources, uploads and indexing jobs (see `documents.py`)."""
        self.base_context: Context | None = None
        self.graph: Any = None
        """The graph with the thread checkpointer (requests naming a thread)."""
        self.stateless_graph: Any = None
        """The same graph without a checkpointer (requests without a thread: nothing is stored)."""
        self.runs = RunCounter()
        """Graph runs in flight (a cancelled run counts until its task has actually ended)."""
        self.admission = Admission(settings.in_flight_limit, settings.queue_limit, settings.queue_timeout_s)
        """Slots for working requests and their bounded queue (see `admission`)."""
        self.rate_limiter = RateLimiter()
        """Per-key token buckets (`requests_per_minute` in the keys file)."""
        self._settler = MemorySettler(settings.request_timeout_s + 5.0)
        """Re-freezes memory once a replaced store version's turns have ended (see `settle_memory`)."""
        self.draining = False
        """Set on SIGTERM: `/readyz` answers 503 so a load balancer stops routing here (see `shutdown`)."""
        self.stopping = asyncio.Event()
        """Set when the shutdown grace has passed: running turns stop (503 / a final `error` event)."""
        self._model = model
        self._orders: OrdersDatabase | None = None
        self._executors: dict[tuple[str | None, tuple[str, ...]], ContractToolExecutor] = {}
        self._stack: contextlib.AsyncExitStack | None = None
        self._watcher: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        """Whether the model is loaded and the store opened (a new, empty store counts: uploads fill it)."""
        return self.base_context is not None and self.knowledge is not None

    @property
    def ready(self) -> bool:
        """Whether questions can be answered (loaded, the store holds documents, the thread store open)."""
        return self.loaded and self.graph is not None and self.knowledge is not None and self.knowledge.ready

    def check_ready(self) -> None:
        """`NotReadyError` saying why questions cannot be answered yet."""
        if self.loaded and self.graph is not None and self.knowledge is not None and not self.knowledge.ready:
            raise NotReadyError(
                "the store holds no documents yet: upload some on the page or with POST /v1/sources"
            )
        if not self.ready:
            raise NotReadyError("the service is not ready: the store or the model is still loading")

    async def check_dependencies(self) -> None:
        """Reach the databases the service needs now: the store's PostgreSQL, the threads' PostgreSQL.

        One ``SELECT 1`` on each pool (the readiness probe). An embedded or Qdrant store and memory or
        SQLite threads have nothing to reach. The probe also gets the pools reconnecting after an outage.

        Raises:
            StoreUnavailableError: the store's database cannot be reached (the detail goes to the log only).
            ThreadsUnavailableError: the threads database cannot be reached.

        """
        from haygraph.retrieval.errors import StoreError

        config = self.knowledge.config if self.knowledge is not None else None
        if config is not None and config.store.backend == "postgres":
            from haygraph.retrieval.postgres.retrieval import ping

            try:  # its own threads: a probe never queues behind the requests' work in the default pool
                probe = asyncio.get_running_loop().run_in_executor(_PROBES, ping, config.store)
                await asyncio.wait_for(probe, PROBE_DEADLINE_S)  # a black-holed server cannot hang it
            except (StoreError, TimeoutError) as exc:
                set_database_up("store", False)
                logger.warning("readiness: the store cannot be reached: %s", exc)
                raise StoreUnavailableError(
                    "the knowledge base's store (PostgreSQL) cannot be reached; requests that need it "
                    "answer 503 until it is back"
                ) from exc
            set_database_up("store", True)
        if self.settings.threads_backend == "postgres" and self.graph is not None:
            try:
                await ping_threads(self.graph.checkpointer)
            except ThreadsUnavailableError:
                set_database_up("threads", False)
                raise
            set_database_up("threads", True)

    def pool_stats(self) -> dict[str, dict[str, int]]:
        """The PostgreSQL pools' counters (`psycopg_pool` names), `store` and `threads` where used."""
        out: dict[str, dict[str, int]] = {}
        config = self.knowledge.config if self.knowledge is not None else None
        if config is not None and config.store.backend == "postgres":
            from haygraph.retrieval.postgres.retrieval import pool_stats

            out["store"] = pool_stats()
        pool: Any = getattr(self.graph.checkpointer, "conn", None) if self.graph is not None else None
        if self.settings.threads_backend == "postgres" and pool is not None and hasattr(pool, "get_stats"):
            out["threads"] = {k: int(v) for k, v in pool.get_stats().items()}
        return out

    def load(self) -> None:
        """Load the model and the store and warm both up (raises clear config/store errors)."""
        from haygraph.retrieval import RetrievalConfig

        given = self.settings.config
        config = RetrievalConfig.from_file(given) if isinstance(given, Path) else given
        context = Context(model=self._model if self._model is not None else self.settings.model)
        context.counter.count("warm up")  # loads the budget's tokenizer now, not on the first request
        knowledge = LiveKnowledgeBase(
            self.settings.store_dir,
            config=config,
            warm_top_ks=sorted({context.retrieval_depth(), context.expand_top_k, 5}),
            on_reload=self._settler,
        )
        settings = config or RetrievalConfig()
        if self._store_is_new(config):
            logger.info("store %s holds no documents yet: upload some", self.settings.store_dir)
        else:
            settings = knowledge.load().kb.config
        # the reader and the decision as build_agent's: the store's (or --config's) query.reader
        context.reader = evidence_reader(settings.query.reader)
        context.answerability = shipped_model(default_meaning_encoder(), reader=context.reader is not None)
        if self.settings.example_tools:
            orders = self.settings.orders_db or Path(self.settings.store_dir) / "orders.sqlite"
            self._orders = OrdersDatabase(orders)
        self.knowledge, self.base_context = knowledge, context
        self.documents = DocumentManager(
            knowledge, max_upload_bytes=self.settings.max_upload_bytes, crawl=self._crawl_settings()
        )
        self.documents.audit = self.audit
        self._check_key_tools()

    def _crawl_settings(self) -> Any:
        """The operator's limits for websites posted to `/v1/sources` and their re-syncs."""
        from haygraph.retrieval.web_sources import CrawlSettings

        return CrawlSettings(
            max_pages=self.settings.crawl_max_pages,
            delay=self.settings.crawl_delay_s,
            allow_private_hosts=self.settings.allow_private_hosts,
        )

    def _store_is_new(self, config: Any) -> bool:
        """An existing, empty store directory (not a damaged store): it fills with uploaded documents."""
        from haygraph.retrieval.store import store_exists

        if config is not None and config.store.backend == "qdrant":
            return False
        if config is not None and config.store.backend == "postgres":
            from haygraph.retrieval.postgres.connection import store_version

            return store_version(config.store) is None  # no store in the database yet: uploads create it
        root = Path(self.settings.store_dir)
        if store_exists(root) or not root.is_dir():
            return False  # a missing directory stays an error (a mistyped --store), named by the store
        return all(p.name in (UPLOADS_DIR, ".lock") for p in root.iterdir())

    def _check_key_tools(self) -> None:
        """Every tool an API key is granted must exist (with `--example-tools`); a typo is an error."""
        granted = {t for g in self.keyring.grants for t in g.tools or ()} if self.keyring else set()
        if not granted or self.knowledge is None:
            return
        if self._orders is None:
            logger.warning("API keys grant tools, but the service runs without --example-tools: no tools")
            return
        registry = build_example_registry(self._orders, ScopedRetriever(self.knowledge.retriever, None))
        known = {c.name for c in registry}
        unknown = sorted(granted - known)
        if unknown:
            raise ServiceConfigError(
                f"--api-keys grants unknown tool(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
            )

    async def start(self) -> None:
        """Open the thread store, compile the graphs and start watching the store (in the server loop)."""
        if not self.loaded:
            await asyncio.to_thread(self.load)
        self._stack = contextlib.AsyncExitStack()
        checkpointer = await self._stack.enter_async_context(open_checkpointer(self.settings.threads_db))
        self.graph = build_graph(checkpointer=checkpointer)
        self.stateless_graph = build_graph()
        if self.settings.reload_interval_s > 0 and self.knowledge is not None:
            self._watcher = asyncio.create_task(self.knowledge.watch(self.settings.reload_interval_s))
        if self.settings.resync_every_s is not None and self.documents is not None:
            self.documents.start_schedule(self.settings.resync_every_s)
            logger.info("websites are re-synced every %.0f s", self.settings.resync_every_s)
        logger.info("threads: %s", describe_threads_db(self.settings.threads_db))
        await self._warm_turns()
        settle_memory()

    async def _warm_turns(self) -> None:
        """Answer `WARM_QUESTIONS` once, discarding the results, before the port opens.

        The turns run offline (rule-based routing, extractive answers): they never call the configured
        chat model. What the first real turns would otherwise load in the middle of serving — jieba's
        dictionary and part-of-speech tables (long unmarshals holding the interpreter lock), the
        answerability weights, the query encoder's session, each graph node's first call — loads here,
        so neither the first askers nor the event loop (which answers 429s and `/readyz` meanwhile)
        wait for it. A failure is logged, not raised: the same fault would surface, with its own error,
        on the first request.
        """
        if self.knowledge is None or not self.knowledge.ready or self.stateless_graph is None:
            return
        start = time.perf_counter()
        try:
            await asyncio.to_thread(meaning.warm_up)
            # offline (no chat model): a warm-up must not spend the operator's model calls
            context = dataclasses.replace(self.context_for(ANONYMOUS, None), model=None)
            for question in WARM_QUESTIONS:
                await self.stateless_graph.ainvoke({"question": question}, context=context, config={})
        except Exception as exc:  # the service still starts: requests report the fault themselves
            logger.warning("warm-up turn failed: %s: %s", type(exc).__name__, exc)
            return
        logger.info("warm-up turns answered in %.1f s", time.perf_counter() - start)

    async def close(self) -> None:
        """Stop watching the store and flush/close the thread store."""
        self.graph = None
        self._settler.cancel()
        if self.documents is not None:
            self.documents.close()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watcher
            self._watcher = None
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None
        if self.audit is not None:
            self.audit.close()

    def stop_turns(self) -> None:
        """End every running turn now (the shutdown grace has passed): asks get 503, streams a final event."""
        self.stopping.set()

    # -- callers ---------------------------------------------------------------------------------
    def authenticate(self, authorization: str | None) -> Caller:
        """The caller behind an `Authorization` header (anyone, without `--api-keys`)."""
        if self.verifier is None:
            return ANONYMOUS if self.keyring is None else self.keyring.authenticate(authorization)
        scheme, _, token = (authorization or "").strip().partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and looks_like_jwt(token):
            return self.verifier.authenticate(token)  # a failing token never falls back to the keys
        if self.keyring is None:
            raise AuthenticationError(
                "missing token: send 'Authorization: Bearer <JWT>' from the identity provider"
                if not token
                else "invalid token: this service accepts the identity provider's JWTs only"
            )
        return self.keyring.authenticate(authorization)

    async def authenticate_request(self, authorization: str | None) -> Caller:
        """`authenticate`, off the event loop when a token may need the issuer's keys fetched."""
        if self.verifier is None:
            return self.authenticate(authorization)
        return await asyncio.to_thread(self.authenticate, authorization)

    def _executor(self, caller: Caller, retriever: ScopedRetriever) -> ContractToolExecutor | None:
        if self._orders is None:
            return None
        tools = tuple(caller.tools) if caller.tools is not None else DEFAULT_ALLOW_LIST
        key = (caller.tenant, tools)
        if key not in self._executors:  # the knowledge-search tool is bound to the tenant's retriever
            registry = build_example_registry(self._orders, retriever)
            self._executors[key] = ContractToolExecutor(registry, list(tools), max_calls_per_turn=2)
        return self._executors[key]

    def context_for(self, caller: Caller, filters: dict[str, Any] | None) -> Context:
        """The per-request `Context`: tenant-scoped retriever, the request's filters, the caller's tools."""
        self.check_ready()
        assert self.base_context is not None and self.knowledge is not None
        # The turn keeps the store version it started on (a reload swaps it for the next turns only);
        # the cached tool executors follow the current version.
        pinned = ScopedRetriever(self.knowledge.current.retriever, caller.tenant)
        executor = self._executor(caller, ScopedRetriever(self.knowledge.retriever, caller.tenant))
        return dataclasses.replace(
            self.base_context,
            retriever=pinned,
            filters=filters,
            tool_executor=executor,
            tool_registry=executor.registry if executor else None,
            tool_allow_list=tuple(executor.allow_list) if executor else None,
        )

    def turn(
        self,
        caller: Caller,
        question: str,
        *,
        thread_id: str | None = None,
        filters: dict[str, Any] | None = None,
        history: list[Any] | None = None,
    ) -> TurnRequest:
        """Prepare one validated turn (nothing runs or is stored yet) for `ask_turn` / `stream_turn`."""
        key = thread_key(caller.tenant, thread_id) if thread_id is not None else None
        context = self.context_for(caller, filters)
        inputs: dict[str, Any] = {"question": question}
        if history and key is None:
            inputs["messages"] = history  # a stateless chat brings its own earlier turns
        return TurnRequest(
            graph=self.graph if key else self.stateless_graph,
            inputs=inputs,
            context=context,
            thread_key=key,
            timeout_s=self.settings.request_timeout_s,
            runs=self.runs,
            stop=self.stopping,
            fallback_graph=self.stateless_graph,
            no_documents=self.no_documents_message(caller, question),
        )

    def no_documents_message(self, caller: Caller, question: str) -> str | None:
        """The refusal for a tenant-bound key that can read no chunk at all (None: it can read some)."""
        if caller.tenant is None or self.documents is None or not self.knowledge or not self.knowledge.ready:
            return None
        if self.documents.visible_chunks(caller.tenant) > 0:
            return None
        return NO_DOCUMENTS_FOR_KEY.for_question(question, tenant=caller.tenant)

    async def confirmation(self, caller: Caller, thread_id: str, *, approve: bool) -> TurnRequest:
        """Prepare the run that answers the confirmation a paused turn of the caller's thread waits for.

        `ConflictError` (409) when the thread has no side-effect call waiting for confirmation.
        """
        key = thread_key(caller.tenant, thread_id)
        context = self.context_for(caller, None)
        with threads_unavailable():
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": key}})
        if not pending_confirmation({"__interrupt__": snapshot.interrupts}):
            raise ConflictError(f"thread {thread_id!r} has no tool call waiting for confirmation")
        return TurnRequest(
            graph=self.graph,
            inputs=Command(resume=approve),
            context=context,
            thread_key=key,
            timeout_s=self.settings.request_timeout_s,
            runs=self.runs,
            stop=self.stopping,
        )

    async def thread(self, caller: Caller, thread_id: str) -> dict[str, Any]:
        """The stored state of one of the caller's threads (`NotFoundError` if it has none)."""
        key = thread_key(caller.tenant, thread_id)
        if not self.ready:
            raise NotReadyError("the service is not ready")
        with threads_unavailable():
            snapshot = await self.graph.aget_state({"configurable": {"thread_id": key}})
        values = dict(snapshot.values or {})
        if not values.get("turn"):  # no completed turn (a cancelled first turn leaves only its input)
            raise NotFoundError(f"thread {thread_id!r} does not exist")
        messages = [
            {"role": "user" if m.type == "human" else "assistant", "content": m.content}
            for m in values.get("messages") or []
            if m.type in ("human", "ai")
        ]
        return {
            "thread_id": thread_id,
            "turns": int(values.get("turn") or 0),
            "messages": messages,
            "summary": values.get("summary") or "",
            "entities": values.get("entities") or {},
            "last_result": result_from_state(values, sum((values.get("timings_ms") or {}).values())),
        }

    async def threads(self, caller: Caller, limit: int = 50) -> list[dict[str, Any]]:
        """The caller's threads, newest first: id, turns, title (the first question), last update.

        The title is the state's `title`; a thread checkpointed before that key existed falls back to
        its oldest kept question.

        Read from the checkpointer's list of checkpoints, keeping the caller's namespace only; a thread
        of another tenant is never listed.
        """
        if self.graph is None:
            raise NotReadyError("the service is not ready: the thread store is not open")
        prefix = thread_key(caller.tenant, "x")[:-1]
        latest: dict[str, Any] = {}
        async for item in self.graph.checkpointer.alist(None):
            key = str(item.config["configurable"].get("thread_id") or "")
            if not key.startswith(prefix):
                continue
            known = latest.get(key)
            if known is None or item.checkpoint["ts"] > known.checkpoint["ts"]:
                latest[key] = item
        rows = []
        for key, item in latest.items():
            values = item.checkpoint.get("channel_values") or {}
            if not values.get("turn"):
                continue
            title = values.get("title")
            if not isinstance(title, str) or not title:
                first = next((m for m in values.get("messages") or [] if m.type == "human"), None)
                title = first.content if first is not None and isinstance(first.content, str) else ""
            rows.append(
                {
                    "thread_id": key[len(prefix) :],
                    "turns": int(values.get("turn") or 0),
                    "title": " ".join(title.split())[:120],
                    "updated": item.checkpoint["ts"],
                }
            )
        rows.sort(key=lambda r: r["updated"], reverse=True)
        return rows[:limit]

    def evidence(self, caller: Caller, chunk_id: str) -> dict[str, Any]:
        """One stored chunk the caller may see (`NotFoundError` otherwise, another tenant's included)."""
        self.check_ready()
        assert self.knowledge is not None
        found = ScopedRetriever(self.knowledge.retriever, caller.tenant).lookup(chunk_id)
        if found is None:
            raise NotFoundError(f"evidence {chunk_id[:80]!r} does not exist")
        return {
            "id": found.id,
            "text": found.text,
            "source": found.source,
            "heading_path": list(found.heading_path),
            "page": found.page,
            "page_breaks": [list(item) for item in found.page_breaks],
            "char_start": found.char_start,
            "char_end": found.char_end,
        }

    def status(self, caller: Caller) -> dict[str, Any]:
        """The status panel: health, the caller's chunks and sources, models, limits, the key's rights."""
        from haygraph.retrieval.converters import SUPPORTED_EXTENSIONS

        knowledge = self.knowledge
        out: dict[str, Any] = {
            "health": "loading",
            "tenant": caller.tenant,
            "write": caller.write,
            "store_version": None,
            "chunks": 0,
            "shared_chunks": 0,
            "sources": 0,
            "embedding_model": None,
            "retrieval_mode": None,
            "reranker": None,
            "model": self.settings.model
            or ("custom" if self.base_context and self.base_context.chat_model else "offline"),
            "threads": self.settings.threads_backend,
            "active_runs": self.runs.active,
            "max_upload_bytes": self.settings.max_upload_bytes,
            "formats": sorted(SUPPORTED_EXTENSIONS),
        }
        if knowledge is not None and not knowledge.ready and self.graph is not None:
            out["health"] = "empty"
        if knowledge is None or not knowledge.ready or self.graph is None:
            return out
        snap = knowledge.current
        config = snap.kb.config
        rows = self.documents.sources(caller) if self.documents is not None else []
        shared = self.documents.tenant_chunks()[SHARED_TENANT] if self.documents is not None else 0
        out.update(
            health="ready",
            store_version=snap.version,
            chunks=self.documents.visible_chunks(caller.tenant) if self.documents is not None else 0,
            shared_chunks=shared,
            sources=len(rows),
            embedding_model=f"{config.embedder.model} ({config.embedder.backend})",
            retrieval_mode=config.query.mode,
            reranker=config.query.reranker.model,
        )
        return out
