"""Sign-on with JWTs (`--auth oidc`): a local JWKS server, keys and tokens made here, the real service.

The issuer's keys (RSA and EC) are generated in the test and published by a JWKS server on a loopback
port that the test can rotate or break. Every bad token named by the issue answers 401 with its reason;
a JWKS that cannot be fetched answers 503; a rotated key is accepted without a restart; tenants come
from the token's claim and see only their own documents, threads and evidence; API keys keep working
beside the tokens, and a token never falls back to a key.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from haygraph.adapters.service import HaygraphService, ServiceSettings
from haygraph.adapters.service.errors import AuthenticationError, ServiceConfigError
from haygraph.adapters.service.oidc import OidcSettings, TokenVerifier, load_oidc_settings
from tests.adapters.service.server_helpers import KEY_A, TENANT_SOURCES, free_port, running_server, write_keys

pytestmark = pytest.mark.integration

ISSUER = "https://login.test/realms/acme"
AUDIENCE = "haygraph"


class Issuer:
    """Signing keys by kid (private), the published set, and a switch that makes the JWKS answer 500."""

    def __init__(self) -> None:
        self.private: dict[str, Any] = {}
        self.published: list[str] = []
        self.broken = False
        self.fetches = 0

    def add_rsa(self, kid: str, *, publish: bool = True) -> str:
        self.private[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if publish:
            self.published.append(kid)
        return kid

    def add_ec(self, kid: str) -> str:
        self.private[kid] = ec.generate_private_key(ec.SECP256R1())
        self.published.append(kid)
        return kid

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            key = self.private[kid].public_key()
            jwk = RSAAlgorithm.to_jwk(key, as_dict=True) if isinstance(key, rsa.RSAPublicKey) else None
            jwk = jwk or ECAlgorithm.to_jwk(key, as_dict=True)
            keys.append({**jwk, "kid": kid, "use": "sig"})
        return {"keys": keys}

    def token(self, kid: str, *, alg: str | None = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "user-1",
            "tenant": "A",
            "iat": now,
            "exp": now + 300,
        }
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        key = self.private[kid]
        alg = alg or ("RS256" if isinstance(key, rsa.RSAPrivateKey) else "ES256")
        return jwt.encode(claims, key, algorithm=alg, headers={"kid": kid})


@pytest.fixture(scope="module")
def issuer() -> Iterator[tuple[Issuer, str]]:
    """The issuer and its JWKS server's URL (127.0.0.1, a free port)."""
    state = Issuer()
    state.add_rsa("rsa-1")
    state.add_ec("ec-1")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.fetches += 1
            body = json.dumps(state.jwks()).encode()
            self.send_response(500 if state.broken else 200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b"{}" if state.broken else body)

        def log_message(self, *_args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state, f"http://127.0.0.1:{server.server_address[1]}/certs"
    finally:
        server.shutdown()


def oidc_file(path: Path, **settings: Any) -> Path:
    base = {"issuer": ISSUER, "audience": AUDIENCE, "jwks_refresh_s": 0}
    path.write_text(yaml.safe_dump({**base, **settings}))
    return path


@pytest.fixture(scope="module")
def oidc_server(
    issuer: tuple[Issuer, str], tenant_store: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """The service with `--auth oidc` (the local JWKS) and the API-keys file for tenants A and B too."""
    root = tmp_path_factory.mktemp("oidc")
    config = oidc_file(root / "oidc.yaml", jwks_url=issuer[1])
    keys = write_keys(root / "keys.yaml")
    settings = ServiceSettings(store_dir=tenant_store, auth="oidc", oidc_config=config, api_keys=keys)
    with running_server(HaygraphService(settings)) as url:
        yield url


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sources(url: str, headers: dict[str, str]) -> set[str]:
    response = httpx.post(
        f"{url}/v1/search", json={"query": "travel per diem expenses", "top_k": 10}, headers=headers
    )
    assert response.status_code == 200, response.text
    return {r["source"] for r in response.json()["results"]}


def refusal(url: str, token: str) -> tuple[int, str, str]:
    response = httpx.post(f"{url}/v1/search", json={"query": "per diem"}, headers=bearer(token), timeout=30)
    body = response.json()
    return response.status_code, body["error"]["message"], response.headers.get("WWW-Authenticate", "")


def test_tenant_comes_from_the_token(oidc_server: str, issuer: tuple[Issuer, str]) -> None:
    state, _ = issuer
    a, b = state.token("rsa-1", tenant="A"), state.token("ec-1", tenant="B", sub="user-2")
    assert sources(oidc_server, bearer(a)) <= TENANT_SOURCES["A"] and sources(oidc_server, bearer(a))
    assert sources(oidc_server, bearer(b)) <= TENANT_SOURCES["B"] and sources(oidc_server, bearer(b))
    # a filter naming the other tenant does not widen the token's tenant
    hostile = {"query": "per diem", "filters": {"field": "meta.tenant", "operator": "==", "value": "B"}}
    found = httpx.post(f"{oidc_server}/v1/search", json=hostile, headers=bearer(a), timeout=30)
    assert found.status_code in (200, 400)
    if found.status_code == 200:
        assert {r["source"] for r in found.json()["results"]} <= TENANT_SOURCES["A"]
    # threads and evidence are the tenant's own
    ask = httpx.post(
        f"{oidc_server}/v1/ask",
        json={"question": "Acme per diem?", "thread_id": "mine"},
        headers=bearer(a),
        timeout=60,
    ).json()
    assert ask["status"] == "completed" and ask["evidence_ids"]
    assert httpx.get(f"{oidc_server}/v1/threads/mine", headers=bearer(a)).status_code == 200
    assert httpx.get(f"{oidc_server}/v1/threads/mine", headers=bearer(b)).status_code == 404
    chunk = ask["evidence_ids"][0]
    assert httpx.get(f"{oidc_server}/v1/evidence/{chunk}", headers=bearer(a)).status_code == 200
    assert httpx.get(f"{oidc_server}/v1/evidence/{chunk}", headers=bearer(b)).status_code == 404
    status = httpx.get(f"{oidc_server}/v1/status", headers=bearer(b)).json()
    assert status["tenant"] == "B" and status["write"] is False  # no write scope in the token
    writer = state.token("rsa-1", tenant="B", scope="openid haygraph:write")
    assert httpx.get(f"{oidc_server}/v1/status", headers=bearer(writer)).json()["write"] is True
    removed = httpx.delete(f"{oidc_server}/v1/sources/globex-travel.md", headers=bearer(b))
    assert removed.status_code == 403  # a read-only token may not remove documents
    # an SSO proxy in front of the page passes the token in X-Forwarded-Access-Token
    proxied = httpx.get(f"{oidc_server}/v1/status", headers={"X-Forwarded-Access-Token": b}).json()
    assert proxied["tenant"] == "B"


def test_api_keys_work_beside_tokens_and_tokens_never_fall_back(
    oidc_server: str, issuer: tuple[Issuer, str]
) -> None:
    state, _ = issuer
    assert sources(oidc_server, bearer(KEY_A)) <= TENANT_SOURCES["A"]
    assert httpx.get(f"{oidc_server}/v1/status", headers=bearer("hg-not-a-key-0000000000")).status_code == 401
    expired = state.token("rsa-1", exp=int(time.time()) - 3600)
    assert refusal(oidc_server, expired)[0] == 401
    assert httpx.get(f"{oidc_server}/v1/status").status_code == 401  # nothing is anonymous


def _unsigned(claims: dict[str, Any], kid: str) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': kid})}.{part(claims)}."


def test_each_bad_token_is_refused_with_its_reason(oidc_server: str, issuer: tuple[Issuer, str]) -> None:
    state, _ = issuer
    now = int(time.time())
    state.add_rsa("rsa-unpublished", publish=False)
    forged = jwt.encode(
        {"iss": ISSUER, "aud": AUDIENCE, "tenant": "B", "exp": now + 300},
        state.private["rsa-unpublished"],
        algorithm="RS256",
        headers={"kid": "rsa-1"},  # a published kid, another key's signature
    )
    public_pem = (
        state.private["rsa-1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    confused = _hs256_with_public_key(
        public_pem, {"iss": ISSUER, "aud": AUDIENCE, "tenant": "B", "exp": now + 300}
    )
    cases = {
        "wrong signature": (forged, "signature does not verify"),
        "alg none": (
            _unsigned({"iss": ISSUER, "aud": AUDIENCE, "tenant": "B", "exp": now + 300}, "rsa-1"),
            "'none'",
        ),
        "HS256 with the public key": (confused, "'HS256' is not accepted"),
        "expired": (state.token("rsa-1", exp=now - 120), "expired"),
        "not yet valid": (state.token("rsa-1", nbf=now + 600), "not valid yet"),
        "other audience": (state.token("rsa-1", aud="another-service"), "not for this service"),
        "other issuer": (state.token("rsa-1", iss="https://evil.test"), "another issuer"),
        "no tenant claim": (state.token("rsa-1", tenant=None), "no 'tenant' claim"),
        "the shared tenant": (state.token("rsa-1", tenant="*"), "'*' marks documents shared"),
        "no exp": (state.token("rsa-1", exp=None), "no 'exp' claim"),
        "unknown key": (state.token("rsa-unpublished"), "does not publish"),
        "garbage": ("eyJhbGciOi.bm90IGpzb24.c2ln", "not a well-formed JWT"),
    }
    for name, (token, reason) in cases.items():
        status, message, challenge = refusal(oidc_server, token)
        assert status == 401 and reason in message, (name, status, message)
        assert challenge == 'Bearer error="invalid_token"', name


def _hs256_with_public_key(secret: bytes, claims: dict[str, Any]) -> str:
    """The classic key-confusion token: HS256 keyed with the issuer's public key (signed by hand)."""
    import hashlib
    import hmac

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    head = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': 'rsa-1'})}.{part(claims)}"
    sig = hmac.new(secret, head.encode(), hashlib.sha256).digest()
    return f"{head}.{base64.urlsafe_b64encode(sig).rstrip(b'=').decode()}"


def test_key_rotation_without_a_restart(oidc_server: str, issuer: tuple[Issuer, str]) -> None:
    state, _ = issuer
    state.add_rsa("rsa-2", publish=False)  # the issuer's next key, not published yet
    assert refusal(oidc_server, state.token("rsa-2", tenant="A"))[0] == 401
    state.published.append("rsa-2")  # the issuer publishes a new key and signs with it
    fetched = state.fetches
    token = state.token("rsa-2", tenant="A")
    assert sources(oidc_server, bearer(token)) <= TENANT_SOURCES["A"]
    assert state.fetches == fetched + 1  # one fetch for the new kid
    assert sources(oidc_server, bearer(state.token("rsa-2", tenant="A"))) and state.fetches == fetched + 1


def test_unreachable_jwks_is_503_and_never_lets_a_token_through(
    tenant_store: Path, tmp_path: Path, issuer: tuple[Issuer, str]
) -> None:
    state, url = issuer
    dead = oidc_file(tmp_path / "dead.yaml", jwks_url=f"http://127.0.0.1:{free_port()}/certs")
    with running_server(
        HaygraphService(ServiceSettings(store_dir=tenant_store, auth="oidc", oidc_config=dead))
    ) as s:
        response = httpx.post(
            f"{s}/v1/search", json={"query": "per diem"}, headers=bearer(state.token("rsa-1"))
        )
        assert response.status_code == 503 and response.json()["error"]["type"] == "auth_unavailable"
        assert "Retry-After" in response.headers and "127.0.0.1" not in response.text
    # keys fetched, then the JWKS breaks: used until jwks_cache_s passes, never after
    config = load_oidc_settings(oidc_file(tmp_path / "short.yaml", jwks_url=url, jwks_cache_s=0.5))
    verifier = TokenVerifier(config)
    assert verifier.authenticate(state.token("rsa-1", tenant="B")).tenant == "B"
    state.broken = True
    try:
        time.sleep(0.6)
        from haygraph.adapters.service.errors import AuthUnavailableError

        with pytest.raises(AuthUnavailableError):
            verifier.authenticate(state.token("rsa-1", tenant="B"))
        with pytest.raises(AuthUnavailableError):  # the stale keys were dropped, not kept
            verifier.authenticate(state.token("rsa-1", tenant="B"))
    finally:
        state.broken = False
    assert verifier.authenticate(state.token("rsa-1", tenant="B")).tenant == "B"


def test_jwks_file_and_rotation_by_rewriting_it(tmp_path: Path, issuer: tuple[Issuer, str]) -> None:
    state, _ = issuer
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps(state.jwks()))
    verifier = TokenVerifier(load_oidc_settings(oidc_file(tmp_path / "f.yaml", jwks_file=str(jwks))))
    assert verifier.authenticate(state.token("ec-1", tenant="B", sub="u9")).key_id == "jwt:u9"
    state.add_rsa("rsa-file")
    with pytest.raises(AuthenticationError, match="does not publish"):  # not in the file yet
        verifier.authenticate(state.token("rsa-file"))
    jwks.write_text(json.dumps(state.jwks()))
    assert verifier.authenticate(state.token("rsa-file", tenant="A")).tenant == "A"


def test_settings_are_checked(tmp_path: Path, tenant_store: Path) -> None:
    with pytest.raises(ServiceConfigError, match="exactly one of jwks_url and jwks_file"):
        load_oidc_settings(oidc_file(tmp_path / "a.yaml"))
    with pytest.raises(ServiceConfigError, match="not accepted"):
        load_oidc_settings(
            oidc_file(tmp_path / "b.yaml", jwks_url="https://x.test/certs", algorithms=["HS256"])
        )
    with pytest.raises(ServiceConfigError, match="go together"):
        ServiceSettings(store_dir=tenant_store, auth="oidc")
    with pytest.raises(ServiceConfigError, match="tenant_clam: Extra inputs are not permitted"):
        load_oidc_settings(oidc_file(tmp_path / "c.yaml", jwks_url="https://x.test/certs", tenant_clam="t"))
    assert OidcSettings(issuer="i", audience="a", jwks_url="https://x.test/c").algorithms == (
        "RS256",
        "ES256",
    )


def test_mcp_takes_the_token_and_is_bound_to_its_tenant(oidc_server: str, issuer: tuple[Issuer, str]) -> None:
    """`/mcp` signs in with the same JWTs: the token's tenant bounds every tool; a bad token is a 401."""
    state, _ = issuer
    accept = {"Accept": "application/json, text/event-stream"}

    def call(token: str, name: str, arguments: dict[str, Any]) -> httpx.Response:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        return httpx.post(f"{oidc_server}/mcp", json=body, headers={**accept, **bearer(token)}, timeout=60)

    for tenant, kid in (("A", "rsa-1"), ("B", "ec-1")):
        found = call(
            state.token(kid, tenant=tenant),
            "search_knowledge_base",
            {"query": "travel per diem", "top_k": 10},
        )
        hits = found.json()["result"]["structuredContent"]["result"]
        assert hits and {h["source"] for h in hits} <= TENANT_SOURCES[tenant]
    answer = call(
        state.token("rsa-1", tenant="B"), "ask", {"question": "What is the per diem for business travel?"}
    )
    cited = answer.json()["result"]["structuredContent"]["citations"]
    assert cited and {c["source"] for c in cited} <= TENANT_SOURCES["B"]
    expired = call(
        state.token("rsa-1", exp=int(time.time()) - 60), "search_knowledge_base", {"query": "per diem"}
    )
    assert expired.status_code == 401 and expired.json()["error"]["type"] == "authentication_error"
