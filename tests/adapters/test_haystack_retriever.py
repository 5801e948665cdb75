"""HaystackRetriever over the real handbook store: Haystack hits -> control-plane `Evidence`."""

from __future__ import annotations

from pathlib import Path

import pytest

from haygraph.adapters.haystack_retriever import HaystackRetriever
from haygraph.control.evidence import Evidence, Retriever
from haygraph.retrieval.knowledge_base import KnowledgeBase

pytestmark = pytest.mark.integration

LEAVE_QUESTION = "How many days of annual leave do I get?"
LEAVE_ONLY = {"field": "meta.source_id", "operator": "==", "value": "leave-policy.md"}


@pytest.fixture(scope="module")
def kb(handbook_store: Path) -> KnowledgeBase:
    return KnowledgeBase.open(handbook_store)


@pytest.fixture(scope="module")
def retriever(kb: KnowledgeBase) -> HaystackRetriever:
    r = HaystackRetriever(kb)
    r.warm_up()
    return r


class TestHaystackRetriever:
    def test_implements_the_control_protocol(self, retriever: HaystackRetriever) -> None:
        assert isinstance(retriever, Retriever)

    def test_evidence_mirrors_the_knowledge_base_hits(
        self, kb: KnowledgeBase, retriever: HaystackRetriever
    ) -> None:
        found = retriever.retrieve(LEAVE_QUESTION, top_k=5)
        q = kb.config.query
        same = q.model_copy(update={"top_k": 5, "cut": q.cut.model_copy(update={"max_keep": 5})})
        hits = kb.search(LEAVE_QUESTION, config=same).hits
        assert found and all(isinstance(e, Evidence) for e in found)
        assert [e.id for e in found] == [h.id for h in hits[:5]]
        for ev, hit in zip(found, hits, strict=False):
            assert ev.text == hit.content and ev.text.strip()
            assert ev.score == pytest.approx(hit.score)
            assert ev.source == hit.source and ev.id.startswith(f"{ev.source}::")
            assert ev.heading_path == hit.heading_path
            assert (ev.char_start, ev.char_end, ev.page) == (hit.char_start, hit.char_end, None)
            assert ev.char_start is not None and ev.char_end is not None and ev.char_start < ev.char_end
            assert ev.relevance is not None and 0.0 < ev.relevance < 1.0
            assert ev.relevance == pytest.approx(hit.relevance)
            assert ev.meta["source_id"] == ev.source
            assert 0.0 <= ev.meta["term_coverage"] <= 1.0
        assert [e.score for e in found] == sorted((e.score for e in found), reverse=True)
        top = found[0]
        assert top.source == "leave-policy.md"
        assert top.heading_path and top.heading_path[0]  # heading path of the Markdown section
        assert top.relevance is not None and top.relevance >= 0.5

    @pytest.mark.parametrize("top_k", [1, 2, 4])
    def test_top_k_is_an_upper_bound(self, retriever: HaystackRetriever, top_k: int) -> None:
        found = retriever.retrieve("expense claim approval and receipts", top_k=top_k)
        assert 1 <= len(found) <= top_k

    def test_larger_top_k_can_return_more(self, kb: KnowledgeBase) -> None:
        no_cut = kb.config.query.model_copy(
            update={"cut": kb.config.query.cut.model_copy(update={"enabled": False})}
        )
        r = HaystackRetriever(kb, no_cut)
        small, large = r.retrieve(LEAVE_QUESTION, top_k=2), r.retrieve(LEAVE_QUESTION, top_k=6)
        assert len(small) == 2 and len(large) == 6
        assert [e.id for e in large[:2]] == [e.id for e in small]

    def test_filters_are_passed_to_the_pipeline(self, retriever: HaystackRetriever) -> None:
        question = "who approves an expense claim"
        unfiltered = retriever.retrieve(question, top_k=5)
        assert unfiltered[0].source == "expense-reimbursement.md"
        filtered = retriever.retrieve(question, top_k=5, filters=LEAVE_ONLY)
        assert filtered and {e.source for e in filtered} == {"leave-policy.md"}

    def test_lookup_returns_the_stored_chunk(self, retriever: HaystackRetriever) -> None:
        found = retriever.retrieve(LEAVE_QUESTION, top_k=3)
        for ev in found:
            chunk = retriever.lookup(ev.id)
            assert chunk is not None
            assert (chunk.id, chunk.text, chunk.source, chunk.heading_path) == (
                ev.id,
                ev.text,
                ev.source,
                ev.heading_path,
            )
            assert chunk.score == 0.0

    def test_lookup_unknown_id_is_none(self, retriever: HaystackRetriever) -> None:
        assert retriever.lookup("leave-policy.md::does-not-exist") is None
        assert retriever.lookup("") is None


class TestCrossLanguage:
    """Over a store whose encoder reads both languages, the other language's best chunks follow."""

    QUESTION = "全职员工每年有多少天年假？"

    def test_other_language_chunks_follow_the_ranked_ones(self, kb: KnowledgeBase) -> None:
        assert set(kb.config.embedder.languages) >= {"en", "zh"}  # the handbook's Chinese half chose e5
        plain = HaystackRetriever(kb).retrieve(self.QUESTION, top_k=3)
        cross = HaystackRetriever(kb, cross_language=2).retrieve(self.QUESTION, top_k=3)
        assert [e.id for e in cross[: len(plain)]] == [e.id for e in plain]
        extra = cross[len(plain) :]
        assert 1 <= len(extra) <= 2
        assert all(e.meta.get("language") == "en" and e.meta.get("other_language") is True for e in extra)
        assert not any(e.meta.get("other_language") for e in plain)
        assert not {e.id for e in extra} & {e.id for e in plain}

    def test_filters_hold_for_the_other_language_too(self, kb: KnowledgeBase) -> None:
        only = {"field": "meta.source_id", "operator": "==", "value": "benefits.txt"}
        found = HaystackRetriever(kb, cross_language=2).retrieve(self.QUESTION, top_k=3, filters=only)
        assert found and {e.source for e in found} == {"benefits.txt"}

    def test_off_by_default_and_a_negative_count_is_refused(self, kb: KnowledgeBase) -> None:
        assert HaystackRetriever(kb).cross_language == 0
        with pytest.raises(ValueError, match="cross_language must be >= 0"):
            HaystackRetriever(kb, cross_language=-1)
