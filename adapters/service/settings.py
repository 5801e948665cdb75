"""`ServiceSettings`: everything `haygraph serve` is configured with, validated in one place."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from haygraph.adapters.service.errors import ServiceConfigError

if TYPE_CHECKING:
    from haygraph.retrieval.config import RetrievalConfig

LOOPBACK_HOST = "127.0.0.1"


def default_max_in_flight() -> int:
    """Requests in flight by default: two per CPU core this process may use (a turn waits on I/O too)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(2, 2 * cores)


def is_loopback(host: str) -> bool:
    """Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, kw_only=True)
class ServiceSettings:
    """Settings of one service process; `ServiceConfigError` names the bad value on construction."""

    store_dir: Path
    """The store directory made by `haygraph index` (read only; reloaded when its `CURRENT` changes)."""

    host: str = LOOPBACK_HOST
    """Interface to bind. Without `api_keys` only a loopback address is accepted."""

    port: int = 8000
    """TCP port to listen on (0 = any free port)."""

    api_keys: Path | None = None
    """YAML/JSON file mapping API keys to tenants (see `keys.py`); None = no authentication."""

    config: Path | RetrievalConfig | None = None
    """Retrieval config used to open the store: a YAML/JSON file or a `RetrievalConfig` holding just the
    keys to override (as the CLI's `--config`/`--tuned` layers give); None = the store's own settings."""

    model: str | None = None
    """LangChain chat model as `provider:name`; None = offline mode (rules + extractive answers)."""

    example_tools: bool = False
    """Offer the example tools (orders, tickets, dates, knowledge search) to the agent."""

    orders_db: Path | None = None
    """SQLite file of the example tools' orders database (default `<store_dir>/orders.sqlite`)."""

    threads_db: str | None = None
    """Where conversation threads live: a SQLite file path, a `postgresql://` URL, or None = memory."""

    request_timeout_s: float = 60.0
    """Deadline of one request; a run still going then is cancelled (504, or an `error` event)."""

    max_body_bytes: int = 1_048_576
    """Largest accepted request body (bytes); larger bodies get 413."""

    max_upload_bytes: int = 50 * 1024 * 1024
    """Largest uploaded document (bytes) for `POST /v1/sources`; a larger request or file gets 413."""

    reload_interval_s: float = 2.0
    """How often the store's `CURRENT` pointer is checked for a new version (seconds; 0 = never)."""

    max_in_flight: int | None = None
    """Working requests (search, ask, stream, chat, confirm) served at once; None = 2 per CPU core."""

    max_queue: int | None = None
    """Working requests that may wait for a slot; past it 429 `overloaded`. None = 8 per slot."""

    queue_timeout_s: float = 10.0
    """Longest wait in the queue; a request still waiting then gets 429 `overloaded`."""

    body_timeout_s: float = 10.0
    """Deadline for receiving a request's line and headers (the connection is closed after it) and,
    separately, its body (408 `request_timeout` after it)."""

    send_timeout_s: float = 30.0
    """Deadline for the client to take one response write (a stream it does not read is aborted)."""

    drain_delay_s: float = 0.0
    """On SIGTERM, seconds `/readyz` reports `draining` (503) while requests are still accepted, so a
    load balancer stops sending new ones before the port closes."""

    shutdown_grace_s: float | None = None
    """On SIGTERM, how long in-flight requests may still run after the port closes; then asks get 503
    `shutting_down` and streams end with that `error` event. None = `request_timeout_s`."""

    auth: str = "keys"
    """How callers sign in: `keys` (the `api_keys` file; none without it) or `oidc` (bearer JWTs of the
    identity provider in `oidc_config`, and the `api_keys` file's keys too when given)."""

    oidc_config: Path | None = None
    """The `--oidc-config` file (issuer, audience, JWKS, claims; see `oidc.py`), with `auth` = `oidc`."""

    audit_log: Path | None = None
    """The audit trail: an append-only JSON-lines file (see `audit.py`); None = no audit trail."""

    audit_questions: bool = False
    """Whether the audit trail keeps each ask's question text (off: outcome and evidence ids only)."""

    metrics: str = "off"
    """`GET /metrics` (Prometheus): `off`, `loopback` (open to 127.0.0.1 / ::1 only) or `key` (the bearer key
    in the environment variable `HAYGRAPH_METRICS_KEY`)."""

    tracing: bool = False
    """OpenTelemetry traces (`--tracing`, the `otel` extra): a span per request, turn, graph node, Haystack
    component and reader run, exported as the `OTEL_*` variables say (see `haygraph.adapters.tracing`)."""

    trace_content: bool = False
    """Whether spans may hold question, answer and document text (`--trace-content`; off: none)."""

    allow_private_hosts: bool = False
    """Whether a website posted to `/v1/sources` (and its re-syncs) may be on a loopback, private,
    link-local or reserved address (`--allow-private-hosts` or `HAYGRAPH_ALLOW_PRIVATE_HOSTS=1`, read by
    the CLI). An operator's choice: no request can change it."""

    resync_every_s: float | None = None
    """Re-sync every indexed website this often (seconds, `--resync-every`); None = never on a schedule."""

    crawl_max_pages: int = 500
    """Pages fetched at most per website crawl (`--crawl-max-pages`)."""

    crawl_delay_s: float = 0.5
    """Seconds between two requests to a website (`--crawl-delay`; robots.txt's Crawl-delay may raise it)."""

    @property
    def in_flight_limit(self) -> int:
        """`max_in_flight`, or its default from the core count."""
        return self.max_in_flight or default_max_in_flight()

    @property
    def queue_limit(self) -> int:
        """`max_queue`, or its default (8 per in-flight slot)."""
        return self.max_queue if self.max_queue is not None else 8 * self.in_flight_limit

    @property
    def grace_s(self) -> float:
        """`shutdown_grace_s`, or the request deadline."""
        return self.shutdown_grace_s if self.shutdown_grace_s is not None else self.request_timeout_s

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ServiceConfigError(f"--port must be in 0..65535, but got {self.port}")
        if self.request_timeout_s <= 0:
            raise ServiceConfigError(f"--timeout must be > 0 seconds, but got {self.request_timeout_s}")
        if self.max_body_bytes < 1024:
            raise ServiceConfigError(f"--max-body-bytes must be >= 1024, but got {self.max_body_bytes}")
        if self.max_upload_bytes < 1024:
            raise ServiceConfigError(f"--max-upload-bytes must be >= 1024, but got {self.max_upload_bytes}")
        if self.max_in_flight is not None and self.max_in_flight < 1:
            raise ServiceConfigError(f"--max-in-flight must be >= 1, but got {self.max_in_flight}")
        if self.max_queue is not None and self.max_queue < 0:
            raise ServiceConfigError(f"--max-queue must be >= 0, but got {self.max_queue}")
        for flag, value in (
            ("--queue-timeout", self.queue_timeout_s),
            ("--body-timeout", self.body_timeout_s),
            ("--send-timeout", self.send_timeout_s),
        ):
            if value <= 0:
                raise ServiceConfigError(f"{flag} must be > 0 seconds, but got {value}")
        if self.drain_delay_s < 0:
            raise ServiceConfigError(f"--drain-delay must be >= 0 seconds, but got {self.drain_delay_s}")
        if self.shutdown_grace_s is not None and self.shutdown_grace_s < 0:
            raise ServiceConfigError(
                f"--shutdown-grace must be >= 0 seconds, but got {self.shutdown_grace_s}"
            )
        if self.resync_every_s is not None and not self.resync_every_s > 0:
            raise ServiceConfigError(f"--resync-every must be > 0 seconds, but got {self.resync_every_s}")
        if self.crawl_max_pages < 1:
            raise ServiceConfigError(f"--crawl-max-pages must be >= 1, but got {self.crawl_max_pages}")
        if not 0 <= self.crawl_delay_s <= 60:
            raise ServiceConfigError(f"--crawl-delay must be 0..60 seconds, but got {self.crawl_delay_s}")
        if self.reload_interval_s < 0:
            raise ServiceConfigError(f"reload_interval_s must be >= 0, but got {self.reload_interval_s}")
        if self.metrics not in ("off", "loopback", "key"):
            raise ServiceConfigError(f"--metrics must be off, loopback or key, but got {self.metrics!r}")
        if self.metrics == "key" and len(os.environ.get("HAYGRAPH_METRICS_KEY", "")) < 16:
            raise ServiceConfigError(
                "--metrics key needs a key of at least 16 characters in the environment variable "
                "HAYGRAPH_METRICS_KEY (not on the command line, where other users of the host can read it)"
            )
        if self.trace_content and not self.tracing:
            raise ServiceConfigError("--trace-content records text in traces: it needs --tracing")
        if self.tracing:
            from haygraph.adapters.tracing import Tracing

            try:
                Tracing(content=self.trace_content)  # the OTEL_* variables and the extra, checked now
            except ValueError as exc:
                raise ServiceConfigError(str(exc)) from exc
        if self.auth not in ("keys", "oidc"):
            raise ServiceConfigError(f"--auth must be keys or oidc, but got {self.auth!r}")
        if (self.auth == "oidc") != (self.oidc_config is not None):
            raise ServiceConfigError("--auth oidc and --oidc-config FILE go together (one names the other)")
        if self.api_keys is None and self.auth == "keys" and not is_loopback(self.host):
            raise ServiceConfigError(
                f"--host {self.host} would expose the service without authentication: without "
                f"--api-keys it binds to {LOOPBACK_HOST} only (pass --api-keys FILE to serve other hosts)"
            )

    @property
    def threads_backend(self) -> str:
        """`memory`, `sqlite` or `postgres`, from `threads_db`."""
        if not self.threads_db:
            return "memory"
        if self.threads_db.startswith(("postgresql://", "postgres://")):
            return "postgres"
        return "sqlite"
