import re
import zipfile
from pathlib import Path

import pytest

from haygraph.retrieval.formats.docx import docx_to_markdown

docx = pytest.importorskip("docx")

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def _with_footnote(path: Path, anchor: str, note: str) -> None:
    """Add a footnote to a python-docx file (python-docx writes none): the part, its relation, a reference."""
    with zipfile.ZipFile(path) as package:
        parts = {name: package.read(name) for name in package.namelist()}
    parts["word/footnotes.xml"] = (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:footnotes xmlns:w="{W}">'
        '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
        f'<w:footnote w:id="1"><w:p><w:r><w:t>{note}</w:t></w:r></w:p></w:footnote></w:footnotes>'
    ).encode()
    parts["word/_rels/document.xml.rels"] = parts["word/_rels/document.xml.rels"].replace(
        b"</Relationships>",
        b'<Relationship Id="rIdFoot" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
        b'footnotes" Target="footnotes.xml"/></Relationships>',
    )
    parts["[Content_Types].xml"] = parts["[Content_Types].xml"].replace(
        b"</Types>",
        b'<Override PartName="/word/footnotes.xml" ContentType="application/'
        b'vnd.openxmlformats-officedocument.wordprocessingml.footnotes+xml"/></Types>',
    )
    parts["word/document.xml"] = parts["word/document.xml"].replace(
        f"<w:t>{anchor}</w:t></w:r>".encode(),
        f'<w:t>{anchor}</w:t></w:r><w:r><w:footnoteReference w:id="1"/></w:r>'.encode(),
    )
    with zipfile.ZipFile(path, "w") as package:
        for name, data in parts.items():
            package.writestr(name, data)


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    document = docx.Document()
    document.add_heading("Parking policy", level=0)
    document.add_paragraph("Monthly parking fees by level:")
    table = document.add_table(rows=4, cols=3)
    for r, row in enumerate(
        [
            ("Level", "Monthly fee", "Spaces"),
            ("B1", "120 EUR", "80"),
            ("B2", "90 EUR", "150"),
            ("Roof", "60 EUR", "40"),
        ]
    ):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    merged = table.cell(2, 2).merge(table.cell(3, 2))
    merged.text = "190"
    document.add_heading("Rules", level=1)
    document.add_paragraph("Park only in your own bay.", style="List Bullet")
    document.add_paragraph("Visitors park on the roof.", style="List Bullet 2")
    document.add_paragraph("Apply in PeopleHub.", style="List Number")
    document.add_paragraph("Collect the permit.", style="List Number")
    document.add_heading("Charging", level=2)
    paragraph = document.add_paragraph("Chargers are free")
    paragraph.add_run(" for staff.")
    document.add_comment(paragraph.runs, text="Reviewer remark: check with legal", author="Ann")
    path = tmp_path / "policy.docx"
    document.save(str(path))
    return path


class TestDocxToMarkdown:
    def test_headings_lists_and_tables(self, policy: Path):
        assert docx_to_markdown(policy).split("\n\n") == [
            "# Parking policy",  # the Title; Heading 1 is then ##
            "Monthly parking fees by level:",
            "| Level | Monthly fee | Spaces |\n|---|---|---|\n| B1 | 120 EUR | 80 |\n| B2 | 90 EUR | 190 |\n"
            "| Roof | 60 EUR | 190 |",  # the merged cell repeats its value
            "## Rules",
            "- Park only in your own bay.\n  - Visitors park on the roof.\n"
            "1. Apply in PeopleHub.\n2. Collect the permit.",
            "### Charging",
            "Chargers are free for staff.",
        ]

    def test_comments_are_dropped(self, policy: Path):
        assert "Reviewer remark" not in docx_to_markdown(policy)

    def test_footnotes_are_kept_apart(self, policy: Path):
        _with_footnote(policy, "Chargers are free", "Free until the end of 2026.")
        text = docx_to_markdown(policy)
        assert "Chargers are free[^1] for staff." in text
        assert text.endswith("\n\n[^1]: Free until the end of 2026.")

    def test_without_a_title_heading_1_is_level_1(self, tmp_path: Path):
        document = docx.Document()
        document.add_heading("Scope", level=1)
        document.add_heading("Details", level=2)
        document.add_paragraph("Body.")
        document.save(str(tmp_path / "a.docx"))
        assert docx_to_markdown(tmp_path / "a.docx") == "# Scope\n\n## Details\n\nBody."

    def test_tracked_changes_read_as_accepted(self, tmp_path: Path):
        document = docx.Document()
        paragraph = document.add_paragraph("The fee is ")
        p = paragraph._p
        p.append(p.makeelement(f"{{{W}}}del", {}))
        p[-1].append(p.makeelement(f"{{{W}}}r", {}))
        p[-1][-1].append(p.makeelement(f"{{{W}}}delText", {}))
        p[-1][-1][-1].text = "80 EUR"
        p.append(p.makeelement(f"{{{W}}}ins", {}))
        p[-1].append(p.makeelement(f"{{{W}}}r", {}))
        p[-1][-1].append(p.makeelement(f"{{{W}}}t", {}))
        p[-1][-1][-1].text = "90 EUR"
        document.save(str(tmp_path / "t.docx"))
        assert re.sub(r"\s+", " ", docx_to_markdown(tmp_path / "t.docx")) == "The fee is 90 EUR"
