import datetime
from pathlib import Path

import pytest

from haygraph.retrieval.formats.sheets import cell_value, csv_to_markdown, sheet_markdown, xlsx_pages
from tests.bounded_calls import TIMEOUT, within

openpyxl = pytest.importorskip("openpyxl")
TABLE = "# Sheet\n\n| Room | Seats |\n|---|---|\n| Atlas | 12 |"


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

    def test_a_sheet_declaring_the_whole_grid_costs_its_stored_cells(self, tmp_path: Path):
        book = openpyxl.Workbook()
        book.active.append(["Room", "Seats"])
        book.active.append(["Atlas", 12])
        book.active["XFD1048576"].font = openpyxl.styles.Font(bold=True)  # styled, empty: the grid's corner
        book.save(tmp_path / "grid.xlsx")
        pages = within(TIMEOUT, lambda: xlsx_pages(tmp_path / "grid.xlsx"))  # the declared 1.7e10: hours
        assert pages == [TABLE]

    def test_values_are_kept_where_a_full_load_fails(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
        book = openpyxl.Workbook()
        book.active.append(["Room", "Seats"])
        book.active.append(["Atlas", 12])
        book.save(tmp_path / "pivot.xlsx")
        load = openpyxl.load_workbook

        def failing_full_load(*args, **kwargs):  # openpyxl fails so on some pivot-table parts
            if not kwargs.get("read_only"):
                raise TypeError("Nested.from_tree() missing 1 required positional argument: 'node'")
            return load(*args, **kwargs)

        monkeypatch.setattr(openpyxl, "load_workbook", failing_full_load)
        assert xlsx_pages(tmp_path / "pivot.xlsx") == [
            "# Sheet\n\n| Room | Seats |\n|---|---|\n| Atlas | 12 |"
        ]


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
