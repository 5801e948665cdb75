"""Sign-on with JWTs (`--auth oidc`): bearer tokens of an identity provider, verified with PyJWT.

The `--oidc-config` file (YAML or JSON) names the issuer and how to read its tokens:

```yaml
issuer: https://login.example.com/realms/acme      # the `iss` every token must carry
audience: haygraph                                 # the `aud` every token must carry
jwks_url: https://login.example.com/realms/acme/protocol/openid-connect/certs
# or jwks_file: /etc/haygraph/jwks.json            # the keys as a JWK set on disk
tenant_claim: tenant          # the claim naming the caller's tenant (required in every token)
user_claim: sub               # the claim naming the user (logs and accounting)
write_claim: scope            # write access when this claim is true, equals write_value, or lists it
write_value: haygraph:write
algorithms: [RS256, ES256]    # asymmetric only; `none` and HS* are refused
jwks_cache_s: 300             # how long fetched keys are used before they are fetched again
jwks_refresh_s: 10            # fewest seconds between fetches for an unknown kid (a rotated key)
leeway_s: 30                  # clock skew allowed on exp / nbf / iat
```

A request's `Authorization: Bearer <token>` is a JWT when it has the JWT shape (three base64url parts);
it is then verified here and never tried as an API key, so a failing token cannot fall back to anything.
The signature is checked with the issuer's key named by the token's `kid` (fetched from the JWKS URL or
read from the file; a `kid` not yet known makes one fetch, at most one per `jwks_refresh_s`, so rotated
keys work without a restart and random `kid`s cannot make the service hammer the issuer), then `exp`,
`nbf`, `iss` and `aud` (all required). The tenant comes from the claim only, checked like a key's tenant.

Failures answer 401 with the reason (`WWW-Authenticate: Bearer error="invalid_token"`): a bad signature,
alg `none` or any algorithm not listed, an expired or not yet valid token, another issuer or audience, a
missing or unusable tenant claim, an unknown key. Keys that cannot be fetched (the issuer down, a broken
file) answer 503 `auth_unavailable`; cached keys are used only until `jwks_cache_s` passes, never past
it, so a fault never keeps a revoked key alive or lets a token through unchecked.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from haygraph.adapters.errors import ScopeError
from haygraph.adapters.service.errors import AuthenticationError, AuthUnavailableError, ServiceConfigError
from haygraph.adapters.service.keys import Caller
from haygraph.adapters.tenancy import check_tenant

logger = logging.getLogger(__name__)

ASYMMETRIC = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""The algorithms a token may use: signatures verified with a public key (HS* would make the public JWKS a
shared secret; `none` is no signature)."""
FETCH_TIMEOUT_S = 5.0
"""Longest wait for the JWKS URL."""
JWT_SHAPE = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*$")


class OidcSettings(BaseModel):
    """The `--oidc-config` file: issuer, audience, where the keys are, and which claims mean what."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    issuer: str = Field(min_length=1, description="The `iss` every token must carry.")
    audience: str = Field(min_length=1, description="The `aud` every token must carry.")
    jwks_url: str | None = Field(default=None, description="Where the issuer publishes its keys (JWK set).")
    jwks_file: Path | None = Field(default=None, description="The issuer's keys as a JWK set file.")
    tenant_claim: str = Field(default="tenant", min_length=1, description="The claim naming the tenant.")
    user_claim: str = Field(default="sub", min_length=1, description="The claim naming the user.")
    write_claim: str | None = Field(
        default="scope", description="The claim granting write access (None: tokens are read-only)."
    )
    write_value: str = Field(default="haygraph:write", min_length=1, description="The write scope or role.")
    algorithms: tuple[str, ...] = Field(default=("RS256", "ES256"), min_length=1)
    jwks_cache_s: float = Field(default=300.0, gt=0, le=86_400)
    jwks_refresh_s: float = Field(default=10.0, ge=0, le=3600)
    """Fewest seconds between two fetches caused by a token with an unknown `kid` (a rotation)."""
    leeway_s: float = Field(default=30.0, ge=0, le=300)

    @model_validator(mode="after")
    def _check(self) -> OidcSettings:
        if (self.jwks_url is None) == (self.jwks_file is None):
            raise ValueError("give exactly one of jwks_url and jwks_file")
        if self.jwks_url is not None and not self.jwks_url.startswith(("https://", "http://")):
            raise ValueError("jwks_url must be an http(s) URL")
        refused = sorted(set(self.algorithms) - ASYMMETRIC)
        if refused:
            raise ValueError(
                f"algorithms {refused} are not accepted; use asymmetric ones: {sorted(ASYMMETRIC)}"
            )
        return self


def load_oidc_settings(path: str | Path) -> OidcSettings:
    """Read and validate an `--oidc-config` file; `ServiceConfigError` names what is wrong."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
        data = json.loads(text) if file.suffix.lower() == ".json" else yaml.safe_load(text)
        return OidcSettings.model_validate(data)
    except OSError as exc:
        raise ServiceConfigError(f"cannot read --oidc-config {str(file)!r}: {exc.strerror or exc}") from exc
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ServiceConfigError(f"--oidc-config {str(file)!r} is not valid YAML/JSON: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'file'}: {err['msg']}" for err in exc.errors()
        )
        raise ServiceConfigError(f"--oidc-config {str(file)!r}: {problems}") from exc


def looks_like_jwt(token: str) -> bool:
    """Whether a bearer credential has the JWT shape (then it is verified as one, never as an API key)."""
    return bool(JWT_SHAPE.match(token)) and token.startswith("eyJ")


class JwksKeys:
    """The issuer's signing keys by `kid`, fetched (URL) or read (file), cached for `jwks_cache_s`."""

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self._keys: dict[str, Any] = {}
        self._fetched_at = float("-inf")
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        from jwt import PyJWKSet

        source = self.settings.jwks_url or str(self.settings.jwks_file)
        try:
            if self.settings.jwks_url is not None:
                import httpx

                response = httpx.get(self.settings.jwks_url, timeout=FETCH_TIMEOUT_S, follow_redirects=False)
                response.raise_for_status()
                data = response.json()
            else:
                assert self.settings.jwks_file is not None
                data = json.loads(self.settings.jwks_file.read_text(encoding="utf-8"))
            keyset = PyJWKSet.from_dict(data)
        except Exception as exc:  # unreachable, an HTTP error, not JSON, no usable key: all the same here
            logger.warning("cannot load the issuer's keys from %s: %s: %s", source, type(exc).__name__, exc)
            raise AuthUnavailableError(
                "the identity provider's signing keys cannot be fetched right now; retry shortly"
            ) from exc
        keys = {}
        for jwk in keyset.keys:
            if jwk.key_id and (jwk.public_key_use in (None, "sig")):
                keys[jwk.key_id] = jwk
        return keys

    def key(self, kid: str) -> Any:
        """The key named `kid`; refetched when the cache is old or the `kid` is new (rate-limited).

        Raises:
            AuthenticationError: no such key at the issuer.
            AuthUnavailableError: the keys cannot be fetched (and the cached ones are too old to use).

        """
        with self._lock:
            now = time.monotonic()
            stale = now - self._fetched_at >= self.settings.jwks_cache_s
            unknown = kid not in self._keys and now - self._fetched_at >= self.settings.jwks_refresh_s
            if stale or unknown:
                try:
                    self._keys = self._load()
                    self._fetched_at = now
                except AuthUnavailableError:
                    if stale:
                        self._keys = {}  # never verify with keys older than the cache allows
                    raise
            found = self._keys.get(kid)
        if found is None:
            raise AuthenticationError("invalid token: it is signed with a key the issuer does not publish")
        return found


class TokenVerifier:
    """Turns a bearer JWT into a `Caller` (tenant from the claim), or says why not."""

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self.keys = JwksKeys(settings)

    def authenticate(self, token: str) -> Caller:
        """Verify `token` (signature, alg, exp/nbf, iss, aud, tenant claim); the caller it names.

        Raises:
            AuthenticationError: the token is not valid (the message says why).
            AuthUnavailableError: the issuer's keys cannot be fetched.

        """
        import jwt
        from jwt import exceptions as errors

        try:
            header = jwt.get_unverified_header(token)
        except errors.DecodeError as exc:
            raise AuthenticationError("invalid token: it is not a well-formed JWT") from exc
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.settings.algorithms:
            raise AuthenticationError(
                f"invalid token: algorithm {alg!r} is not accepted "
                f"(accepted: {', '.join(self.settings.algorithms)})"
            )
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise AuthenticationError("invalid token: its header names no key (kid)")
        jwk = self.keys.key(kid)
        try:
            claims = jwt.decode(
                token,
                key=jwk.key,
                algorithms=[alg],
                audience=self.settings.audience,
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_s,
                options={"require": ["exp", "iss", "aud"]},
            )
        except errors.ExpiredSignatureError as exc:
            raise AuthenticationError("invalid token: it has expired") from exc
        except errors.ImmatureSignatureError as exc:
            raise AuthenticationError("invalid token: it is not valid yet (nbf/iat in the future)") from exc
        except errors.InvalidAudienceError as exc:
            raise AuthenticationError(
                f"invalid token: it is not for this service (audience {self.settings.audience!r})"
            ) from exc
        except errors.InvalidIssuerError as exc:
            raise AuthenticationError("invalid token: it was issued by another issuer") from exc
        except errors.MissingRequiredClaimError as exc:
            raise AuthenticationError(f"invalid token: it has no {exc.claim!r} claim") from exc
        except errors.InvalidSignatureError as exc:
            raise AuthenticationError("invalid token: its signature does not verify") from exc
        except errors.PyJWTError as exc:
            raise AuthenticationError(f"invalid token: {type(exc).__name__}") from exc
        return self._caller(claims)

    def _caller(self, claims: dict[str, Any]) -> Caller:
        name = self.settings.tenant_claim
        if name not in claims:
            raise AuthenticationError(f"invalid token: it has no {name!r} claim naming the tenant")
        try:
            tenant = check_tenant(claims[name], name=f"the token's {name!r} claim")
        except ScopeError as exc:
            raise AuthenticationError(f"invalid token: {exc}") from exc
        user = claims.get(self.settings.user_claim)
        return Caller(
            tenant=tenant,
            write=self._may_write(claims),
            key_id=f"jwt:{str(user)[:64]}" if user is not None else "jwt",
        )

    def _may_write(self, claims: dict[str, Any]) -> bool:
        if self.settings.write_claim is None:
            return False
        value = claims.get(self.settings.write_claim)
        if value is True:
            return True
        if isinstance(value, str):
            return self.settings.write_value in value.split()
        if isinstance(value, list):
            return self.settings.write_value in value
        return False
