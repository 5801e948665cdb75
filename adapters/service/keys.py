"""API keys bound to tenants: the `--api-keys` file and the lookup behind `Authorization: Bearer KEY`.

The file (YAML or JSON) maps each key to its grant:

```yaml
"hg-acme-4f9c2b7e1d": {tenant: acme}                          # every default tool
"hg-globex-8a1e5c3f7b": {tenant: globex, tools: [today, search_knowledge_base]}
"hg-acme-reader-77d0e4a2c9": {tenant: acme, write: false}      # may not upload or remove documents
"hg-initech-9d2f6a0c4e": {tenant: initech, requests_per_minute: 120}
```

- `tenant` (required): every retrieval the key causes is restricted to chunks whose
  `meta.tenant` equals it, and its threads live in the tenant's own namespace.
- `tools` (optional): the tools the key may use (with `--example-tools`); default: the example
  tools' default allow-list. A key can never be granted a tool the service does not have.
- `write` (optional, default true): false makes the key read-only — it may search, ask and list
  documents, but uploading, re-indexing or removing documents answers 403.
- `requests_per_minute` (optional): the key's rate limit (a token bucket of that many requests,
  refilled continuously); past it the service answers 429 `rate_limited` with `Retry-After`.
  Default: no per-key limit (the service's overall load limits still apply).

Keys are kept only as SHA-256 digests in memory and are never logged or echoed in errors.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from haygraph.adapters.errors import ScopeError
from haygraph.adapters.service.errors import AuthenticationError, ServiceConfigError
from haygraph.adapters.tenancy import check_tenant

MIN_KEY_CHARS = 16


class KeyGrant(BaseModel):
    """What one API key may do: its tenant and, optionally, its tools."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant: str = Field(
        min_length=1, description="Tenant whose chunks (meta.tenant) and threads the key sees."
    )
    tools: tuple[str, ...] | None = Field(
        default=None, description="Tools the key may use; None = the service's default allow-list."
    )
    write: bool = Field(
        default=True, description="Whether the key may upload, re-index and remove documents."
    )
    requests_per_minute: int | None = Field(
        default=None, ge=1, le=1_000_000, description="The key's rate limit; None = not limited per key."
    )


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant (None without `--api-keys`), the key's tools, write right and rate limit."""

    tenant: str | None
    tools: tuple[str, ...] | None = None
    write: bool = True
    requests_per_minute: int | None = None
    """The key's rate limit (None = none)."""
    key_id: str | None = field(default=None, compare=False)
    """A short, non-secret id of the key (a prefix of its digest), for per-key accounting."""


ANONYMOUS = Caller(tenant=None)
"""The caller of a service started without `--api-keys` (loopback only): every chunk, no namespace."""


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _masked(key: str) -> str:
    return f"{key[:4]}…" if len(key) > 4 else "…"


class KeyRing:
    """The known API keys; `authenticate` turns an `Authorization` header into a `Caller`."""

    def __init__(self, grants: Mapping[str, KeyGrant]) -> None:
        if not grants:
            raise ServiceConfigError("the API-keys file defines no keys")
        self._grants = {_digest(key): grant for key, grant in grants.items()}

    def __len__(self) -> int:
        return len(self._grants)

    @property
    def grants(self) -> list[KeyGrant]:
        """Every grant (without the keys)."""
        return list(self._grants.values())

    def authenticate(self, authorization: str | None) -> Caller:
        """Return the caller for an `Authorization` header value; `AuthenticationError` if none matches."""
        if not authorization:
            raise AuthenticationError("missing API key: send the header 'Authorization: Bearer KEY'")
        scheme, _, key = authorization.strip().partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthenticationError("malformed Authorization header: expected 'Bearer KEY'")
        digest = _digest(key.strip())
        grant = self._grants.get(digest)
        if grant is None:
            raise AuthenticationError("invalid API key")
        return Caller(
            tenant=grant.tenant,
            tools=grant.tools,
            write=grant.write,
            requests_per_minute=grant.requests_per_minute,
            key_id=digest[:16],
        )


def parse_api_keys(data: Any, *, source: str = "API-keys file") -> KeyRing:
    """Validate the parsed content of an API-keys file (a mapping key -> grant) into a `KeyRing`."""
    if not isinstance(data, dict):
        raise ServiceConfigError(
            f"{source} must map each API key to {{tenant, tools?, write?}}, got {type(data).__name__}"
        )
    grants: dict[str, KeyGrant] = {}
    for position, (key, entry) in enumerate(data.items(), start=1):
        label = f"{source}: key #{position} ({_masked(str(key))})"
        if not isinstance(key, str) or len(key.strip()) < MIN_KEY_CHARS or key != key.strip():
            raise ServiceConfigError(
                f"{label}: a key must be a string of at least {MIN_KEY_CHARS} characters without "
                "surrounding spaces"
            )
        try:
            grants[key] = KeyGrant.model_validate(entry)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'entry'}: {err['msg']}" for err in exc.errors()
            )
            raise ServiceConfigError(f"{label}: {problems}") from exc
        try:
            check_tenant(grants[key].tenant)
        except ScopeError as exc:
            raise ServiceConfigError(f"{label}: {exc}") from exc
    return KeyRing(grants)


def load_api_keys(path: str | Path) -> KeyRing:
    """Read and validate an API-keys file (YAML or JSON); `ServiceConfigError` names what is wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise ServiceConfigError(f"cannot read --api-keys file {str(file)!r}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ServiceConfigError(f"--api-keys file {str(file)!r} is not valid YAML/JSON: {exc}") from exc
    return parse_api_keys(data, source=f"--api-keys file {str(file)!r}")
