"""The page's links to web sources (`web/links.js`) in a real headless Chromium, with hostile ids.

A citation's or a document row's source id that is an http(s) URL becomes a link opening that page;
anything else (javascript:, data:, credentials, markup) stays text and runs nothing. The module is
loaded by Chromium from a page Playwright serves from the web folder (no service needed). Skipped,
saying why, without Chromium or the `browser` extra, as the other browser tests are.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from haygraph.adapters.service.app import WEB_DIR
from tests.adapters.service.browser_helpers import CHROMIUM_ARGS, chromium_path

pytestmark = pytest.mark.integration

if chromium_path() is None:
    pytest.skip(
        "no Chromium binary (/usr/bin/chromium): install Debian's chromium to run the browser tests",
        allow_module_level=True,
    )
playwright_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the `browser` extra (playwright) is not installed: pip install '.[browser]'",
)

ORIGIN = "http://haygraph.test"
HOSTILE_LABEL = "<img src=x onerror=\"window.__pwned='label'\">Handbook"
CASES: list[tuple[str, str, str | None]] = [
    # (source id, label shown, the href expected: None = plain text)
    ("https://docs.example.com/guide/install.html", "Install", "https://docs.example.com/guide/install.html"),
    ("  HTTP://Docs.Example.com:8080/a b?q=1#x", "spaces", "http://docs.example.com:8080/a%20b?q=1#x"),
    (
        'https://docs.example.com/"><img src=x onerror="window.__pwned=\'href\'">',
        HOSTILE_LABEL,
        "https://docs.example.com/%22%3E%3Cimg%20src=x%20onerror=%22window.__pwned='href'%22%3E",
    ),
    ("javascript:window.__pwned='js'", "js", None),
    ("JaVaScRiPt:window.__pwned='js2'//https://x.example/", "js2", None),
    ("java\nscript:window.__pwned='js3'", "js3", None),
    ("data:text/html,<script>window.__pwned='data'</script>", "data", None),
    ("https://user:secret@docs.example.com/", "credentials", None),
    ("//docs.example.com/protocol-relative", "relative", None),
    ("http:/one-slash.example", "one slash", None),
    ("handbook.md", HOSTILE_LABEL, None),
]


@pytest.fixture(scope="module")
def page() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        tab = browser.new_page()

        def serve(route: Any) -> None:
            path = urlsplit(route.request.url).path
            if path == "/":
                route.fulfill(
                    body="<!doctype html><title>t</title><div id=out></div>", content_type="text/html"
                )
            elif path == "/guide.html":
                route.fulfill(body="<!doctype html><title>Guide</title>", content_type="text/html")
            elif path == "/links.js":
                route.fulfill(path=str(WEB_DIR / "links.js"), content_type="text/javascript")
            else:
                route.fulfill(status=404, body="")

        tab.context.route(f"{ORIGIN}/**", serve)  # every tab of the context, the opened ones too
        tab.goto(f"{ORIGIN}/")
        yield tab
        browser.close()


def test_only_http_urls_become_links_and_nothing_runs(page: Any) -> None:
    rendered = page.evaluate(
        """async (cases) => {
            const { sourceNode } = await import("/links.js");
            const out = document.getElementById("out");
            const shown = [];
            for (const [id, label] of cases) {
                const cell = document.createElement("p");
                cell.append(sourceNode(id, label));
                out.append(cell);
                const link = cell.querySelector("a");
                shown.push({
                    href: link ? link.getAttribute("href") : null,
                    rel: link ? link.rel : null,
                    target: link ? link.target : null,
                    text: cell.textContent,
                    elements: cell.querySelectorAll("*").length,
                });
            }
            await new Promise((resolve) => setTimeout(resolve, 100));  // an injected onerror would have run
            return { shown, pwned: window.__pwned ?? null, images: document.images.length };
        }""",
        [[source, label] for source, label, _ in CASES],
    )
    assert rendered["pwned"] is None and rendered["images"] == 0
    for (source, label, href), shown in zip(CASES, rendered["shown"], strict=True):
        assert shown["href"] == href, source
        assert shown["text"] == label, source  # the label is text, markup and all
        if href is None:
            assert shown["elements"] == 0, source
        else:
            assert shown["rel"] == "noopener noreferrer" and shown["target"] == "_blank", source
            assert shown["elements"] == 1, source


def test_a_link_opens_the_page_in_a_new_tab(page: Any) -> None:
    page.evaluate(
        """async () => {
            const { sourceNode } = await import("/links.js");
            const out = document.getElementById("out");
            out.replaceChildren(sourceNode("http://haygraph.test/guide.html", "Guide"));
        }"""
    )
    with page.context.expect_page() as new_tab:
        page.click("a.source-link")
    tab = new_tab.value
    tab.wait_for_load_state()
    assert tab.url == f"{ORIGIN}/guide.html"
    assert tab.evaluate("window.opener") is None  # rel=noopener: no handle back to the page
    tab.close()
