from __future__ import annotations

from typing import Any

import pytest
from haystack import Document
from haystack.utils.filters import document_matches_filter

from haygraph.adapters.errors import ScopeError
from haygraph.adapters.service.errors import BadRequestError
from haygraph.adapters.service.tenancy import (
    ScopedRetriever,
    check_filters,
    merge_filters,
    tenant_filter,
    thread_key,
)
from haygraph.control import Evidence

A_DOC = Document(content="a", meta={"tenant": "A", "source_id": "x.md"})
B_DOC = Document(content="b", meta={"tenant": "B", "source_id": "x.md"})
NO_TENANT = Document(content="n", meta={"source_id": "x.md"})
SHARED_DOC = Document(content="s", meta={"tenant": "*", "source_id": "handbook.md"})


class TestMergeFilters:
    def test_tenant_alone(self) -> None:
        assert merge_filters("A", None) == {"field": "meta.tenant", "operator": "in", "value": ["A", "*"]}

    def test_a_tenant_sees_its_own_and_shared_documents_never_another_tenants(self) -> None:
        scope = merge_filters("A", None)
        assert document_matches_filter(scope, A_DOC) and document_matches_filter(scope, SHARED_DOC)
        assert not document_matches_filter(scope, B_DOC)
        assert not document_matches_filter(scope, NO_TENANT)

    def test_no_caller_is_bound_to_the_shared_marker(self) -> None:
        with pytest.raises(ScopeError, match=r"'\*' marks documents shared by every tenant"):
            ScopedRetriever(lambda: None, "*")  # type: ignore[arg-type,return-value]

    def test_no_tenant_passes_request_filters_through(self) -> None:
        request = {"field": "meta.source_id", "operator": "==", "value": "x.md"}
        assert merge_filters(None, request) is request
        assert merge_filters(None, None) is None

    def test_request_filters_narrow_never_widen(self) -> None:
        # A request trying to widen with OR still only sees its own tenant: AND(tenant, request).
        widen = {
            "operator": "OR",
            "conditions": [
                {"field": "meta.tenant", "operator": "==", "value": "B"},
                {"field": "meta.source_id", "operator": "==", "value": "x.md"},
            ],
        }
        merged = merge_filters("A", widen)
        assert merged == {"operator": "AND", "conditions": [tenant_filter("A"), widen]}
        assert document_matches_filter(merged, A_DOC)
        assert not document_matches_filter(merged, B_DOC)
        assert not document_matches_filter(merged, NO_TENANT)
        narrow = {"field": "meta.source_id", "operator": "==", "value": "y.md"}
        assert not document_matches_filter(merge_filters("A", narrow), A_DOC)


class TestCheckFilters:
    def test_valid_filters_returned(self) -> None:
        f = {"field": "meta.source_id", "operator": "in", "value": ["a", "b"]}
        assert check_filters(f) is f
        assert check_filters(None) is None

    @pytest.mark.parametrize(
        "bad",
        [
            {"field": "meta.x", "operator": "~=", "value": 1},
            {"operator": "AND"},
            {"field": "meta.x", "value": 1},
            {},
            ["not", "a", "dict"],
        ],
    )
    def test_invalid_filters_are_bad_requests(self, bad: Any) -> None:
        with pytest.raises(BadRequestError, match="filter"):
            check_filters(bad)


class TestThreadKey:
    def test_namespaced_per_tenant(self) -> None:
        assert thread_key("A", "t1") == "A::t1"
        assert thread_key(None, "t1") == "::t1"
        assert thread_key("A", "t1") != thread_key("B", "t1")

    def test_tenant_cannot_forge_another_namespace(self) -> None:
        # "A:" + "::" + "x" and "A" + "::" + ":x" would collide, but ":" is not allowed in thread ids.
        with pytest.raises(BadRequestError, match="thread id"):
            thread_key("A", ":x")

    @pytest.mark.parametrize("bad", ["", "a b", "a/b", "x" * 129, "a:b"])
    def test_invalid_ids(self, bad: str) -> None:
        with pytest.raises(BadRequestError, match="thread id"):
            thread_key("A", bad)


class Recording:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, dict[str, Any] | None]] = []

    def retrieve(
        self, query: str, *, top_k: int = 5, filters: dict[str, Any] | None = None
    ) -> list[Evidence]:
        self.calls.append((query, top_k, filters))
        return []


class TestScopedRetriever:
    def test_every_call_carries_the_tenant_filter(self) -> None:
        base = Recording()
        scoped = ScopedRetriever(lambda: base, "A")
        scoped.retrieve("q", top_k=3)
        request = {"field": "meta.source_id", "operator": "==", "value": "x.md"}
        scoped.retrieve("q", top_k=5, filters=request)
        assert base.calls == [
            ("q", 3, tenant_filter("A")),
            ("q", 5, {"operator": "AND", "conditions": [tenant_filter("A"), request]}),
        ]

    def test_uses_the_current_base_each_call(self) -> None:
        first, second = Recording(), Recording()
        current = [first]
        scoped = ScopedRetriever(lambda: current[0], None)
        scoped.retrieve("q")
        current[0] = second
        scoped.retrieve("q")
        assert len(first.calls) == 1 and len(second.calls) == 1 and second.calls[0][2] is None
