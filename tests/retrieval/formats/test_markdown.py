import pytest

from haygraph.retrieval.formats.markdown import strip_non_content


class TestStripNonContent:
    def test_inline_script_gives_no_words(self):
        text = "The Friday special is <script>window.x=1</script>lentil soup for 6 euros."
        assert strip_non_content(text) == "The Friday special is lentil soup for 6 euros."

    @pytest.mark.parametrize(
        "hidden",
        [
            "<style>p { color: red }</style>",
            "<!-- editor: check the price -->",
            "<template><p>Template words</p></template>",
            "<noscript>Enable JavaScript words</noscript>",
            '<iframe src="x">Frame words</iframe>',
            '<SCRIPT type="module">\nimport x from "y"\n</SCRIPT>',
            '<script src="a.js"/>',
        ],
    )
    def test_hidden_elements_and_comments(self, hidden):
        assert strip_non_content(f"Before.\n\n{hidden}\n\nAfter.") == "Before.\n\n\n\nAfter."

    def test_code_keeps_what_it_shows(self):
        text = (
            "Use `<script>` tags.\n\n```html\n<script>keep()</script>\n<!-- kept -->\n```\n\n"
            "~~~\n<style>x</style>\n~~~"
        )
        assert strip_non_content(text) == text

    def test_script_with_backticks_inside_is_still_removed(self):
        assert strip_non_content("a <script>var s = `x`;</script>b") == "a b"

    def test_unclosed_comment_runs_to_the_end_as_in_a_browser(self):
        assert strip_non_content("Text.\n<!-- never closed\nmore") == "Text.\n"

    def test_text_without_markup_is_untouched(self):
        text = "# Leave\n\n| a | b |\n|---|---|\n| 1 < 2 | x |\n"
        assert strip_non_content(text) == text
