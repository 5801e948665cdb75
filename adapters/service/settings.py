"""`ServiceSettings`: everything `haygraph serve` is configured with, validated in one place."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from haygraph.adapters.service.errors import ServiceConfigError

if TYPE_CHECKING:
    from haygraph.retrieval.config import RetrievalConfig

LOOPBACK_HOST = "127.0.0.1"


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

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ServiceConfigError(f"--port must be in 0..65535, but got {self.port}")
        if self.request_timeout_s <= 0:
            raise ServiceConfigError(f"--timeout must be > 0 seconds, but got {self.request_timeout_s}")
        if self.max_body_bytes < 1024:
            raise ServiceConfigError(f"--max-body-bytes must be >= 1024, but got {self.max_body_bytes}")
        if self.max_upload_bytes < 1024:
            raise ServiceConfigError(f"--max-upload-bytes must be >= 1024, but got {self.max_upload_bytes}")
        if self.reload_interval_s < 0:
            raise ServiceConfigError(f"reload_interval_s must be >= 0, but got {self.reload_interval_s}")
        if self.api_keys is None and not is_loopback(self.host):
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
