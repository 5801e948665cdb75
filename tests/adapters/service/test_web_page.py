"""The web page in a real headless Chromium (Debian's `chromium`, driven by Playwright's Python API).

One real `haygraph serve` process per module (the sample handbook for tenant A, two documents for
tenant B, API keys for A, B and a read-only A key); the confirmation tests run an in-process server
with a scripted chat model and no keys (the page then opens without signing in). Screenshots and the
measured times go to `build/browser-artefacts/`. Skipped, saying why, when no Chromium is installed.
"""

from __future__ import annotations

import io
import json
import os
import re
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from tests.adapters.service.browser_helpers import (
    CHROMIUM_ARGS,
    DESKTOP,
    PHONE,
    artefacts_dir,
    ask,
    chromium_path,
    flat,
    haygraph_serve,
    sign_in,
)

pytestmark = pytest.mark.integration

if chromium_path() is None:
    pytest.skip(
        "no Chromium binary (/usr/bin/chromium): install Debian's chromium to run the browser tests "
        "(.ci/run does: apt-get install -y chromium chromium-driver)",
        allow_module_level=True,
    )
playwright_api = pytest.importorskip(
    "playwright.sync_api",
    reason="the `browser` extra (playwright) is not installed: pip install '.[browser]'",
)
expect = playwright_api.expect

KEY_A = "hg-web-tenant-a-0000000000001"
KEY_B = "hg-web-tenant-b-0000000000002"
KEY_READER = "hg-web-tenant-a-reader-000003"
KEY_C = "hg-web-tenant-c-0000000000004"
LEAVE_QUESTION = "How many days of annual leave do I get?"
B_DOCS = [
    Document(
        content="Globex travel policy. The Globex per diem for business travel is 90 dollars a day.",
        meta={"source_id": "globex-travel.md", "tenant": "B"},
    ),
    Document(
        content="Globex expense claims are due within 14 days of the trip and need a manager's approval.",
        meta={"source_id": "globex-expenses.md", "tenant": "B"},
    ),
]
XSS_NAME = "<img src=x onerror=window.__pwned=1>.md"
XSS_TEXT = (
    "# Visitor badges\n\n"
    "<script>window.__pwned = 'bare'</script>\n\n"
    "The visitor badge desk code is \u202eBADGE-7731\u202c. <img src=x onerror=\"window.__pwned='img'\">\n"
    "Never paste `<script>window.__pwned = 'script'</script>` into the form.\n\n"
    "[Open the badge form](javascript:window.__pwned='link') to request a visitor badge.\n"
)
seen: dict[str, Any] = {}
"""What one test leaves for another (tenant A's thread and evidence ids)."""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, haygraph_cache_dir: Path) -> Iterator[str]:
    """`haygraph serve --api-keys` over the handbook (tenant A) and two tenant-B documents."""
    from haygraph.retrieval import KnowledgeBase, RetrievalConfig, sample_handbook_path

    root = tmp_path_factory.mktemp("web")
    store = root / "store"
    config = RetrievalConfig().with_overrides(embedder={"cache_dir": str(haygraph_cache_dir)})
    kb = KnowledgeBase(config, store)
    with kb.writing():
        kb.index([sample_handbook_path()], meta={"tenant": "A"})
        kb.index_documents(list(B_DOCS))
    keys = root / "keys.yaml"
    keys.write_text(
        f'"{KEY_A}": {{tenant: A}}\n"{KEY_B}": {{tenant: B}}\n"{KEY_READER}": {{tenant: A, write: false}}\n'
        f'"{KEY_C}": {{tenant: C}}\n'
    )
    env = {**os.environ, "HAYGRAPH_CACHE_DIR": str(haygraph_cache_dir)}
    with haygraph_serve(
        # loopback allowed by the operator: the website test crawls a site on 127.0.0.1
        ["--store", str(store), "--api-keys", str(keys), "--allow-private-hosts", "--crawl-delay", "0"],
        env,
        artefacts_dir() / "serve.log",
    ) as url:
        yield url


@pytest.fixture()
def page_a(browser: Any, served: str) -> Iterator[Any]:
    context = browser.new_context(viewport=DESKTOP, locale="en-US")
    page = context.new_page()
    sign_in(page, served, KEY_A)
    yield page
    context.close()


def docx_file(path: Path, *paragraphs: str) -> Path:
    import docx

    document = docx.Document()
    for text in paragraphs:
        document.add_paragraph(text)
    buffer = io.BytesIO()
    document.save(buffer)
    path.write_bytes(buffer.getvalue())
    return path


def drop_file(page: Any, name: str, text: str) -> None:
    """Drop a file on the drop zone, as a drag and drop from the desktop does."""
    page.evaluate(
        """([name, text]) => {
            const data = new DataTransfer();
            data.items.add(new File([text], name, {type: "text/markdown"}));
            const zone = document.getElementById("drop-zone");
            for (const kind of ["dragover", "drop"]) {
                const init = {dataTransfer: data, bubbles: true, cancelable: true};
                zone.dispatchEvent(new DragEvent(kind, init));
            }
        }""",
        [name, text],
    )


def wait_indexed(page: Any, name: str) -> None:
    line = page.locator("#upload-log li", has_text=name).last
    expect(line).to_have_text(re.compile(r"indexed, \d+ passage"), timeout=120_000)
    bar = page.locator("#upload-progress")
    assert bar.get_attribute("value") == bar.get_attribute("max")


def remove_source(page: Any, name: str) -> None:
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name=f"Remove {name}").click()
    expect(page.locator("#doc-rows tr", has=page.get_by_text(name, exact=True))).to_have_count(0)


class TestSignIn:
    def test_a_wrong_key_says_so_and_the_right_one_opens_the_page(self, browser: Any, served: str) -> None:
        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        page = context.new_page()
        page.goto(served)
        expect(page.get_by_role("tab", name="Chat")).to_be_hidden()
        page.get_by_label("API key").fill("hg-web-not-a-valid-key-00000")
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_have_text("That API key is not valid. Check it and try again.")
        page.get_by_label("API key").fill(KEY_A)
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("tab", name="Chat")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('haygraph.apiKey')") == KEY_A
        assert KEY_A not in page.url and context.cookies() == [] and KEY_A not in page.content()
        page.reload()  # the key lasts for the tab's session
        expect(page.get_by_role("tab", name="Chat")).to_be_visible()
        page.get_by_role("button", name="Sign out").click()
        expect(page.get_by_label("API key")).to_be_visible()
        assert page.evaluate("sessionStorage.getItem('haygraph.apiKey')") is None
        context.close()


class TestChat:
    def test_streamed_answer_citation_opens_the_highlighted_evidence(self, page_a: Any) -> None:
        item = ask(page_a, LEAVE_QUESTION)
        assert item.get_attribute("data-status") == "completed"
        assert int(item.get_attribute("data-tokens") or 0) >= 1  # the answer arrived as token events
        trail = item.locator(".trail li").all_inner_texts()
        assert [step.split()[0] for step in trail][:2] == ["analyze", "retrieve"]
        cites = item.locator("a.cite")
        assert cites.count() >= 1
        compared = 0
        for i in range(cites.count()):
            cite = cites.nth(i)
            cite.click()
            dialog = page_a.locator("dialog#evidence[open]")
            expect(dialog.locator("mark")).to_be_visible()
            expect(dialog).to_contain_text("leave-policy.md")
            expect(dialog).to_contain_text("Leave Policy ›")
            expect(dialog).to_contain_text("score")
            quote = cite.get_attribute("data-quote") or ""
            mark = dialog.locator("mark").inner_text()
            if "→" not in quote:  # a sentence quote; a table row is quoted as "header → cell; …"
                assert flat(mark) == flat(quote)
                compared += 1
            if i == 1:
                page_a.screenshot(path=artefacts_dir() / "desktop-evidence.png")
            page_a.keyboard.press("Escape")
            expect(dialog).to_have_count(0)
        assert compared >= 1
        seen["a_evidence"] = cites.first.get_attribute("data-evidence-id")
        current = "document.querySelector('.thread[aria-current=true]')?.dataset.thread"
        seen["a_thread"] = page_a.evaluate(current)
        page_a.screenshot(path=artefacts_dir() / "desktop-chat.png")
        page_a.set_viewport_size(PHONE)
        assert page_a.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page_a.screenshot(path=artefacts_dir() / "phone-chat.png")
        cites.first.click()
        page_a.screenshot(path=artefacts_dir() / "phone-evidence.png")

    def test_a_refusal_is_shown_as_a_refusal_with_its_reason(self, page_a: Any) -> None:
        item = ask(page_a, "What is the boiling point of mercury on Mars?")
        assert item.get_attribute("data-status") == "insufficient_evidence"
        refusal = item.locator(".refusal")
        expect(refusal).to_contain_text("No answer")
        expect(refusal.locator(".reason").first).to_contain_text("is below the threshold")
        assert item.locator(".error").count() == 0 and item.locator("a.cite").count() == 0

    def test_a_refusal_by_a_rule_is_not_called_low_confidence(self, page_a: Any) -> None:
        # the model is confident (p ~0.8) but no quoted sentence holds a number of grades
        item = ask(page_a, "绩效结果分几个等级？")
        assert item.get_attribute("data-status") == "insufficient_evidence"
        reasons = item.locator(".refusal .reason").all_inner_texts()
        assert any(r.startswith("Rule: no retrieved sentence holds a number of") for r in reasons), reasons
        assert not any("below the threshold" in r for r in reasons), reasons

    def test_keyboard_only(self, page_a: Any) -> None:
        page_a.get_by_role("tab", name="Chat").focus()
        page_a.keyboard.press("ArrowRight")
        expect(page_a.get_by_role("tab", name="Documents")).to_have_attribute("aria-selected", "true")
        page_a.keyboard.press("ArrowLeft")
        expect(page_a.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
        item = ask(page_a, "Can I take annual leave in half days?")
        cite = item.locator("a.cite").first
        cite.focus()
        page_a.keyboard.press("Enter")
        expect(page_a.locator("dialog#evidence[open] mark")).to_be_visible()
        page_a.keyboard.press("Escape")
        expect(page_a.locator("dialog#evidence[open]")).to_have_count(0)
        assert page_a.evaluate("document.activeElement.classList.contains('cite')")

    def test_threads_list_open_and_new(self, page_a: Any) -> None:
        ask(page_a, LEAVE_QUESTION)
        thread = page_a.locator(".thread", has_text=LEAVE_QUESTION).first
        expect(thread).to_be_visible()
        page_a.get_by_role("button", name="New thread").click()
        expect(page_a.locator(".message")).to_have_count(0)
        thread.click()
        expect(page_a.locator(".message.user").first).to_have_text(re.compile(re.escape(LEAVE_QUESTION)))
        expect(page_a.locator(".message.assistant a.cite").first).to_be_visible()

    def test_source_filter_narrows_the_answer(self, page_a: Any) -> None:
        page_a.locator("#filter summary").click()
        page_a.get_by_label("benefits.txt", exact=True).check()
        item = ask(page_a, LEAVE_QUESTION)
        ids = [c.get_attribute("data-evidence-id") or "" for c in item.locator("a.cite").all()]
        assert all(i.startswith("benefits.txt::") for i in ids), ids


class TestDocuments:
    def test_upload_docx_progress_answerable_then_removed(self, page_a: Any, tmp_path: Path) -> None:
        question = "How much does a staff parking permit cost?"
        assert ask(page_a, question).get_attribute("data-status") == "insufficient_evidence"
        page_a.get_by_role("tab", name="Documents").click()
        path = docx_file(
            tmp_path / "parking.docx",
            "Parking policy",
            "Staff parking permits cost 35 euros per month and are issued by the facilities desk.",
        )
        page_a.set_input_files("#file-input", str(path))
        wait_indexed(page_a, "parking.docx")
        row = page_a.locator("#doc-rows tr[data-source='parking.docx']")
        expect(row).to_contain_text("docx")
        page_a.screenshot(path=artefacts_dir() / "desktop-documents.png")
        page_a.get_by_role("tab", name="Chat").click()
        item = ask(page_a, question)
        assert item.get_attribute("data-status") == "completed" and "35 euros" in item.inner_text()
        page_a.get_by_role("tab", name="Documents").click()
        remove_source(page_a, "parking.docx")
        page_a.get_by_role("tab", name="Chat").click()
        assert ask(page_a, question).get_attribute("data-status") == "insufficient_evidence"

    def test_drag_and_drop_search_reindex_and_a_refused_file(self, page_a: Any) -> None:
        page_a.get_by_role("tab", name="Documents").click()
        drop_file(page_a, "canteen.md", "# Canteen\n\nThe staff canteen opens at 11:30 on workdays.\n")
        wait_indexed(page_a, "canteen.md")
        page_a.get_by_label("Search documents").fill("cante")
        expect(page_a.locator("#doc-rows tr")).to_have_count(1)
        page_a.get_by_role("button", name="Re-index canteen.md").click()
        wait_indexed(page_a, "canteen.md")
        drop_file(page_a, "payload.exe", "MZ")
        expect(page_a.locator("#upload-log li.error", has_text="payload.exe")).to_contain_text(
            "unsupported file type '.exe'"
        )
        remove_source(page_a, "canteen.md")
        page_a.get_by_label("Search documents").fill("")

    def test_a_hostile_document_is_shown_as_text_and_runs_nothing(self, page_a: Any) -> None:
        dialogs: list[str] = []

        def record(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page_a.on("dialog", record)
        page_a.get_by_role("tab", name="Documents").click()
        drop_file(page_a, XSS_NAME, XSS_TEXT)
        wait_indexed(page_a, XSS_NAME)
        expect(page_a.locator("#doc-rows .doc-id", has_text=XSS_NAME)).to_have_text(XSS_NAME)
        page_a.get_by_role("tab", name="Chat").click()
        item = ask(page_a, "What is the visitor badge desk code?")
        assert "BADGE-7731" in item.inner_text() and "\u202e" not in item.inner_text()
        item.locator("a.cite").first.click()
        text = page_a.locator("dialog#evidence[open] #evidence-text")
        expect(text).to_contain_text("BADGE-7731")
        shown = text.inner_text()
        assert "<script>window.__pwned = 'script'</script>" in shown  # in a code span: shown, not run
        assert "'bare'" not in shown  # a script element is no content: indexed without its words
        assert "onerror=\"window.__pwned='img'\"" in shown and "javascript:window.__pwned" in shown
        assert "\ufffdBADGE-7731\ufffd" in shown  # a right-to-left override is shown, not obeyed
        page_a.screenshot(path=artefacts_dir() / "desktop-hostile-document.png")
        page_a.keyboard.press("Escape")
        assert page_a.evaluate("window.__pwned") is None
        assert page_a.locator("main img, dialog img, main script, dialog script").count() == 0
        assert page_a.locator("a[href^='javascript:']").count() == 0
        assert dialogs == []
        page_a.remove_listener("dialog", record)
        page_a.get_by_role("tab", name="Documents").click()
        page_a.get_by_label("Search documents").fill("onerror")
        remove_source(page_a, XSS_NAME)

    def test_the_readme_walk_through(self, browser: Any, served: str) -> None:
        """Upload every file of the sample handbook at once, ask the README's question, open a citation."""
        from haygraph.retrieval import sample_handbook_path

        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        page = context.new_page()
        sign_in(page, served, KEY_C)  # tenant C starts with no documents
        page.get_by_role("tab", name="Documents").click()
        expect(page.locator("#doc-empty")).to_be_visible()
        files = sorted(str(p) for p in Path(sample_handbook_path()).iterdir())
        page.set_input_files("#file-input", files)
        log = page.locator("#upload-log li")
        expect(log.first).to_be_visible()
        expect(page.locator("#upload-log li:not(.ok)")).to_have_count(0, timeout=180_000)  # 20 + 4 files
        expect(log).to_have_count(2)
        expect(page.locator("#doc-rows tr")).to_have_count(len(files))
        page.get_by_role("tab", name="Chat").click()
        item = ask(page, LEAVE_QUESTION)
        assert item.get_attribute("data-status") == "completed"
        item.locator("a.cite").first.click()
        expect(page.locator("dialog#evidence[open] mark")).to_be_visible()
        expect(page.locator("dialog#evidence[open]")).to_contain_text("leave-policy.md")
        context.close()

    def test_add_a_website_and_its_citation_links_to_the_page(self, page_a: Any) -> None:
        from tests.retrieval.test_web_sources import SiteServer
        from tests.retrieval.test_web_sources import page as site_page

        site = SiteServer()
        notice = "The Harbor ferry leaves the north pier at 7:15 every weekday morning."
        site.html("/", site_page("Harbor notices", "Notices for staff.", ("/ferry.html",)))
        site.html("/ferry.html", site_page("Ferry timetable", notice))
        site.thread.start()
        try:
            page_a.get_by_role("tab", name="Documents").click()
            page_a.get_by_label("Add a website by its URL").fill(site.base + "/")
            page_a.get_by_role("button", name="Add website").click()
            line = page_a.locator("#upload-log li", has_text=site.base).last
            expect(line).to_have_text(re.compile(r"2 new, 0 changed"), timeout=120_000)
            ferry = site.base + "/ferry.html"
            link = page_a.locator(f"#doc-rows tr[data-source='{ferry}'] a.source-link")
            expect(link).to_have_attribute("href", ferry)
            expect(link).to_have_attribute("rel", "noopener noreferrer")
            expect(page_a.locator(f"#doc-rows tr[data-source='{ferry}']")).to_contain_text("synced: 2 new")
            page_a.locator(f"#doc-rows tr[data-source='{ferry}']").scroll_into_view_if_needed()
            page_a.screenshot(path=artefacts_dir() / "desktop-website-source.png")
            page_a.get_by_role("tab", name="Chat").click()
            item = ask(page_a, "When does the Harbor ferry leave in the morning?")
            assert item.get_attribute("data-status") == "completed" and "7:15" in item.inner_text()
            item.locator("a.cite").first.click()
            dialog = page_a.locator("dialog#evidence[open]")
            source = dialog.locator("a.source-link")
            expect(source).to_have_attribute("href", ferry)
            expect(source).to_have_attribute("target", "_blank")
            with page_a.context.expect_page() as opened:
                source.click()
            expect(opened.value.get_by_role("heading", name="Ferry timetable")).to_be_visible()
            opened.value.close()
            page_a.keyboard.press("Escape")
            page_a.get_by_role("tab", name="Documents").click()
            remove_source(page_a, ferry)
            remove_source(page_a, site.base + "/")
        finally:
            site.httpd.shutdown()
            site.httpd.server_close()


class TestTenantsAndRights:
    def test_tenant_b_never_sees_tenant_a(self, browser: Any, served: str) -> None:
        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        page = context.new_page()
        sign_in(page, served, KEY_B)
        expect(page.locator("#thread-list")).to_contain_text("No threads yet.")
        item = ask(page, LEAVE_QUESTION)
        assert item.get_attribute("data-status") == "insufficient_evidence"
        expect(page.locator(".thread")).to_have_count(1)
        page.get_by_role("tab", name="Documents").click()
        expect(page.locator("#doc-rows tr")).to_have_count(2)
        assert sorted(r.get_attribute("data-source") for r in page.locator("#doc-rows tr").all()) == [
            "globex-expenses.md",
            "globex-travel.md",
        ]
        probe = """async ([path, key]) =>
            (await fetch(path, {headers: {Authorization: `Bearer ${key}`}})).status"""
        evidence = seen.get("a_evidence") or "leave-policy.md::0"
        assert page.evaluate(probe, [f"/v1/evidence/{evidence}", KEY_B]) == 404
        assert page.evaluate(probe, [f"/v1/evidence/{evidence}", KEY_A]) == 200
        if seen.get("a_thread"):
            assert page.evaluate(probe, [f"/v1/threads/{seen['a_thread']}", KEY_B]) == 404
        context.close()

    def test_a_read_only_key_cannot_change_documents(self, browser: Any, served: str) -> None:
        context = browser.new_context(viewport=PHONE, locale="en-US")
        page = context.new_page()
        sign_in(page, served, KEY_READER)
        page.get_by_role("tab", name="Documents").click()
        expect(page.locator("#read-only")).to_be_visible()
        expect(page.locator("#upload-area")).to_be_hidden()
        expect(page.locator("#doc-rows tr").first).to_be_visible()
        assert page.get_by_role("button", name=re.compile("^Remove ")).count() == 0
        assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        page.screenshot(path=artefacts_dir() / "phone-documents-read-only.png")
        page.get_by_role("tab", name="Status").click()
        expect(page.locator("#status-list")).to_contain_text("read only")
        expect(page.locator("#status-list")).to_contain_text("hybrid")
        context.close()

    def test_chinese_browser_gets_chinese_text(self, browser: Any, served: str) -> None:
        context = browser.new_context(viewport=DESKTOP, locale="zh-CN")
        page = context.new_page()
        page.goto(served)
        expect(page.get_by_role("button", name="登录")).to_be_visible()
        assert page.evaluate("document.documentElement.lang") == "zh-CN"
        context.close()


class TestTimings:
    QUESTIONS = (
        LEAVE_QUESTION,
        "Can I take annual leave in half days?",
        "How many days of leave can I take during probation?",
        "How do I reset my password?",
        "Is multi-factor authentication required?",
        "How many days a week can I work from home?",
        "What is the deadline for submitting expense claims?",
        "Which receipts do I need for an expense claim?",
        "What are the public holidays in 2026?",
        "What happens on my first day?",
        "May I accept gifts from suppliers?",
        "What should I do if I lose my laptop?",
        "What health insurance do employees get?",
        "How do I book a meeting room?",
        "What is the hotel budget on business trips?",
        "How long do refunds take?",
        "How long does standard shipping take?",
        "请问婚假有几天？",
        "加班后如何申请调休？",
        "报销需要在多少天内提交？",
    )

    def test_time_to_first_progress_and_to_the_final_answer(self, page_a: Any) -> None:
        """p50 over 20 different asks in the page (figures printed and saved; measured, not a target)."""
        first: list[float] = []
        final: list[float] = []
        for i in range(20):
            page_a.get_by_role("button", name="New thread").click()
            item = ask(page_a, self.QUESTIONS[i])
            first.append(float(item.get_attribute("data-first-progress-ms") or "nan"))
            final.append(float(item.get_attribute("data-final-ms") or "nan"))
        assert all(0 < a <= b for a, b in zip(first, final, strict=True))
        figures = {
            "asks": len(final),
            "first_progress_ms_p50": round(statistics.median(first), 1),
            "final_answer_ms_p50": round(statistics.median(final), 1),
            "first_progress_ms": [round(x, 1) for x in first],
            "final_answer_ms": [round(x, 1) for x in final],
        }
        (artefacts_dir() / "timings.json").write_text(json.dumps(figures, indent=2))
        print(
            f"\nweb page, {len(final)} asks on the handbook: first progress event p50 "
            f"{figures['first_progress_ms_p50']} ms, final answer p50 {figures['final_answer_ms_p50']} ms"
        )


class TestConfirmation:
    @pytest.fixture(scope="class")
    def tool_server(
        self, tmp_path_factory: pytest.TempPathFactory, tenant_store: Path
    ) -> Iterator[tuple[str, Any]]:
        """An in-process server without API keys whose scripted model asks to open a ticket (twice)."""
        import shutil

        from haygraph.adapters.examples.orders_db import OrdersDatabase
        from haygraph.adapters.service import HaygraphService, ServiceSettings
        from tests.adapters.service.server_helpers import running_server
        from tests.control.tool_helpers import ScriptedChatModel, call

        store = tmp_path_factory.mktemp("tools") / "store"
        shutil.copytree(tenant_store, store)
        ticket = {"category": "delivery", "description": "Parcel arrived damaged, please help."}
        script = [call("RouteDecision", route="tool", intent="support"), call("create_ticket", **ticket)] * 2
        settings = ServiceSettings(store_dir=store, example_tools=True)
        with running_server(HaygraphService(settings, model=ScriptedChatModel(script=script))) as url:
            yield url, OrdersDatabase(store / "orders.sqlite")

    @pytest.mark.parametrize(("button", "tickets"), [("Approve", 1), ("Reject", 1)])
    def test_approve_or_reject_a_pending_call(
        self, browser: Any, tool_server: tuple[str, Any], button: str, tickets: int
    ) -> None:
        url, db = tool_server
        context = browser.new_context(viewport=DESKTOP, locale="en-US")
        page = context.new_page()
        page.goto(url)  # no --api-keys: the page opens without signing in
        expect(page.get_by_role("tab", name="Chat")).to_be_visible()
        expect(page.get_by_label("API key")).to_be_hidden()
        item = ask(page, "my parcel is damaged, open a ticket")
        assert item.get_attribute("data-status") == "needs_confirmation"
        pending = item.locator(".pending")
        expect(pending).to_contain_text("create_ticket")
        expect(pending).to_contain_text("Parcel arrived damaged")
        if button == "Approve":
            page.screenshot(path=artefacts_dir() / "desktop-pending-call.png")
        pending.get_by_role("button", name=button).click()
        after = page.locator(".message.assistant").last
        expect(after).to_have_attribute("data-status", "completed", timeout=60_000)
        if button == "Reject":
            expect(after).to_contain_text("nothing was done")
        assert len(db.tickets()) == tickets
        expect(pending.get_by_role("button", name="Approve")).to_be_disabled()
        context.close()
