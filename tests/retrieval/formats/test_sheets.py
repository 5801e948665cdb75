import datetime
from pathlib import Path

import pytest

from haygraph.retrieval.formats.sheets import cell_value, csv_to_markdown, sheet_markdown, xlsx_pages

openpyxl = pytest.importorskip("openpyxl")


class TestCellValue:
    @pytest.mark.parametrize(
        ("value", "fmt", "text"),
        [
            (12.0, "General", "12"),
            (7.5, "General", "7.5"),
            (0.15, "0%", "15%"),
            (datetime.datetime(2026, 3, 1), "yyyy-mm-dd", "2026-03-01"),
            (datetime.datetime(2026, 3, 1, 9, 30), "General", "2026-03-01 09:30:00"),
            (True, "General", "TRUE"),
            (None, "General", ""),
        ],
    )
    def test_as_a_reader_sees_it(self, value, fmt, text):
        assert cell_value(value, fmt) == text


class TestXlsxPages:
    def test_sheet_name_title_row_merged_cells_and_margins(self, tmp_path: Path):
        book = openpyxl.Workbook()
        sheet = book.active
        sheet.title = "Meeting rooms"
        sheet["B2"] = "Rooms of the Ningbo office"  # a title row, a blank row, the table from column B
        for r, row in enumerate(
            [("Room", "Seats", "Floor"), ("Atlas", 12, 3), ("Borealis", 6, 2), ("Draco", 4, None)]
        ):
            for c, value in enumerate(row):
                sheet.cell(row=4 + r, column=2 + c, value=value)
        sheet.merge_cells("D6:D7")  # Borealis and Draco share floor 2
        book.create_sheet("Empty")
        book.save(tmp_path / "rooms.xlsx")
        assert xlsx_pages(tmp_path / "rooms.xlsx") == [
            "# Meeting rooms\n\nRooms of the Ningbo office\n\n| Room | Seats | Floor |\n|---|---|---|\n"
            "| Atlas | 12 | 3 |\n| Borealis | 6 | 2 |\n| Draco | 4 | 2 |",
            "# Empty",
        ]

    def test_no_coordinates(self, tmp_path: Path):
        book = openpyxl.Workbook()
        book.active.append(["Room", "Seats"])
        book.active.append(["Atlas", 12])
        book.save(tmp_path / "b.xlsx")
        (page,) = xlsx_pages(tmp_path / "b.xlsx")
        assert "| A |" not in page and "| 1 |" not in page and "| Atlas | 12 |" in page


class TestCsv:
    def test_header_row_and_sniffed_delimiter(self):
        assert (
            csv_to_markdown(b"city;country\nParis;France\n")
            == "| city | country |\n|---|---|\n| Paris | France |"
        )

    def test_bom_quotes_and_pipes(self):
        data = '\ufeffname,notes\n"Smith, J.",a|b\n'.encode()
        assert csv_to_markdown(data) == "| name | notes |\n|---|---|\n| Smith, J. | a\\|b |"

    def test_not_text(self):
        with pytest.raises(UnicodeDecodeError):
            csv_to_markdown(b"\xff\xfe\x00bad", "utf-8")

    def test_sheet_without_rows(self):
        assert sheet_markdown("Notes", []) == "# Notes" and sheet_markdown("", []) == ""
