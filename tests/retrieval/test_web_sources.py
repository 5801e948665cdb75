"""Websites as sources: crawling, re-sync and the hostile-site suite, against a real HTTP server on 127.0.0.1.

The server (`SiteServer`) is a `ThreadingHTTPServer` started and stopped by the fixtures; every request
it gets is recorded, so a test can check what the crawler did *not* ask for. Loopback is allowed the
way an operator allows it (`HAYGRAPH_ALLOW_PRIVATE_HOSTS=1`), except in the test that checks the refusal.
KnowledgeBase tests use the fake embedder of the other indexing tests (`fake_warm_up`): what they check
is which pages are fetched, indexed, kept and removed, not the vectors.
"""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Callable, Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from haygraph.adapters.cli.main import build_parser, main
from haygraph.retrieval.embedding_cache import CachedDocumentEmbedder
from haygraph.retrieval.knowledge_base import KnowledgeBase
from haygraph.retrieval.web_sources import (
    CrawlSettings,
    UrlRefusedError,
    WebSourceError,
    crawl_site,
    normalize_url,
)
from tests.retrieval.store_helpers import fake_warm_up

Route = Callable[[BaseHTTPRequestHandler], None] | tuple[int, dict[str, str], bytes]


def page(title: str, body: str = "", links: tuple[str, ...] = ()) -> bytes:
    anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
    return (
        f"<html><head><title>{title}</title></head><body><nav><a href='/'>Home</a> Site menu</nav>"
        f"<main><h1>{title}</h1><p>{body}</p><ul>{anchors}</ul></main>"
        "<footer>Copyright footer text</footer></body></html>"
    ).encode()


class SiteServer:
    """A small website on 127.0.0.1: `routes` maps a path to a response or a handler function."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.release = threading.Event()  # ends the slow pages at teardown
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                outer.requests.append((path, {k.lower(): v for k, v in self.headers.items()}))
                route = outer.routes.get(path)
                if route is None:
                    return self.reply(404, {"Content-Type": "text/plain"}, b"not found")
                if callable(route):
                    return route(self)
                self.reply(*route)

            def reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def html(self, path: str, body: bytes, **headers: str) -> None:
        self.routes[path] = (200, {"Content-Type": "text/html; charset=utf-8", **headers}, body)

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


@pytest.fixture
def server() -> Iterator[SiteServer]:
    site = SiteServer()
    site.thread.start()
    try:
        yield site
    finally:
        site.release.set()
        site.httpd.shutdown()
        site.httpd.server_close()


@pytest.fixture
def allow_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS", "1")


FAST = CrawlSettings(delay=0, timeout=1.0)


# -- the hostile-site suite ---------------------------------------------------------------------------
def _slow(release: threading.Event) -> Route:
    def handler(request: BaseHTTPRequestHandler) -> None:
        release.wait(60)  # "a 60 s slow page": the crawler's timeout (1 s here) ends the wait for it

    return handler


def _drip(release: threading.Event) -> Route:
    def handler(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("Content-Length", "100000")
        request.end_headers()
        for _ in range(200):  # a byte every 0.3 s: each read is quick, the page never ends
            if release.wait(0.3):
                return
            try:
                request.wfile.write(b"x")
                request.wfile.flush()
            except OSError:
                return

    return handler


def _huge(request: BaseHTTPRequestHandler) -> None:
    """50 MB of HTML with no Content-Length (closed when done): only counting the bytes stops it."""
    request.send_response(200)
    request.send_header("Content-Type", "text/html")
    request.send_header("Connection", "close")
    request.end_headers()
    block = b"<p>" + b"spam " * 20_000 + b"</p>"
    try:
        for _ in range(50 * 1024 * 1024 // len(block)):
            request.wfile.write(block)
    except OSError:
        return
    request.close_connection = True


def hostile_site(server: SiteServer) -> None:
    links = (
        "a.html",
        "private/secret.html",
        "away.html",
        "loop1.html",
        "huge.html",
        "declared.html",
        "bomb.html",
        "slow.html",
        "drip.html",
        "notes.txt",
        "table.csv",
        "logo.svg",
        "../outside.html",
        "http://example.invalid/docs/x.html",
    )
    server.routes["/robots.txt"] = (
        200,
        {"Content-Type": "text/plain"},
        b"User-agent: *\nDisallow: /docs/private/\n",
    )
    server.html("/docs/index.html", page("Start", "The start page of the docs.", links))
    server.html(
        "/docs/a.html", page("Alpha", "The alpha page says the quorum is seven members.", ("b.html",))
    )
    server.html("/docs/b.html", page("Beta", "The beta page says meetings start at nine."))
    server.html("/docs/private/secret.html", page("Secret", "never fetched"))
    server.html("/outside.html", page("Outside", "out of scope"))
    server.routes["/docs/away.html"] = (302, {"Location": "http://example.invalid/phish.html"}, b"")
    server.routes["/docs/loop1.html"] = (301, {"Location": "/docs/loop2.html"}, b"")
    server.routes["/docs/loop2.html"] = (301, {"Location": "/docs/loop1.html"}, b"")
    server.routes["/docs/huge.html"] = _huge
    server.routes["/docs/declared.html"] = (200, {"Content-Type": "text/html"}, b"")
    server.routes["/docs/declared.html"] = lambda r: (
        r.send_response(200),
        r.send_header("Content-Type", "text/html"),
        r.send_header("Content-Length", str(50 * 1024 * 1024)),
        r.end_headers(),
    )
    bomb = gzip.compress(b"<p>" + b"0" * (50 * 1024 * 1024) + b"</p>")
    server.routes["/docs/bomb.html"] = (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, bomb)
    server.routes["/docs/slow.html"] = _slow(server.release)
    server.routes["/docs/drip.html"] = _drip(server.release)
    server.routes["/docs/notes.txt"] = (
        200,
        {"Content-Type": "text/plain"},
        b"Notes: the archive room is B12.",
    )
    server.routes["/docs/table.csv"] = (200, {"Content-Type": "text/csv"}, b"room,seats\nOak,12\nPine,30\n")
    server.routes["/docs/logo.svg"] = (200, {"Content-Type": "image/svg+xml"}, b"<svg></svg>")  # not OCR'd


def _reason(lines: list[str], path: str, base: str) -> str:
    found = [line for line in lines if line.startswith(f"{base}{path}:")]
    assert len(found) == 1, (path, lines)
    return found[0]


def test_a_hostile_site_gets_nowhere_and_the_rest_of_the_crawl_completes(
    server: SiteServer, allow_loopback: None
) -> None:
    hostile_site(server)
    events: list[str] = []
    result = crawl_site(f"{server.base}/docs/index.html", FAST, on_page=lambda e: events.append(e.status))
    base = server.base
    assert sorted(result.new) == sorted(
        f"{base}/docs/{name}" for name in ("index.html", "a.html", "b.html", "notes.txt", "table.csv")
    )
    assert "another site" in _reason(result.failed, "/docs/away.html", base)
    assert "redirect loop" in _reason(result.failed, "/docs/loop1.html", base)
    assert "too large" in _reason(result.failed, "/docs/huge.html", base)
    assert "50,000,000" not in _reason(result.failed, "/docs/declared.html", base)
    assert "declared" in _reason(result.failed, "/docs/declared.html", base)
    assert "too large" in _reason(result.failed, "/docs/bomb.html", base)  # counted after gzip
    assert "timed out" in _reason(result.failed, "/docs/slow.html", base)
    assert "too slow" in _reason(result.failed, "/docs/drip.html", base)
    assert len(result.failed) == 7
    assert "robots.txt" in _reason(result.skipped, "/docs/private/secret.html", base)
    assert "image/svg+xml" in _reason(result.skipped, "/docs/logo.svg", base)
    # never asked for: what robots.txt disallows, what lies outside the start path, the redirect target
    assert "/docs/private/secret.html" not in server.paths()
    assert "/outside.html" not in server.paths()
    assert "/docs/loop1.html" in server.paths() and server.paths().count("/docs/loop2.html") == 1
    assert all(headers["user-agent"].startswith("haygraph/") for _, headers in server.requests)
    assert events.count("new") == 5 and events.count("failed") == 7
    by_id = {d.meta["source_id"]: d for d in result.documents}
    assert "quorum is seven" in (by_id[f"{base}/docs/a.html"].content or "")
    assert "Site menu" not in (by_id[f"{base}/docs/a.html"].content or "")  # the HTML converter's cleaning
    assert "| Oak | 12 |" in (by_id[f"{base}/docs/table.csv"].content or "")  # routed by its type


def test_loopback_and_private_hosts_are_refused_without_permission(
    server: SiteServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS", raising=False)
    server.html("/docs/index.html", page("Start", "text"))
    for url in (f"{server.base}/docs/index.html", f"http://localhost:{server.base.rsplit(':', 1)[1]}/docs/"):
        with pytest.raises(UrlRefusedError, match="loopback"):
            crawl_site(url, FAST)
    with pytest.raises(UrlRefusedError, match="private"):
        crawl_site("http://10.0.0.1/docs/", FAST)
    with pytest.raises(UrlRefusedError, match="link-local"):
        crawl_site("http://169.254.169.254/latest/meta-data/", FAST)  # a cloud metadata service
    assert server.requests == []
    monkeypatch.setenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS", "1")
    assert crawl_site(f"{server.base}/docs/index.html", FAST).new == [f"{server.base}/docs/index.html"]
    monkeypatch.delenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS")
    allowed = CrawlSettings(delay=0, timeout=1.0, allow_private_hosts=True)
    assert len(crawl_site(f"{server.base}/docs/index.html", allowed).new) == 1


def test_bad_start_urls_are_typed_errors(server: SiteServer, allow_loopback: None) -> None:
    for url in ("ftp://example.com/", "file:///etc/passwd", "http://user:pw@example.com/", "http:///x"):
        with pytest.raises(UrlRefusedError):
            crawl_site(url, FAST)
    server.routes["/robots.txt"] = (503, {"Content-Type": "text/plain"}, b"down")
    with pytest.raises(WebSourceError, match="503"):
        crawl_site(f"{server.base}/docs/", FAST)
    with pytest.raises(ValueError, match="max_pages"):
        CrawlSettings(max_pages=0)


def test_page_and_depth_limits_and_the_delay(server: SiteServer, allow_loopback: None) -> None:
    for i in range(6):  # a chain: p0 -> p1 -> ... -> p5
        server.html(f"/docs/p{i}.html", page(f"Page {i}", f"chain page number {i}", (f"p{i + 1}.html",)))
    depth = crawl_site(f"{server.base}/docs/p0.html", CrawlSettings(delay=0, max_depth=2))
    assert [u.rsplit("/", 1)[1] for u in depth.new] == ["p0.html", "p1.html", "p2.html"]
    limited = crawl_site(f"{server.base}/docs/p0.html", CrawlSettings(delay=0, max_pages=4))
    assert len(limited.new) == 4 and any("page limit 4" in s for s in limited.skipped)
    start = time.monotonic()
    crawl_site(f"{server.base}/docs/p0.html", CrawlSettings(delay=0.2, max_depth=1))
    # robots.txt, p0 and p1: two gaps of at least 0.2 s between the three requests
    assert time.monotonic() - start >= 0.4


def test_robots_crawl_delay_and_canonical_urls(server: SiteServer, allow_loopback: None) -> None:
    server.routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nCrawl-delay: 1\n")
    canonical = f'<link rel="canonical" href="{server.base}/docs/guide.html">'.encode()
    guide = page("Guide", "The guide text.").replace(b"<head>", b"<head>" + canonical)
    server.html(
        "/docs/index.html", page("Start", "Start", ("guide.html?ref=nav", "guide.html#part", "copy.html"))
    )
    server.html("/docs/guide.html", guide)
    server.html("/docs/guide.html?ref=nav", guide)
    server.html(
        "/docs/copy.html", page("Start", "Start", ("guide.html?ref=nav", "guide.html#part", "copy.html"))
    )
    start = time.monotonic()
    crawl_site(f"{server.base}/docs/guide.html", CrawlSettings(delay=0, max_depth=0))
    assert time.monotonic() - start >= 1  # robots.txt's Crawl-delay, over the setting's 0
    server.routes["/robots.txt"] = (200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow:\n")
    result = crawl_site(f"{server.base}/docs/index.html", FAST)
    # the ?ref=nav copy names guide.html as its canonical URL; the same bytes at another URL are one page
    assert sorted(result.new) == [f"{server.base}/docs/guide.html", f"{server.base}/docs/index.html"]
    # the ?ref=nav link came first: fetched, it named guide.html, which is then not fetched again
    assert result.skipped == [f"{server.base}/docs/copy.html: same content as {server.base}/docs/index.html"]
    after = server.requests[[path for path, _ in server.requests].index("/docs/index.html") :]
    assert [path for path, _ in after].count("/docs/guide.html") == 1  # the ?ref=nav one
    assert normalize_url("HTTP://Example.COM:80/a#frag") == "http://example.com/a"


def test_sitemap_gives_the_pages_under_the_start_path(server: SiteServer, allow_loopback: None) -> None:
    b = server.base
    index = f"""<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
        <sitemap><loc>{b}/maps/docs.xml</loc></sitemap><sitemap><loc>http://example.invalid/x.xml</loc></sitemap>
        </sitemapindex>"""
    urls = "".join(
        f"<url><loc>{b}{p}</loc></url>" for p in ("/docs/one.html", "/docs/two.html", "/blog/post.html")
    )
    server.routes["/robots.txt"] = (
        200,
        {"Content-Type": "text/plain"},
        f"Sitemap: {b}/maps/index.xml\n".encode(),
    )
    server.routes["/maps/index.xml"] = (200, {"Content-Type": "application/xml"}, index.encode())
    server.routes["/maps/docs.xml"] = (
        200,
        {"Content-Type": "application/xml"},
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'.encode(),
    )
    for name in ("one", "two"):
        server.html(f"/docs/{name}.html", page(name, f"page {name}", ("/docs/unlisted.html",)))
    server.html("/docs/unlisted.html", page("unlisted", "only linked"))
    server.html("/blog/post.html", page("post", "a blog post"))
    result = crawl_site(f"{b}/docs/index.html", FAST)
    assert sorted(result.new) == [f"{b}/docs/one.html", f"{b}/docs/two.html"]
    assert "/blog/post.html" not in server.paths() and "/docs/unlisted.html" not in server.paths()
    direct = crawl_site(f"{b}/maps/docs.xml", FAST)  # a sitemap URL: its pages, the whole site in scope
    assert sorted(direct.new) == [f"{b}/blog/post.html", f"{b}/docs/one.html", f"{b}/docs/two.html"]


OCR_SAMPLES = Path(__file__).parent / "data" / "ocr"


def _image_site(server: SiteServer) -> str:
    """A notices page linking two images: one served as ``image/png``, one with no useful type."""
    server.html("/notices/", page("Notices", "posted notices", ("en.png", "zh.png", "map.gif", "cut.png")))
    server.routes["/notices/en.png"] = (
        200,
        {"Content-Type": "image/png"},
        (OCR_SAMPLES / "notice-en.png").read_bytes(),
    )
    server.routes["/notices/zh.png"] = (
        200,
        {"Content-Type": "application/octet-stream"},  # typed by its URL
        (OCR_SAMPLES / "notice-zh.png").read_bytes(),
    )
    server.routes["/notices/map.gif"] = (200, {"Content-Type": "image/gif"}, b"GIF89a")
    server.routes["/notices/cut.png"] = (200, {"Content-Type": "image/png"}, b"\x89PNG\r\n\x1a\n")  # broken
    return f"{server.base}/notices/"


@pytest.mark.integration  # the real OCR model (as tests/retrieval/formats/test_images.py)
def test_images_are_read_by_ocr_by_their_content_type(server: SiteServer, allow_loopback: None) -> None:
    pytest.importorskip("rapidocr")
    start = _image_site(server)
    result = crawl_site(start, FAST)
    assert sorted(result.new) == [start, f"{start}en.png", f"{start}zh.png"]
    texts = {d.meta["source_id"]: d.content or "" for d in result.documents}
    assert "north entrance is closed for repairs" in texts[f"{start}en.png"]
    assert "三楼食堂周六停止营业" in texts[f"{start}zh.png"]
    assert result.skipped == [f"{start}map.gif: unsupported content type 'image/gif'"]
    (failed,) = result.failed  # a broken image is a page that fails, listed with why
    assert failed.startswith(f"{start}cut.png: ") and "not an image that can be read" in failed


def test_images_without_the_ocr_extra_are_skipped_naming_it(
    server: SiteServer, allow_loopback: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing() -> None:
        raise ImportError("No module named 'rapidocr'")

    monkeypatch.setattr("haygraph.retrieval.formats.images._import_rapidocr", missing)  # as if not installed
    start = _image_site(server)
    result = crawl_site(start, FAST)
    assert result.new == [start] and result.failed == []
    skipped = {line.split(": ", 1)[0]: line for line in result.skipped}
    assert set(skipped) == {f"{start}en.png", f"{start}zh.png", f"{start}map.gif", f"{start}cut.png"}
    for name in ("en.png", "zh.png", "cut.png"):
        assert "pip install 'haygraph[ocr]'" in skipped[f"{start}{name}"]
        assert "/page." not in skipped[f"{start}{name}"]  # the URL, not the temporary file, is named


# -- re-sync through the knowledge base --------------------------------------------------------------
@pytest.fixture
def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CachedDocumentEmbedder, "warm_up", fake_warm_up)


class Versioned:
    """A page whose server answers conditional requests by ETag, by Last-Modified, or not at all."""

    def __init__(self, title: str, text: str, mode: str, links: tuple[str, ...] = ()) -> None:
        self.title, self.text, self.mode, self.version, self.links = title, text, mode, 1, links

    def edit(self, text: str, links: tuple[str, ...] | None = None) -> None:
        self.text, self.version = text, self.version + 1
        self.links = self.links if links is None else links

    def __call__(self, request: BaseHTTPRequestHandler) -> None:
        etag = f'"v{self.version}"'
        modified = formatdate(1_700_000_000 + 3600 * self.version, usegmt=True)
        headers = {"Content-Type": "text/html; charset=utf-8"}
        if self.mode == "etag":
            headers["ETag"] = etag
            fresh = request.headers.get("If-None-Match") == etag
        elif self.mode == "modified":
            headers["Last-Modified"] = modified
            fresh = request.headers.get("If-Modified-Since") == modified
        else:
            fresh = False
        if fresh:
            request.send_response(304)
            request.send_header("Content-Length", "0")
            request.end_headers()
            return
        body = page(self.title, self.text, self.links)
        request.send_response(200)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)


def test_resync_by_links_finds_a_page_added_and_linked_from_a_stored_page(
    server: SiteServer, allow_loopback: None, no_model: None, tmp_path: Path
) -> None:
    """Without a sitemap, a stored page is crawled at the depth its link gives it (its links followed),
    not only revisited at the depth limit: a new page linked from it is found on the re-sync."""
    b = server.base
    server.html("/", page("Home", "The start page.", ("/guide/a.html",)))
    server.html("/guide/a.html", page("Guide A", "Guide A text about lockers."))
    server.html("/orphan.html", page("Orphan", "A page no link leads to any more."))
    kb = KnowledgeBase(store_dir=tmp_path / "store")
    first = kb.index_site(f"{b}/", settings=FAST)
    assert sorted(first.new) == [f"{b}/", f"{b}/guide/a.html"]
    server.html("/guide/a.html", page("Guide A", "Guide A text about lockers, edited.", ("/guide/b.html",)))
    server.html("/guide/b.html", page("Guide B", "Guide B is new: the lockers are on floor two."))
    resync = kb.index_site(f"{b}/", settings=FAST)
    assert (resync.changed, resync.new, resync.unchanged) == (
        [f"{b}/guide/a.html"],
        [f"{b}/guide/b.html"],
        [f"{b}/"],
    )
    # a stored page no link reaches any more is still revisited, and removed when it is gone
    server.routes["/guide/a.html"] = (200, {"Content-Type": "text/html"}, page("Guide A", "No links now."))
    del server.routes["/guide/b.html"]
    last = kb.index_site(f"{b}/", settings=FAST)
    assert last.removed == {f"{b}/guide/b.html": "HTTP 404"} and last.changed == [f"{b}/guide/a.html"]


def test_resync_by_links_on_a_site_that_answers_304_finds_the_added_page(
    server: SiteServer, allow_loopback: None, no_model: None, tmp_path: Path
) -> None:
    """A 304 has no body and so no links: the pages whose links a re-sync follows are fetched whole
    (compared by hash), so a page added and linked from an edited page is found even when every
    unchanged page would answer 304 (bench_site_crawl's 250-page site missed it)."""
    b = server.base
    home = Versioned("Home", "The start page.", "etag", ("/guide/a.html", "/guide/c.html"))
    guide_a = Versioned("Guide A", "Lockers are by the stairs.", "etag")
    guide_c = Versioned("Guide C", "Bicycles go in the shed.", "modified")
    for path, versioned in (("/", home), ("/guide/a.html", guide_a), ("/guide/c.html", guide_c)):
        server.routes[path] = versioned
    kb = KnowledgeBase(store_dir=tmp_path / "store")
    assert len(kb.index_site(f"{b}/", settings=FAST).new) == 3
    guide_a.edit("Lockers are by the stairs; see also guide B.", ("/guide/b.html",))
    server.routes["/guide/b.html"] = Versioned("Guide B", "Showers are on floor two.", "etag")
    resync = kb.index_site(f"{b}/", settings=FAST)
    assert (resync.changed, resync.new) == ([f"{b}/guide/a.html"], [f"{b}/guide/b.html"])
    assert sorted(resync.unchanged) == [f"{b}/", f"{b}/guide/c.html"] and resync.removed == {}
    unchanged_site = kb.index_site(f"{b}/", settings=FAST)  # nothing changed: nothing re-indexed
    assert unchanged_site.index is None and len(unchanged_site.unchanged) == 4


def test_resync_changes_exactly_the_edited_deleted_and_added_pages(
    server: SiteServer, allow_loopback: None, no_model: None, tmp_path: Path
) -> None:
    b = server.base
    pages = {
        "etag": Versioned("Parking", "Parking is on level two.", "etag"),
        "modified": Versioned("Travel", "Book flights fourteen days ahead.", "modified"),
        "plain": Versioned("Pets", "Dogs are welcome on Fridays.", "none"),
        "gone": Versioned("Old", "An old page about fax machines.", "etag"),
        "dropped": Versioned("Dropped", "A page the sitemap no longer lists.", "etag"),
    }
    listed = ["etag", "modified", "plain", "gone", "dropped"]

    def sitemap(request: BaseHTTPRequestHandler) -> None:
        body = "".join(f"<url><loc>{b}/docs/{name}.html</loc></url>" for name in listed)
        data = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'.encode()
        request.send_response(200)
        request.send_header("Content-Type", "application/xml")
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    server.routes["/sitemap.xml"] = sitemap
    for name, versioned in pages.items():
        server.routes[f"/docs/{name}.html"] = versioned
    kb = KnowledgeBase(store_dir=tmp_path / "store")
    first = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert len(first.new) == 5 and first.index is not None and first.index.sources == 5
    hits = kb.search("Dogs Fridays", config="bm25").hits
    assert hits[0].source == f"{b}/docs/plain.html"

    again = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert (len(again.unchanged), again.not_modified, again.index, again.removed) == (5, 4, None, {})

    pages["modified"].edit("Book flights twenty-one days ahead.")
    del server.routes["/docs/gone.html"]  # still in the sitemap: 404
    listed.remove("dropped")  # gone from the sitemap (the page itself still answers)
    listed.append("added")
    server.routes["/docs/added.html"] = Versioned("Added", "Printers are on floor three.", "modified")
    resync = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert resync.changed == [f"{b}/docs/modified.html"]
    assert resync.new == [f"{b}/docs/added.html"]
    assert resync.removed == {
        f"{b}/docs/dropped.html": "gone from the sitemap",
        f"{b}/docs/gone.html": "HTTP 404",
    }
    assert sorted(resync.unchanged) == [f"{b}/docs/etag.html", f"{b}/docs/plain.html"]
    stored = {d.meta["source_id"] for d in KnowledgeBase.open(tmp_path / "store").store.documents}
    assert stored == {f"{b}/docs/{n}.html" for n in ("etag", "modified", "plain", "added")}
    texts = " ".join(d.content or "" for d in kb.store.documents)
    assert "twenty-one" in texts and "fourteen" not in texts and "fax" not in texts

    # a page that moved (a redirect on the same site) is indexed at its new URL, the old one removed
    server.routes["/docs/moved.html"] = pages["plain"]
    server.routes["/docs/plain.html"] = (301, {"Location": "/docs/moved.html"}, b"")
    listed[listed.index("plain")] = "moved"
    moved = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert moved.new == [f"{b}/docs/moved.html"]
    assert moved.removed == {f"{b}/docs/plain.html": "gone from the sitemap"}
    listed[listed.index("moved")] = "plain"  # the sitemap lags: it still lists the old URL
    del server.routes["/docs/moved.html"]
    kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})  # plain.html: 404 now, removed
    server.routes["/docs/moved.html"] = pages["plain"]
    server.routes["/docs/plain.html"] = pages["plain"]
    kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    server.routes["/docs/plain.html"] = (301, {"Location": "/docs/moved.html"}, b"")
    lagging = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert lagging.removed == {f"{b}/docs/plain.html": f"moved to {b}/docs/moved.html"}
    assert lagging.new == [f"{b}/docs/moved.html"]

    # a page that fails is listed and its stored copy kept
    server.routes["/docs/etag.html"] = (500, {"Content-Type": "text/plain"}, b"oops")
    failing = kb.index_site(f"{b}/", settings=FAST, meta={"tenant": "acme"})
    assert failing.failed == [f"{b}/docs/etag.html: HTTP 500"] and failing.removed == {}
    assert f"{b}/docs/etag.html" in {d.meta["source_id"] for d in kb.store.documents}


# -- the command line ---------------------------------------------------------------------------------
def test_cli_indexes_a_url_with_progress_and_a_report(
    server: SiteServer, allow_loopback: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.html("/docs/", page("Start", "The start page.", ("a.html", "missing.html")))
    server.html("/docs/a.html", page("Alpha", "The quorum of the board is seven members."))
    store = str(tmp_path / "store")
    assert main(["index", f"{server.base}/docs/", "--store", store, "--delay", "0", "--no-progress"]) == 0
    out, err = capsys.readouterr()
    assert f"[1/500] new {server.base}/docs/" in err and f"new {server.base}/docs/a.html" in err
    assert "2 new, 0 changed" in out and f"skipped {server.base}/docs/missing.html: HTTP 404" in out
    assert main(["search", "quorum board", "--store", store, "--json"]) == 0
    assert f'"source": "{server.base}/docs/a.html"' in capsys.readouterr().out
    assert main(["index", f"{server.base}/docs/", "--store", store, "--delay", "0", "--no-progress"]) == 0
    assert "0 new, 0 changed, 2 unchanged" in capsys.readouterr().out


def test_cli_names_urls_in_help_and_refuses_mangled_urls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("HAYGRAPH_ALLOW_PRIVATE_HOSTS", raising=False)
    help_text = build_parser().format_help()
    assert "websites" in help_text and ".md .txt .html)" not in help_text
    store = str(tmp_path / "s")
    assert main(["index", "http:/127.0.0.1:9/docs/", "--store", store]) == 2
    assert "write http://host/path" in capsys.readouterr().err
    assert main(["index", "ftp://example.com/x", "--store", store]) == 2
    assert "only http:// and https://" in capsys.readouterr().err
    assert main(["index", "http://127.0.0.1:9/docs/", "--store", store]) == 2
    assert "--allow-private-hosts" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["index", "http://127.0.0.1:9/docs/", "--store", store, "--max-pages", "0"])
    assert "--max-pages" in capsys.readouterr().err
