from haygraph.retrieval.formats.tables import (
    cell_text,
    clean_rows,
    header_index,
    markdown_table,
    split_title_rows,
)


class TestCellText:
    def test_one_line_and_escaped_pipe(self):
        assert cell_text("  Harbour\n station ") == "Harbour station"
        assert cell_text("a|b") == "a\\|b"
        assert cell_text(cell_text("a|b")) == "a\\|b"  # cleaning twice changes nothing
        assert cell_text(None) == "" and cell_text(12) == "12"


class TestCleanRows:
    def test_empty_rows_and_columns_go_short_rows_are_padded(self):
        rows = [["", "", "", ""], ["", "Room", "", "Seats"], ["", "Atlas", "", 12], ["", "Borealis"], [None]]
        assert clean_rows(rows) == [["Room", "Seats"], ["Atlas", "12"], ["Borealis", ""]]

    def test_nothing_left(self):
        assert clean_rows([["", None], []]) == []


class TestHeaderIndex:
    def test_title_row_and_note_above_the_header_are_passed_over(self):
        rows = [
            ["Meeting rooms 2026", "", ""],
            ["Room", "Seats", "Floor"],
            ["Atlas", "12", "3"],
            ["Cygnus", "20", "5"],
        ]
        assert header_index(rows) == 1

    def test_title_merged_across_the_width(self):
        rows = [["Fees", "Fees"], ["Level", "Fee"], ["B1", "120"], ["B2", "90"]]
        assert header_index(rows) == 1

    def test_empty_top_left_corner_is_still_the_header(self):
        rows = [["", "Q1", "Q2"], ["North", "10", "12"], ["South", "8", "9"]]
        assert header_index(rows) == 0

    def test_plain_table_and_single_row(self):
        assert header_index([["a", "b"], ["1", "2"]]) == 0
        assert header_index([["a", "b"]]) == 0


class TestSplitTitleRows:
    def test_title_lines_and_table(self):
        rows = clean_rows(
            [["Shuttle bus", "Shuttle bus", ""], [], ["Stop", "First", "Last"], ["Harbour", "06:40", "22:10"]]
        )
        lines, table = split_title_rows(rows)
        assert lines == ["Shuttle bus"]
        assert table == [["Stop", "First", "Last"], ["Harbour", "06:40", "22:10"]]


class TestMarkdownTable:
    def test_markdown_form(self):
        assert markdown_table([["Level", "Monthly fee"], ["B2", "90 EUR"], ["", ""]]) == (
            "| Level | Monthly fee |\n|---|---|\n| B2 | 90 EUR |"
        )

    def test_empty(self):
        assert markdown_table([]) == "" and markdown_table([["", " "]]) == ""
