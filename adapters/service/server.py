"""Run the service on uvicorn: `serve(settings)` (what `haygraph serve` calls).

The store and the model are loaded before the port opens, so a bad store, config, key file or
threads database is one clear error rather than a server that never becomes ready. Shutdown
(SIGINT/SIGTERM) is graceful (see `shutdown`): readiness goes false, the port closes after the drain
delay, in-flight requests and streams finish within the grace, then the thread store closes; exit 0.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from haygraph.adapters.service.allocator import MemoryTrimmer, give_back_large_blocks, limit_arenas
from haygraph.adapters.service.app import create_app
from haygraph.adapters.service.service import HaygraphService
from haygraph.adapters.service.settings import ServiceSettings
from haygraph.adapters.service.shutdown import GracefulServer, server_config
from haygraph.adapters.service.threads import check_threads_db, describe_threads_db
from haygraph.adapters.tenancy import SHARED_TENANT

logger = logging.getLogger(__name__)


def startup_lines(service: HaygraphService) -> list[str]:
    """What the service tells its operator when it starts (no secrets)."""
    s = service.settings
    knowledge = service.knowledge
    snap = knowledge.current if knowledge is not None and knowledge.ready else None
    chunks, version = (snap.documents, snap.version) if snap else ("?", "?")
    described = (
        f"{chunks} chunks (version {version}), reloaded automatically when it changes"
        if snap
        else "no documents yet: upload some on the page"
    )
    lines = [
        f"store {s.store_dir}: {described}",
        f"model: {s.model or 'offline (rule-based routing, extractive answers)'}; "
        f"example tools: {'on' if s.example_tools else 'off'}",
        f"threads: {describe_threads_db(s.threads_db)}",
    ]
    if service.verifier is not None:
        o = service.verifier.settings
        lines.append(
            f"sign-on: JWTs of {o.issuer} for audience {o.audience} "
            f"(tenant from the {o.tenant_claim!r} claim)"
            + ("; API keys too" if service.keyring is not None else "")
        )
    if service.keyring is None:
        if service.verifier is None:
            lines.append(f"no --api-keys: no authentication, listening on {s.host} only")
    else:
        tenants = sorted({g.tenant for g in service.keyring.grants})
        lines.append(f"API keys: {len(service.keyring)} for tenant(s) {', '.join(tenants)}")
        unseen = unseen_chunks_warning(service, set(tenants))
        if unseen:
            lines.append(unseen)
    if s.tracing:
        from haygraph.adapters.tracing import Tracing

        lines.append(Tracing(content=s.trace_content).describe())
    lines.append(
        f"load: {s.in_flight_limit} requests in flight, {s.queue_limit} waiting, then 429 (--max-in-flight, "
        "--max-queue)"
    )
    lines.append(
        f"listening on http://{s.host}:{s.port} (the page at /, API docs at /docs); Ctrl-C stops gracefully"
    )
    return lines


def unseen_chunks_warning(service: HaygraphService, tenants: set[str]) -> str | None:
    """One line when some chunks are visible to no API key (a tenant no key has), with the fix."""
    if service.documents is None:
        return None
    counts = service.documents.tenant_chunks()
    unseen = {t: n for t, n in counts.items() if t != SHARED_TENANT and t not in tenants}
    if not unseen:
        return None
    total = sum(unseen.values())
    kinds = ", ".join(
        f"{n} {'without a tenant' if t is None else f'of tenant {t!r}'}"
        for t, n in sorted(unseen.items(), key=lambda item: -item[1])[:3]
    )
    line = (
        f"WARNING: {total} of {sum(counts.values())} chunks are visible to no API key ({kinds}); index "
        "documents every tenant may read with --meta tenant=* and one tenant's with --meta tenant=NAME "
        "(haygraph index --store STORE --meta tenant=* DIR), or add a key for that tenant"
    )
    return line


def serve(settings: ServiceSettings, *, announce: Callable[[str], None] | None = None) -> None:
    """Load everything, then serve until interrupted; `announce` receives the start-up lines."""
    check_threads_db(settings.threads_db)
    # a process of its own: its allocator is ours to set (see `allocator`), before any thread serves
    give_back_large_blocks()
    limit_arenas()
    service = HaygraphService(settings)
    service.load()
    for line in startup_lines(service):
        (announce or logger.info)(line)
    trimmer = MemoryTrimmer()
    trimmer.start()
    try:
        GracefulServer(server_config(create_app(service), service), service).run()
    finally:
        trimmer.stop()
