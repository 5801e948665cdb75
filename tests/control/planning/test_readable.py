"""Markdown and HTML reduced to readable text for quoted units."""

from __future__ import annotations

import pytest

from haygraph.control.planning.readable import readable_inline, readable_lines, without_hidden_controls


class TestReadableInline:
    @pytest.mark.parametrize(
        ("markup", "text"),
        [
            ('See [the guide](https://x.example/a_b(1) "Guide").', "See the guide."),
            ('See <a href="https://x.example" target="_blank">the FAQ</a>.', "See the FAQ."),
            ("Use [PeopleHub][hub] now[^1].", "Use PeopleHub now."),
            ("![diagram](img/flow.png)Flow", "Flow"),
            (
                "Mail <it@nwh.example> or <https://hub.example/x>",
                "Mail it@nwh.example or https://hub.example/x",
            ),
            ("**Bold**, *italic*, __strong__ and ~~old~~", "Bold, italic, strong and old"),
            ("a<br>b<br/>c &amp; d&nbsp;e", "a b c & d\xa0e"),
            ('<span class="badge">beta</span> feature', "beta feature"),
            ("Text {{< hint >}}with{{< /hint >}} shortcode", "Text with shortcode"),
            ("before<!-- hidden -->after", "beforeafter"),
            ("3 \\* 4 \\_x\\_", "3 * 4 _x_"),
            ("报销请登录 [CostDesk](https://cost.example) 提交。", "报销请登录 CostDesk 提交。"),
        ],
    )
    def test_markup_becomes_text(self, markup: str, text: str) -> None:
        assert readable_inline(markup) == text

    def test_code_spans_are_kept_verbatim(self) -> None:
        # inside a code span nothing is markup: tags, links, stars and underscores stay
        assert readable_inline("Set `--max_size=<n>` or `[a](b)` and **`x*y*z`**") == (
            "Set `--max_size=<n>` or `[a](b)` and `x*y*z`"
        )

    def test_comparisons_are_not_tags(self) -> None:
        assert readable_inline("if a < b and c > d, or <5 days") == "if a < b and c > d, or <5 days"


class TestReadableLines:
    def test_markup_only_lines_are_blank_and_code_lines_flagged(self) -> None:
        text = (
            "<!--@include: ./parts/intro.md-->\n"
            "::: tip Note\n"
            "Read this.\n"
            ":::\n"
            "```bash\n"
            "haygraph index docs\n"
            "```\n"
            "{% include footer.md %}\n"
            "@include(common/setup.md)\n"
            "[hub]: https://hub.example\n"
            "~~~\n"
            "~~~"
        )
        assert readable_lines(text) == [
            ("", False),
            ("", False),
            ("Read this.", False),
            ("", False),
            ("", False),
            ("haygraph index docs", True),
            ("", False),
            ("", False),
            ("", False),
            ("", False),
            ("", False),
            ("", False),
        ]

    def test_multi_line_comment_keeps_line_count(self) -> None:
        lines = readable_lines("a\n<!-- one\ntwo -->b\nc")
        assert lines == [("a", False), ("", False), ("b", False), ("c", False)]

    def test_a_different_fence_inside_a_fence_is_code(self) -> None:
        lines = readable_lines("````md\n```\nx\n````")
        assert lines == [("", False), ("```", True), ("x", True), ("", False)]


class TestHiddenControls:
    RLO, PDF, RLI, PDI = "\u202e", "\u202c", "\u2067", "\u2069"

    def test_reordering_controls_are_removed(self) -> None:
        text = f"Open {self.RLO}fdp.exe{self.PDF} and {self.RLI}عربي{self.PDI} \u061c."
        assert without_hidden_controls(text) == "Open fdp.exe and عربي ."

    def test_marks_and_right_to_left_letters_stay(self) -> None:
        assert without_hidden_controls("a\u200eb\u200fc שלום") == "a\u200eb\u200fc שלום"

    def test_control_characters_go_tabs_and_line_breaks_stay(self) -> None:
        assert without_hidden_controls("a\x00b\x1b[31mc\x7f\x85d\te\nf\r\n") == "ab[31mcd\te\nf\r\n"
        # a NUL before a sentence (a careless export) no longer keeps the unit from being stripped
        claim = "Claims are due within 8 days."
        assert readable_inline(f"\x00 {claim}").strip() == claim

    def test_quoted_units_and_code_spans_lose_them(self) -> None:
        assert readable_inline(f"Run `rm {self.RLO}fr-{self.PDF}` in **{self.RLO}30{self.PDF} days**") == (
            "Run `rm fr-` in 30 days"
        )
