from pathlib import Path

import pytest

from haygraph.retrieval.formats.pdf import heading_levels, join_hyphenated, pdf_pages, running_lines

fpdf = pytest.importorskip("fpdf")


def _report(path: Path) -> Path:
    """Three A4 pages as a typeset report: running header, "Page N of 3", headings, a ruled table."""

    class Report(fpdf.FPDF):
        def header(self) -> None:
            self.set_font("Helvetica", size=8)
            self.cell(0, 8, "ACME Ltd - Internal handbook 2026", align="R")
            self.ln(12)

        def footer(self) -> None:
            self.set_y(-15)
            self.set_font("Helvetica", size=8)
            self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="C")

    pdf = Report()
    for number, title in enumerate(["Parking", "Meeting rooms", "Canteen"]):
        pdf.add_page()
        pdf.set_font("Helvetica", size=16)
        pdf.cell(0, 10, title, new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=11)
        if number == 0:
            for line in [
                "Staff park in the garage under the tower. Monthly",
                "permits are sold at the desk; a per-",
                "mit is valid for one level only.",
            ]:
                pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
            with pdf.table() as table:
                for row in [
                    ("Level", "Monthly fee", "Spaces"),
                    ("B1", "120 EUR", "80"),
                    ("B2", "90 EUR", "150"),
                ]:
                    cells = table.row()
                    for value in row:
                        cells.cell(value)
                cells = table.row()
                cells.cell("Roof")
                cells.cell("closed in winter", colspan=2)
            pdf.ln(4)
            pdf.multi_cell(0, 6, "Electric cars charge free of charge.", new_x="LMARGIN", new_y="NEXT")
        else:
            pdf.multi_cell(
                0,
                6,
                f"Text of the {title.lower()} page. It has one paragraph.",
                new_x="LMARGIN",
                new_y="NEXT",
            )
    pdf.output(str(path))
    return path


class TestPdfPages:
    def test_pages_tables_headings_without_furniture(self, tmp_path: Path):
        pages = pdf_pages(_report(tmp_path / "report.pdf"))
        assert len(pages) == 3
        assert pages[0] == (
            "# Parking\n\n"
            "Staff park in the garage under the tower. Monthly\npermits are sold at the desk; "
            "a permit is valid for one level only.\n\n"
            "| Level | Monthly fee | Spaces |\n|---|---|---|\n| B1 | 120 EUR | 80 |\n| B2 | 90 EUR | 150 |\n"
            "| Roof | closed in winter | closed in winter |\n\n"
            "Electric cars charge free of charge."
        )
        assert pages[1] == "# Meeting rooms\n\nText of the meeting rooms page. It has one paragraph."
        assert not any("ACME Ltd" in page or "of 3" in page for page in pages)

    def test_pages_are_indexed_with_offsets_and_page_numbers(self, tmp_path: Path):
        from haygraph.retrieval.converters import MultiFormatConverter

        _report(tmp_path / "report.pdf")
        (doc,) = MultiFormatConverter().run(sources=[tmp_path / "report.pdf"])["documents"]
        starts = doc.meta["page_starts"]
        assert doc.content[starts[1] :].startswith("# Meeting rooms")
        assert doc.content[starts[2] :].startswith("# Canteen")


class TestRunningLines:
    def test_masked_digits_and_edges_only(self):
        pages = [
            ["Handbook", "Intro text", "Page 1 of 3"],
            ["Handbook", "More", "Page 2 of 3"],
            ["Other text", "Handbook in the middle", "x", "y", "Page 3 of 3"],
        ]
        assert running_lines(pages) == {"handbook", "page # of #"}

    def test_one_page_has_none(self):
        assert running_lines([["Page 1", "Body"]]) == set()


class TestHeadingLevels:
    def test_larger_short_lines_are_headings(self):
        lines = [
            ("Title", 20.0),
            ("Section", 14.0),
            ("Body " * 60, 11.0),
            ("More body text", 11.0),
            ("A long line set large " * 8, 14.5),
        ]
        assert heading_levels(lines) == {20.0: 1, 14.0: 2}


class TestJoinHyphenated:
    @pytest.mark.parametrize(
        ("text", "joined"),
        [
            ("appli-\ncation", "application"),
            ("soft\u00ad\nhyphen", "softhyphen"),
            ("COVID-\n19", "COVID-\n19"),
            ("self-\nService", "self-\nService"),
            ("end of list -\nnext", "end of list -\nnext"),
            ("para-\n\nnew", "para-\n\nnew"),
        ],
    )
    def test_only_a_word_broken_at_a_line_end(self, text, joined):
        assert join_hyphenated(text) == joined
