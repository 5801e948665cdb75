"""`run_direct`: same results and the same Haystack tracing spans as `Pipeline.run`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline, component, tracing
from haystack.tracing import Span, Tracer

from haygraph.retrieval.config import QueryConfig, RetrievalConfig
from haygraph.retrieval.errors import RetrievalError
from haygraph.retrieval.pipeline_runner import run_direct
from haygraph.retrieval.pipelines import build_query_pipeline, query_inputs
from tests.retrieval.store_helpers import small_store


class RecordingSpan(Span):
    def __init__(self, name: str, tags: dict[str, Any] | None, parent: RecordingSpan | None) -> None:
        self.name = name
        self.tags = dict(tags or {})
        self.parent = parent

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = value


class RecordingTracer(Tracer):
    """Keeps every span it opens, with its tags and parent."""

    def __init__(self) -> None:
        self.spans: list[RecordingSpan] = []
        self._stack: list[RecordingSpan] = []

    @contextlib.contextmanager
    def trace(
        self, operation_name: str, tags: dict[str, Any] | None = None, parent_span: Span | None = None
    ) -> Iterator[Span]:
        parent = parent_span if isinstance(parent_span, RecordingSpan) else None
        span = RecordingSpan(operation_name, tags, parent or (self._stack[-1] if self._stack else None))
        self.spans.append(span)
        self._stack.append(span)
        try:
            yield span
        finally:
            self._stack.pop()

    def current_span(self) -> Span | None:
        return self._stack[-1] if self._stack else None

    def components(self) -> list[tuple[str, str]]:
        """(name, type) of every component span, in order."""
        return [
            (s.tags["haystack.component.name"], s.tags["haystack.component.type"])
            for s in self.spans
            if s.name == "haystack.component.run"
        ]


@pytest.fixture
def tracer() -> Iterator[RecordingTracer]:
    """A recording tracer enabled for one test; the previous tracer is restored afterwards."""
    previous = tracing.tracer.actual_tracer
    recording = RecordingTracer()
    tracing.enable_tracing(recording)
    try:
        yield recording
    finally:
        tracing.tracer.actual_tracer = previous


def _spans_of(run: Any, tracer: RecordingTracer) -> tuple[list[str], list[tuple[str, str]]]:
    tracer.spans.clear()
    run()
    return [s.name for s in tracer.spans if s.name == "haystack.pipeline.run"], sorted(tracer.components())


class TestRunDirect:
    def test_spans_match_pipeline_run(self, tracer):
        pipe, _ = build_query_pipeline(RetrievalConfig(), small_store(), embed_query=False)
        data = query_inputs(pipe, "leave travel", query_embedding=[1.0, 0.0, 0.0])
        ours = _spans_of(lambda: run_direct(pipe, data), tracer)
        root = tracer.spans[0]
        assert root.name == "haystack.pipeline.run"
        assert all(s.parent is root for s in tracer.spans[1:])
        relevance = next(s for s in tracer.spans if s.tags.get("haystack.component.name") == "relevance")
        assert relevance.tags["haystack.component.fully_qualified_type"] == (
            "haygraph.retrieval.relevance_scorer.RelevanceScorer"
        )
        assert relevance.tags["haystack.component.visits"] == 1
        assert relevance.tags["haystack.component.input_spec"]["query_embedding"]["senders"] == []
        stock = _spans_of(lambda: pipe.run(data), tracer)
        assert (
            ours
            == stock
            == (
                ["haystack.pipeline.run"],
                sorted(
                    [
                        ("bm25", "FastBM25Retriever"),
                        ("dense", "FastEmbeddingRetriever"),
                        ("fusion", "HybridFusion"),
                        ("cut", "ScoreCliffCutter"),
                        ("relevance", "RelevanceScorer"),
                    ]
                ),
            )
        )

    def test_outputs_of_leaves_and_included(self):
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), QueryConfig(mode="bm25"))
        data = query_inputs(pipe, "leave")
        assert set(run_direct(pipe, data)) == {info.output}
        assert set(run_direct(pipe, data, include_outputs_from={"bm25"})) == {"bm25", info.output}

    def test_component_failure_names_the_component(self, tracer):
        @component
        class Broken:
            @component.output_types(documents=list[Document])
            def run(self, query: str) -> dict:
                raise ValueError("boom")

        pipe = Pipeline()
        pipe.add_component("broken", Broken())
        with pytest.raises(RetrievalError, match=r"component 'broken' \(Broken\) failed: boom"):
            run_direct(pipe, {"broken": {"query": "x"}})
        assert [s.name for s in tracer.spans] == ["haystack.pipeline.run", "haystack.component.run"]

    def test_no_tracer_no_tags_needed(self):
        assert not tracing.is_tracing_enabled()
        pipe, info = build_query_pipeline(RetrievalConfig(), small_store(), QueryConfig(mode="bm25"))
        assert run_direct(pipe, query_inputs(pipe, "leave"))[info.output]["documents"]


@pytest.mark.integration
class TestKnowledgeBaseSearchIsTraced:
    def test_search_opens_one_span_per_component_like_pipeline_run(self, handbook_store: Path, tracer):
        from haygraph.retrieval.knowledge_base import KnowledgeBase

        kb = KnowledgeBase.open(handbook_store)
        runner = kb.runner()
        query = "How many days of annual leave do I get?"
        _, searched = _spans_of(lambda: kb.search(query), tracer)
        assert [name for name, _ in searched] == sorted(runner.pipeline.graph.nodes)
        assert {name for name, _ in searched} == {
            "text_embedder",
            "bm25",
            "dense",
            "fusion",
            "cut",
            "relevance",
        }
        _, searched_again = _spans_of(lambda: kb.search(query), tracer)  # memoized query embedding
        assert searched_again == searched
        _, stock = _spans_of(lambda: runner.pipeline.run(query_inputs(runner.pipeline, query)), tracer)
        assert stock == searched
