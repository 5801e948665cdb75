from haystack import Document

from haygraph.retrieval.chunk_positions import ChunkLocator, locate, page_of
from haygraph.retrieval.splitter import StructuredSplitter

TEXT = "# Leave\n\nAnnual leave is 20 days.\n\n# Travel\n\nBook flights early.\nUse TripDesk."


class TestLocate:
    def test_exact(self):
        assert locate(TEXT, "Annual leave is 20 days.") == (9, 33)
        assert TEXT[9:33] == "Annual leave is 20 days."

    def test_search_starts_at_the_previous_chunk(self):
        text = "same\n\nother\n\nsame"
        assert locate(text, "same", start_at=1) == (13, 17)  # the second occurrence, after the cursor
        assert locate(text, "same", start_at=0) == (0, 4)

    def test_rewritten_chunk_by_first_and_last_line(self):
        # the splitter rejoined the lines with a different separator
        span = locate(TEXT, "# Travel\nBook flights early.\nUse TripDesk.")
        assert (
            span is not None and TEXT[span[0] : span[1]] == "# Travel\n\nBook flights early.\nUse TripDesk."
        )

    def test_repeated_heading_path_is_left_out_of_the_span(self):
        # the splitter put the document title above a later section's chunk; only "# Travel" and its body
        # stand together in the source
        text = "# Handbook\n\n# Leave\n\nAnnual leave is 20 days.\n\n# Travel\n\nBook flights early."
        span = locate(text, "# Handbook\n\n# Travel\n\nBook flights early.")
        assert span is not None and text[span[0] : span[1]] == "# Travel\n\nBook flights early."

    def test_not_found(self):
        assert locate(TEXT, "nothing like this") is None
        assert locate(TEXT, "   ") is None


class TestPageOf:
    def test_pages(self):
        # pages start at 0, 100 and 250
        assert [page_of(o, [0, 100, 250]) for o in (0, 99, 100, 249, 250, 999)] == [1, 1, 2, 2, 3, 3]


class TestChunkLocator:
    def test_offsets_and_pages_from_the_splitter_output(self):
        pages = [
            " ".join(f"Rule {i} of page one covers leave case {i}." for i in range(12)),
            " ".join(f"Rule {i} of page two covers parking spot {i}." for i in range(12)),
        ]
        text = "\n\n".join(pages)
        source = Document(content=text, meta={"source_id": "a.pdf", "page_starts": [0, len(pages[0]) + 2]})
        chunks = StructuredSplitter(min_chars=100, max_chars=300).run(documents=[source])["documents"]
        located = ChunkLocator().run(documents=chunks, sources=[source])["documents"]
        assert len(located) == len(chunks) > 2
        for chunk in located:
            start, end = chunk.meta["char_start"], chunk.meta["char_end"]
            # the splitter may re-join sentences; the span starts and ends where the chunk does
            assert text[start:end].split() == chunk.content.split()
            assert "page_starts" not in chunk.meta
        assert located[0].meta["page"] == 1 and located[-1].meta["page"] == 2
        assert chunks[0].meta.get("char_start") is None  # inputs are not mutated

    def test_a_chunk_of_merged_short_pages_keeps_where_each_page_begins(self):
        pages = [
            "Cafeteria opens at 11:30.",
            "The bicycle shed closes at 22:00.",
            "Lost property: reception.",
        ]
        text = "\n\n".join(pages)
        starts = [0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4]
        source = Document(content=text, meta={"source_id": "h.pdf", "page_starts": starts})
        [chunk] = StructuredSplitter(min_chars=100, max_chars=300).run(documents=[source])["documents"]
        [out] = ChunkLocator().run(documents=[chunk], sources=[source])["documents"]
        assert out.meta["page"] == 1
        breaks = out.meta["page_breaks"]
        assert [page for _, page in breaks] == [2, 3]
        assert [out.content[at:].split("\n")[0] for at, _ in breaks] == pages[1:]
        # a chunk rewritten by the splitter (a heading repeated above it): each page's first line is found
        rewritten = Document(content="# Handbook\n\n" + text, meta={"source_id": "h.pdf"})
        [moved] = ChunkLocator().run(documents=[rewritten], sources=[source])["documents"]
        assert [rewritten.content[at:].split("\n")[0] for at, _ in moved.meta["page_breaks"]] == pages[1:]
        # a chunk within one page has no breaks
        one = Document(content=pages[1], meta={"source_id": "h.pdf"})
        [single] = ChunkLocator().run(documents=[one], sources=[source])["documents"]
        assert single.meta["page"] == 2 and "page_breaks" not in single.meta

    def test_sources_are_matched_by_tenant_and_source_id(self):
        a = Document(content="alpha beta", meta={"source_id": "x", "tenant": "t1"})
        b = Document(content="gamma alpha beta", meta={"source_id": "x", "tenant": "t2"})
        chunk = Document(content="alpha beta", meta={"source_id": "x", "tenant": "t2"})
        [out] = ChunkLocator().run(documents=[chunk], sources=[a, b])["documents"]
        assert (out.meta["char_start"], out.meta["char_end"]) == (6, 16)
        assert "page" not in out.meta  # no page starts: no page

    def test_unknown_source_gets_no_offsets(self):
        [out] = ChunkLocator().run(documents=[Document(content="x", meta={"source_id": "?"})], sources=[])[
            "documents"
        ]
        assert "char_start" not in out.meta

    def test_to_dict_round_trip(self):
        data = ChunkLocator().to_dict()
        assert data == {"type": "haygraph.retrieval.chunk_positions.ChunkLocator", "init_parameters": {}}
        assert ChunkLocator.from_dict(data).to_dict() == data
