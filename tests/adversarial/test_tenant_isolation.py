"""Randomised tenant isolation: queries from two tenants on every retrieval surface, 0 foreign chunks.

Each query draws a tenant, a question (from both tenants' shared handbook, tenant-specific documents,
and hostile strings) and a request filter that narrows (a source), tries to widen (the other tenant,
an OR with the other tenant) or is absent. Every surface bound to the tenant runs it; every chunk id
that comes back is looked up in the store and must belong to the tenant or be shared by every tenant
(`meta.tenant` "*": a company-wide notice that both tenants' questions include, and that must come back):

- `KnowledgeBase.search` with the tenant filter merged in (the Python API);
- `Agent.ask` of `build_agent(tenant=T, example_tools=True)` (graph retrieve and expand);
- the `search_knowledge_base` tool with the session's filters (the issue's bypass) and over a
  tenant-bound retriever;
- MCP `search_knowledge_base` and `get_chunk` (any id of the store, either tenant's) over a live store;
- the HTTP service: `/v1/search`, `/v1/ask`, `/v1/chat/completions` with the tenant's API key.

The BM25 store runs in the fast tier (no model), on the embedded store, copied into Qdrant (local mode,
or the server at `$QDRANT_URL`) and copied into PostgreSQL (the test session's server); the hybrid store
over the real model is `integration`.
`HAYGRAPH_TENANT_QUERIES` sets the number of queries (default 250, `make adversarial` 1,000; 150 on
Qdrant's local mode, whose sparse search is a Python scan of every point); the agent and HTTP ask/chat
surfaces run on every `SLOW_EVERY`-th query.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.fastmcp.exceptions import ToolError

from haygraph.adapters.agent import build_agent
from haygraph.adapters.examples.orders_db import OrdersDatabase
from haygraph.adapters.examples.tools import build_example_registry
from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.adapters.live_knowledge import LiveKnowledgeBase
from haygraph.adapters.mcp.server import create_mcp_server
from haygraph.adapters.tenancy import ScopedRetriever, merge_filters, visible_to
from haygraph.control.tools import ContractToolExecutor
from haygraph.control.tools.types import ToolCall
from haygraph.retrieval import KnowledgeBase, RetrievalConfig
from haygraph.retrieval.errors import QueryError
from tests.adapters.tenant_helpers import store_tenants
from tests.adversarial.conftest import SHARED_QUESTION, TENANTS, Tally
from tests.adversarial.inputs import BAD_STRINGS

SLOW_EVERY = 5
QUESTIONS = [
    "How many days of annual leave do I get?",
    "What is the minimum password length?",
    "每个月报销截止是几号？",
    "请问婚假有几天？",
    "How do I book business travel?",
    "What time should I arrive on my first day?",
    "Can I work remotely?",
    "What is the refund policy for returns?",
    "Acme travel policy economy class",
    "Globex travel policy business class",
    "expense claims within days",
    "leave policy",
    SHARED_QUESTION,
    *[value for label, value in BAD_STRINGS if len(value) < 300 and value.strip()],
]
KEYS = {"A": "hg-adv-tenant-a-0000000000000001", "B": "hg-adv-tenant-b-0000000000000002"}


def other(tenant: str) -> str:
    return "B" if tenant == "A" else "A"


def request_filter(rng: random.Random, tenant: str, sources: list[str]) -> dict[str, Any] | None:
    kind = rng.choice(["none", "none", "source", "other-tenant", "widen-or"])
    if kind == "source":
        return {"field": "meta.source_id", "operator": "==", "value": rng.choice(sources)}
    if kind == "other-tenant":
        return {"field": "meta.tenant", "operator": "==", "value": other(tenant)}
    if kind == "widen-or":
        return {
            "operator": "OR",
            "conditions": [
                {"field": "meta.tenant", "operator": "==", "value": other(tenant)},
                {"field": "meta.source_id", "operator": "==", "value": rng.choice(sources)},
            ],
        }
    return None


class Surfaces:
    """Every retrieval surface over one store, bound per tenant."""

    def __init__(self, store: Path, tmp: Path, http: str, config: RetrievalConfig | None = None) -> None:
        self.config = config
        self.kb = KnowledgeBase.open(store, config)
        if config is not None:  # not vacuous: the Qdrant/PostgreSQL surfaces really search that store
            assert self.kb.store.settings == config.store  # type: ignore[attr-defined]
        self.agents = {
            t: build_agent(store, tenant=t, example_tools=True, orders_db=tmp / f"o-{t}.db", config=config)
            for t in TENANTS
        }
        plain = HaystackRetriever(self.kb)
        db = OrdersDatabase(tmp / "orders.db")
        allow = ["search_knowledge_base"]
        self.session_tool = ContractToolExecutor(build_example_registry(db, plain), allow)
        self.bound_tools = {
            t: ContractToolExecutor(build_example_registry(db, ScopedRetriever(plain, t)), allow)
            for t in TENANTS
        }
        live = LiveKnowledgeBase(store, config=config, warm_top_ks=(5,))
        live.load()
        self.mcp = {}
        for t in TENANTS:
            scoped = ScopedRetriever(live.fresh_retriever, t)
            self.mcp[t] = create_mcp_server(scoped, scoped.lookup)
        self.http = httpx.Client(base_url=http, timeout=120)

    def post(self, path: str, tenant: str, body: dict[str, Any]) -> httpx.Response:
        """POST `body` as ASCII JSON (lone surrogates escaped, as a client in another language may send)."""
        headers = {"Authorization": f"Bearer {KEYS[tenant]}", "Content-Type": "application/json"}
        return self.http.post(path, headers=headers, content=json.dumps(body))


@pytest.fixture(
    scope="module",
    params=["bm25", "bm25-qdrant", "bm25-postgres", pytest.param("hybrid", marks=pytest.mark.integration)],
)
def backend(request: pytest.FixtureRequest) -> tuple[Path, RetrievalConfig | None]:
    """(embedded store, None), or (the embedded store it was copied from, the Qdrant/PostgreSQL config)."""
    name, _, target = request.param.partition("-")
    store: Path = request.getfixturevalue(f"{name}_tenant_store")
    return store, request.getfixturevalue(f"{target}_tenant_config") if target else None


@pytest.fixture(scope="module")
def store(backend: tuple[Path, RetrievalConfig | None]) -> Path:
    return backend[0]


@pytest.fixture(scope="module")
def surfaces(
    backend: tuple[Path, RetrievalConfig | None], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Surfaces]:
    from haygraph.adapters.service import HaygraphService, ServiceSettings
    from tests.adapters.service.server_helpers import running_server

    store, config = backend
    tmp = tmp_path_factory.mktemp("surfaces")
    keys = tmp / "keys.yaml"
    keys.write_text("".join(f'"{key}": {{tenant: {t}}}\n' for t, key in KEYS.items()))
    service = HaygraphService(ServiceSettings(store_dir=store, api_keys=keys, config=config))
    with running_server(service) as url:
        s = Surfaces(store, tmp, url, config)
        yield s
        s.http.close()


def test_randomised_queries_never_return_another_tenants_chunk(
    surfaces: Surfaces, store: Path, tally: Tally
) -> None:
    rng = random.Random(11)
    owner = store_tenants(store)
    ids = sorted(owner)
    sources = sorted({i.split("::")[0] for i in ids})
    # Qdrant's local mode scores sparse vectors by a Python scan of every point (~80 s for 500 queries
    # here), so its default is smaller; a server, or HAYGRAPH_TENANT_QUERIES, runs the full count
    # PostgreSQL: 150 too, to keep the suite's time (its BM25 side is the embedded store's own index);
    # the embedded store 250 in `make test` (2 minutes for 500 here), 1,000 in `make adversarial`
    default = "150" if surfaces.config is not None and not os.environ.get("QDRANT_URL") else "250"
    queries = int(os.environ.get("HAYGRAPH_TENANT_QUERIES", default))
    foreign: list[str] = []
    answered: Counter[str] = Counter()
    shared: Counter[str] = Counter()

    def check(surface: str, tenant: str, returned: list[str], query: str) -> None:
        answered[surface] += bool(returned)
        shared[surface] += any(owner.get(i) == "*" for i in returned)
        bad = [i for i in returned if not visible_to(tenant, owner.get(i))]
        tally.record(surface, "foreign_chunk" if bad else "ok", f"{tenant} {query[:40]!r}: {bad[:3]}")
        foreign.extend(f"{surface} {tenant}: {i}" for i in bad)

    for n in range(queries):
        tenant = rng.choice(TENANTS)
        query = rng.choice(QUESTIONS)
        extra = request_filter(rng, tenant, sources)
        tally.queries += 1
        try:
            hits = surfaces.kb.search(query, filters=merge_filters(tenant, extra)).hits
            check("python:kb.search", tenant, [h.id for h in hits], query)
        except QueryError:  # a query with nothing searchable in it (e.g. only NUL characters)
            tally.record("python:kb.search", "clear_error", query)

        call = ToolCall(id=f"c{n}", name="search_knowledge_base", args={"query": query[:500], "top_k": 10})
        [res] = surfaces.session_tool.execute([call], thread_id="t", filters=merge_filters(tenant, extra))
        check("tool:session-filters", tenant, [h["id"] for h in (res.content or {}).get("hits", [])], query)
        [res] = surfaces.bound_tools[tenant].execute([call], thread_id="t", filters=extra)
        check("tool:tenant-retriever", tenant, [h["id"] for h in (res.content or {}).get("hits", [])], query)

        args: dict[str, Any] = {"query": query[:2000], "top_k": 10, "filters": extra}
        try:
            _, out = asyncio.run(surfaces.mcp[tenant].call_tool("search_knowledge_base", args))
            check("mcp:search", tenant, [h["id"] for h in out["result"]], query)
        except ToolError as exc:  # e.g. a lone surrogate is not a valid string: a clear tool error
            tally.record("mcp:search", "clear_error" if "query" in str(exc) else "unclear", str(exc))
        probe = rng.choice(ids)
        try:
            _, chunk = asyncio.run(surfaces.mcp[tenant].call_tool("get_chunk", {"chunk_id": probe}))
            check("mcp:get_chunk", tenant, [chunk["id"]], probe)
        except ToolError:
            tally.record("mcp:get_chunk", "ok" if not visible_to(tenant, owner[probe]) else "unclear", probe)
            assert not visible_to(tenant, owner[probe]), f"get_chunk refused {tenant}'s own chunk {probe}"

        body = {"query": query, "top_k": 10, "filters": extra}
        response = surfaces.post("/v1/search", tenant, body)
        results = response.json().get("results", []) if response.status_code == 200 else []
        check("http:/v1/search", tenant, [r["id"] for r in results], query)

        if n % SLOW_EVERY:
            continue
        result = surfaces.agents[tenant].ask(query, thread_id=f"adv-{n}", filters=extra)
        check("python:Agent.ask", tenant, [e["id"] for e in result["evidence"]], query)
        answer = surfaces.post("/v1/ask", tenant, {"question": query, "filters": extra})
        evidence = answer.json().get("evidence", []) if answer.status_code == 200 else []
        check("http:/v1/ask", tenant, [e["id"] for e in evidence], query)
        chat = {"model": "haygraph", "messages": [{"role": "user", "content": query}]}
        completion = surfaces.post("/v1/chat/completions", tenant, chat)
        evidence = (
            completion.json().get("haygraph", {}).get("evidence", []) if completion.status_code == 200 else []
        )
        check("http:/v1/chat/completions", tenant, [e["id"] for e in evidence], query)

    assert foreign == []
    # not vacuous: every surface returned chunks for many queries (narrowing filters may leave none)
    assert len(answered) == 9 and min(answered.values()) >= queries // SLOW_EVERY // 4, answered
    # and the shared notice reached both tenants' searches (the widening filters never do)
    assert min(shared[s] for s in ("python:kb.search", "mcp:search", "http:/v1/search")) > 0, shared
