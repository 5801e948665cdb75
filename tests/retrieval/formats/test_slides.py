from pathlib import Path

import pytest

from haygraph.retrieval.formats.slides import pptx_pages

pptx = pytest.importorskip("pptx")


def test_title_bullets_text_and_table_per_slide(tmp_path: Path):
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])  # title and content
    slide.shapes.title.text = "Shuttle bus times"
    body = slide.placeholders[1].text_frame
    body.text = "Runs on working days"
    body.add_paragraph().text = "Free for staff"
    body.paragraphs[1].level = 1
    table = slide.shapes.add_table(3, 3, Inches(0.5), Inches(4), Inches(8), Inches(1.5)).table
    for r, row in enumerate(
        [
            ("Stop", "First bus", "Last bus"),
            ("Harbour station", "06:40", "22:10"),
            ("Airport", "05:50", "23:00"),
        ]
    ):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(1, 2).merge(
        table.cell(2, 2)
    )  # python-pptx, as PowerPoint, moves both texts into the merged cell
    deck.slides.add_slide(deck.slide_layouts[6])  # blank: an empty page keeps slide numbers
    note = deck.slides.add_slide(deck.slide_layouts[5])
    note.shapes.title.text = "Contacts"
    note.shapes.add_textbox(
        Inches(1), Inches(2), Inches(6), Inches(1)
    ).text_frame.text = "Desk: extension 8050"
    note.notes_slide.notes_text_frame.text = "Speaker script, not slide content"
    deck.save(tmp_path / "deck.pptx")
    assert pptx_pages(tmp_path / "deck.pptx") == [
        "# Shuttle bus times\n\n- Runs on working days\n  - Free for staff\n\n"
        "| Stop | First bus | Last bus |\n|---|---|---|\n| Harbour station | 06:40 | 22:10 23:00 |\n"
        "| Airport | 05:50 | 22:10 23:00 |",
        "",
        "# Contacts\n\nDesk: extension 8050",
    ]
