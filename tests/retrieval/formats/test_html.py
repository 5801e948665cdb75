import re

import pytest

from haygraph.retrieval.formats.html import html_blocks, html_to_markdown, main_content_filter

# A documentation page as a browser saves it: landmarks around the content.
SAVED_PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>Install | AcmeDB docs</title>
<style>.nav { color: teal }</style><script>var analyticsToken = "zq-tracker-993";</script></head>
<body>
<div class="navbar" role="navigation"><a href="/">AcmeDB Documentation</a>
<ul><li><a href="/blog">Engineering blog</a></li>
<li><a href="/pricing">Pricing plans</a></li></ul><button>Toggle navigation menu</button></div>
<header><p>Version switcher: stable</p></header>
<aside class="sidebar"><ul><li><a href="#a">Sidebar link about backups</a></li></ul></aside>
<main>
<article>
<header><h1>Install AcmeDB</h1></header>
<p>AcmeDB needs <strong>4 GB</strong> of memory and listens on port 7411.</p>
<!-- TODO: mention the beta installer -->
<template><p>Unrendered template text</p></template>
<noscript>Please enable JavaScript for the playground</noscript>
<iframe src="https://video.example/embed"><p>Embedded video fallback words</p></iframe>
<h2>Supported systems</h2>
<table><tr><th>System</th><th>Package</th><th>Notes</th></tr>
<tr><td rowspan="2">Linux</td><td>deb</td><td>Debian, Ubuntu</td></tr>
<tr><td>rpm</td><td>Fedora</td></tr>
<tr><td>macOS</td><td colspan="2">Homebrew only</td></tr></table>
<pre>acmedb start --port 7411</pre>
<footer><p>Page last reviewed in March</p></footer>
</article>
</main>
<div role="dialog" class="modal"><p>Search these documents by typing below</p></div>
<footer class="site"><p>Copyright AcmeDB Foundation. Built with a static site generator.</p></footer>
<script>document.write("injected words from a script");</script>
</body></html>"""

FURNITURE = [
    "AcmeDB Documentation",
    "Engineering blog",
    "Pricing plans",
    "Toggle navigation",
    "Version switcher",
    "Sidebar link",
    "Search these documents",
    "Copyright AcmeDB",
    "static site generator",
]
NOT_CONTENT = [
    "zq-tracker",
    "analyticsToken",
    "color: teal",
    "TODO",
    "Unrendered template",
    "enable JavaScript",
    "Embedded video",
    "injected words",
]


class TestPageFurniture:
    def test_no_word_of_navigation_footer_or_hidden_elements(self):
        text = html_to_markdown(SAVED_PAGE)
        for phrase in FURNITURE + NOT_CONTENT:
            assert phrase not in text, phrase

    def test_the_content_with_its_structure(self):
        text = html_to_markdown(SAVED_PAGE)
        assert text.split("\n\n") == [
            "# Install AcmeDB",
            "AcmeDB needs 4 GB of memory and listens on port 7411.",
            "## Supported systems",
            "| System | Package | Notes |\n|---|---|---|\n| Linux | deb | Debian, Ubuntu |\n"
            "| Linux | rpm | Fedora |\n| macOS | Homebrew only | Homebrew only |",
            "```\nacmedb start --port 7411\n```",
            "Page last reviewed in March",  # the article's own footer is content
        ]

    def test_blocks_say_whether_they_stand_in_main(self):
        blocks, in_main = html_blocks("<p>Outside</p><main><p>Inside</p></main><div><p>After</p></div>")
        assert list(zip(blocks, in_main, strict=True)) == [
            ("Outside", False),
            ("Inside", True),
            ("After", False),
        ]


class TestMainContent:
    # No landmarks at all: navigation and footer in plain <div>s, which only trafilatura can tell apart.
    PLAIN = (
        "<html><body><div class='menu'><a href='/'>Home</a> | "
        "<a href='/products'>Our product catalogue</a> | "
        "<a href='/careers'>Careers at Globex</a></div><div class='content'><h1>Returns</h1>"
        + "".join(
            f"<p>Returned item number {i} is refunded within fourteen days of arrival at the warehouse, "
            f"after the quality check of the parcel and its contents by our returns team.</p>"
            for i in range(6)
        )
        + "</div><div class='footer'><p>Globex Corporation, all rights reserved, imprint and terms</p></div>"
        "</body></html>"
    )

    def test_trafilatura_drops_unmarked_furniture(self):
        text = html_to_markdown(self.PLAIN)
        assert "# Returns" in text and text.count("refunded within fourteen days") == 6
        for phrase in ["Our product catalogue", "Careers at Globex", "all rights reserved"]:
            assert phrase not in text

    def test_without_main_content_every_block_is_kept(self):
        text = html_to_markdown(self.PLAIN, main_content=False)
        assert "Careers at Globex" in text and "all rights reserved" in text

    def test_filter_keeps_items_rows_and_headings_of_kept_sections(self):
        blocks = [
            "# Guide",
            "Kept paragraph here.",
            "Dropped paragraph there.",
            "- kept item\n- dropped item",
            "| k | v |\n|---|---|\n| a | kept row |\n| b | dropped row |",
            "```\ncode stays\n```",
            "## Empty",
            "Gone too.",
        ]
        main = "Kept paragraph here. kept item | a | kept row |"
        assert main_content_filter(blocks, main) == [
            "# Guide",
            "Kept paragraph here.",
            "- kept item",
            "| k | v |\n|---|---|\n| a | kept row |",
            "```\ncode stays\n```",
        ]

    def test_filter_keeps_what_the_page_marks_as_main(self):
        assert main_content_filter(["Inside main", "Outside"], "nothing", [True, False]) == ["Inside main"]

    def test_a_listing_page_trafilatura_reads_as_boilerplate_keeps_every_block(self, monkeypatch):
        import haygraph.retrieval.formats.html as html_module

        gallery = (
            "<html><body><h1>Format gallery</h1>"
            + "".join(
                f"<h4>Group {g}</h4><ul>"
                + "".join(f"<li><a href='/{g}{i}'>Format {g}{i}</a></li>" for i in range(5))
                + "</ul>"
                for g in "ABCDEFGH"
            )
            + "</body></html>"
        )
        monkeypatch.setattr(
            html_module, "_main_text", lambda html: "Format gallery Format A0"
        )  # 3 of 100 words
        text = html_to_markdown(gallery)
        assert text.count("#### Group") == 8 and "- Format H4" in text
        article = (
            "<html><body><div>Menu Home Shop Careers</div><h1>Returns</h1>" + "<p>Refunds in 14 days.</p>" * 5
        )
        monkeypatch.setattr(html_module, "_main_text", lambda html: "Returns " + "Refunds in 14 days. " * 5)
        assert "Careers" not in html_to_markdown(article + "</body></html>")  # kept most: its choice stands

    def test_a_headings_permalink_anchor_gives_no_text(self):
        page = (
            '<h2>Install<a class="headerlink" href="#install" title="Permalink to this heading">¶</a></h2>'
            "<p>Run pip.</p>"
        )
        assert html_to_markdown(page, main_content=False) == "## Install\n\nRun pip."

    @pytest.mark.parametrize("fragment", ["<p>Epsilon body only.</p>", "<h2>Delta</h2><p>Delta body.</p>"])
    def test_short_fragments_keep_everything(self, fragment, caplog):
        text = html_to_markdown(fragment)
        assert re.sub(r"[#\s]", "", text) == re.sub(r"<[^>]+>|\s", "", fragment)
        assert "No text could be extracted" not in caplog.text


class TestTables:
    def test_nested_table_text_stays_in_its_cell(self):
        html = (
            "<table><tr><th>Plan</th><th>Limits</th></tr><tr><td>Pro</td><td><table><tr><td>5 users</td>"
            "<td>10 GB</td></tr></table></td></tr></table>"
        )
        assert (
            html_to_markdown(html, main_content=False)
            == "| Plan | Limits |\n|---|---|\n| Pro | 5 users 10 GB |"
        )

    def test_bad_spans_are_bounded(self):
        html = "<table><tr><th colspan='x'>A</th><th colspan='100000'>B</th></tr></table>"
        assert html_to_markdown(html, main_content=False).count("| B") == 100
