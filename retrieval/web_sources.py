"""Websites as sources: crawl a page, a sitemap or a site root politely, and safely, into Documents.

`crawl_site(url, settings, known)` reads a site the way `haygraph index URL` needs it:

- **what**: a sitemap URL (``.xml``, or a plain-text list) gives its pages; otherwise the site's
  sitemaps named in ``robots.txt`` (or ``/sitemap.xml``) give the pages under the start URL's path,
  and without any, links are followed from the start page, breadth first, staying under its path;
- **politely**: ``robots.txt`` is obeyed (``Crawl-delay`` too), one request at a time over one
  connection per host with `CrawlSettings.delay` seconds between requests, a user agent that names
  haygraph, a page limit and a depth limit;
- **safely**: every host is resolved once and its addresses checked: loopback, private, link-local,
  multicast and reserved addresses are refused unless `CrawlSettings.allow_private_hosts` (the
  connection then goes to the address that was checked, so a DNS answer cannot change between the
  check and the request); redirects are followed by hand, only on the same site and at most
  `max_redirects` times (a loop is named as one); a body is read up to `max_page_bytes` and within
  `timeout` seconds (connect, each read, and the whole page); a page that fails is listed in
  `CrawlResult.failed` and the crawl goes on;
- **by type**: HTML through the project's converter (`formats.html`), PDF, office files, CSV,
  Markdown and plain text through `MultiFormatConverter`, and images (``image/png``, ``image/jpeg``,
  ``image/webp``, ``image/tiff``) by OCR (`formats.images`) when the ``ocr`` extra is installed (without
  it, an image or a scanned PDF is skipped with a reason that names the extra); other content types
  are skipped and listed;
- **re-sync**: pages already stored (`known`) are asked for with ``If-None-Match`` /
  ``If-Modified-Since`` when their links are not needed (a sitemap drives the crawl, or the page is
  revisited past the depth limit); a page whose links are followed is fetched whole, since a 304 has
  no body and so no links, and a page added to the site is found only through them. A 304, or a body
  whose hash is the stored one, is unchanged; a page that answers 404/410, or (when a sitemap drives
  the crawl) is gone from it, is vanished.

The source id of a page is its canonical URL: ``<link rel="canonical">`` when it points inside the
crawled scope, else the URL the page was served from; URLs are normalised (scheme and host lower
case, default port and fragment dropped). Fetching uses urllib3 (trafilatura's own HTTP client)
directly rather than trafilatura's or courlan's crawlers: those fetch through their own settings,
which would bypass the address check and the size and time limits, and courlan's URL filter rejects
an IP host with a port (``127.0.0.1:8080``) and links to PDFs. trafilatura reads the ``Sitemap:``
lines of robots.txt (`trafilatura.sitemaps.extract_robots_sitemaps`).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import os
import socket
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import urllib3
from haystack import Document

from haygraph import __version__
from haygraph.retrieval.errors import InputError, OcrUnavailableError

__all__ = [
    "USER_AGENT",
    "CrawlResult",
    "CrawlSettings",
    "PageEvent",
    "PageState",
    "UrlRefusedError",
    "WebSourceError",
    "check_url",
    "crawl_site",
    "is_url",
    "normalize_url",
    "private_hosts_allowed",
]

logger = logging.getLogger(__name__)

USER_AGENT = f"haygraph/{__version__} (documentation indexer; haygraph index URL)"
"""The user agent every request sends: it names the project, so a site's operator can see who reads it."""

ALLOW_PRIVATE_ENV = "HAYGRAPH_ALLOW_PRIVATE_HOSTS"
"""Set to ``1`` to allow loopback and private addresses (as ``--allow-private-hosts`` does)."""

_HTML_TYPES = {"text/html", "application/xhtml+xml"}
_TYPE_SUFFIX = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/csv": ".csv",
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "image/png": ".png",  # images: read by OCR (the ocr extra)
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "image/tiff": ".tiff",
}
_SUFFIX_GUESS = {
    ".html": ".html",
    ".htm": ".html",
    **{s: s for s in _TYPE_SUFFIX.values()},
    ".markdown": ".md",
    ".jpeg": ".jpg",
    ".tif": ".tiff",
}


class WebSourceError(InputError):
    """A site cannot be crawled at all (its start page or robots.txt cannot be read)."""


class UrlRefusedError(WebSourceError):
    """A URL is refused: a scheme other than http(s), or a host on a loopback/private address not allowed."""


class _PageError(Exception):
    """One page failed (listed in `CrawlResult.failed`; the crawl goes on)."""


@dataclass(frozen=True)
class CrawlSettings:
    """Limits and manners of a crawl (the `haygraph index URL` flags).

    :param max_pages: Pages (and other documents) fetched at most, robots.txt and sitemaps aside.
    :param max_depth: Links followed from the start page at most (sitemap pages are at depth 0).
    :param delay: Seconds between two requests to the site (raised to robots.txt's ``Crawl-delay``,
        up to 60).
    :param timeout: Seconds allowed to connect, for each read, and for a whole page.
    :param max_page_bytes: A body larger than this is refused (``Content-Length`` checked first, then
        counted while it is read).
    :param max_redirects: Redirects followed per request.
    :param allow_private_hosts: Allow hosts whose address is loopback, private, link-local or reserved
        (default: the `HAYGRAPH_ALLOW_PRIVATE_HOSTS` environment variable is ``1``).
    :param user_agent: Sent with every request, and the name robots.txt rules are matched against.
    """

    max_pages: int = 500
    max_depth: int = 10
    delay: float = 0.5
    timeout: float = 20.0
    max_page_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    allow_private_hosts: bool | None = None
    user_agent: str = USER_AGENT

    def __post_init__(self) -> None:
        for name in ("max_pages", "max_page_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, but got {value!r}")
        for name in ("max_depth", "max_redirects"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0, but got {value!r}")
        if not isinstance(self.delay, int | float) or not 0 <= self.delay <= 60:
            raise ValueError(f"delay must be between 0 and 60 seconds, but got {self.delay!r}")
        if not isinstance(self.timeout, int | float) or not 0 < self.timeout <= 600:
            raise ValueError(f"timeout must be between 0 and 600 seconds, but got {self.timeout!r}")

    @property
    def private_allowed(self) -> bool:
        """Whether loopback/private addresses may be crawled (the setting, else the environment)."""
        return private_hosts_allowed() if self.allow_private_hosts is None else self.allow_private_hosts


def private_hosts_allowed() -> bool:
    """True when ``HAYGRAPH_ALLOW_PRIVATE_HOSTS=1`` (or ``true``/``yes``) is set."""
    return os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in {"1", "true", "yes"}


@dataclass(frozen=True)
class PageState:
    """What the store remembers of a page, for conditional requests and the content hash."""

    etag: str | None = None
    last_modified: str | None = None
    source_hash: str | None = None


@dataclass(frozen=True)
class PageEvent:
    """One page done; `status`: ``new``, ``changed``, ``unchanged``, ``vanished``, ``skipped``, ``failed``."""

    url: str
    status: str
    detail: str = ""
    done: int = 0
    limit: int = 0


@dataclass
class CrawlResult:
    """What a crawl found. Documents are the new and changed pages; the lists name the others.

    `unchanged` are source ids answered 304 or with the stored hash; `vanished` maps source ids to why
    (404/410, gone from the sitemap, now disallowed by robots.txt); `skipped` and `failed` are
    ``"url: reason"`` lines; `unchecked` are known pages the page limit left unvisited (kept).
    """

    site: str
    documents: list[Document] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    vanished: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    unchecked: list[str] = field(default_factory=list)
    requests: int = 0
    not_modified: int = 0
    bytes_read: int = 0
    seconds: float = 0.0


def is_url(text: str) -> bool:
    """True when `text` is meant as a web address (``http://`` or ``https://``, any case)."""
    return isinstance(text, str) and text.strip().lower().startswith(("http://", "https://"))


def normalize_url(url: str) -> str:
    """`url` with scheme and host in lower case, default port and fragment dropped, path ``/`` if empty."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = parts.port
    netloc = host if port is None or (scheme, port) in {("http", 80), ("https", 443)} else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def _scope(url: str) -> tuple[str, str]:
    """(origin, path prefix) of a start URL: pages under the folder of its path are in scope."""
    norm = normalize_url(url)
    parts = urlsplit(norm)
    prefix = parts.path if parts.path.endswith("/") else parts.path.rsplit("/", 1)[0] + "/"
    return f"{parts.scheme}://{parts.netloc}", prefix


def _refused_address(address: str) -> str | None:
    """Why an IP address is refused without permission (None: a public address)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for flag in ("loopback", "link_local", "unspecified", "multicast", "reserved", "private"):
        if getattr(ip, f"is_{flag}"):
            return flag.replace("_", "-")
    return None


class _Fetcher:
    """One request at a time, one pinned connection per host, every limit of `CrawlSettings` applied."""

    def __init__(self, settings: CrawlSettings, origin: str) -> None:
        self.settings = settings
        self.origin = origin
        self.delay = float(settings.delay)
        self.pools: dict[tuple[str, str, int], urllib3.HTTPConnectionPool] = {}
        self.last_request = 0.0
        self.requests = 0
        self.bytes_read = 0

    def close(self) -> None:
        for pool in self.pools.values():
            pool.close()

    def _pool(self, scheme: str, host: str, port: int) -> urllib3.HTTPConnectionPool:
        key = (scheme, host, port)
        if key in self.pools:
            return self.pools[key]
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise _PageError(f"cannot resolve host {host!r}: {exc}") from exc
        addresses = sorted({str(info[4][0]) for info in infos})
        if not addresses:
            raise _PageError(f"cannot resolve host {host!r}")
        if not self.settings.private_allowed:
            for address in addresses:
                why = _refused_address(address)
                if why:
                    raise UrlRefusedError(
                        f"{host} resolves to {why} address {address}: refused (allow loopback and private "
                        f"hosts with --allow-private-hosts or {ALLOW_PRIVATE_ENV}=1)"
                    )
        timeout = urllib3.Timeout(connect=self.settings.timeout, read=self.settings.timeout)
        common: dict[str, Any] = {"maxsize": 1, "block": True, "timeout": timeout, "retries": False}
        pool: urllib3.HTTPConnectionPool
        if scheme == "https":
            # connect to the checked address; the certificate is still checked against the host name
            pool = urllib3.HTTPSConnectionPool(
                addresses[0], port, server_hostname=host, assert_hostname=host, **common
            )
        else:
            pool = urllib3.HTTPConnectionPool(addresses[0], port, **common)
        self.pools[key] = pool
        return pool

    def get(
        self, url: str, headers: dict[str, str] | None = None, *, limit: int | None = None
    ) -> tuple[int, str, dict[str, str], bytes]:
        """GET `url` following same-site redirects: (status, final URL, headers in lower case, body).

        Raises `_PageError` (off-site redirect, loop, too many redirects, too large, too slow, network
        failure) or `UrlRefusedError` (a refused address).
        """
        limit = limit or self.settings.max_page_bytes
        seen: list[str] = []
        current = url
        for _ in range(self.settings.max_redirects + 1):
            seen.append(current)
            status, head, body = self._once(current, headers or {}, limit)
            if status in {301, 302, 303, 307, 308} and "location" in head:
                target = normalize_url(urljoin(current, head["location"]))
                if not target.startswith(self.origin + "/") and target != self.origin:
                    raise _PageError(f"redirect to another site not followed ({target})")
                if target in seen:
                    raise _PageError(f"redirect loop ({' -> '.join([*seen, target])})")
                current = target
                continue
            return status, current, head, body
        raise _PageError(f"more than {self.settings.max_redirects} redirects")

    def _once(self, url: str, headers: dict[str, str], limit: int) -> tuple[int, dict[str, str], bytes]:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in {"http", "https"}:
            raise UrlRefusedError(f"{url}: only http and https URLs can be indexed")
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
        pool = self._pool(scheme, host, port)
        wait = self.last_request + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        self.last_request = time.monotonic()
        self.requests += 1
        path = urlunsplit(("", "", parts.path or "/", parts.query, ""))
        send = {
            "Host": parts.netloc,
            "User-Agent": self.settings.user_agent,
            "Accept": "text/html,application/xhtml+xml,application/pdf,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "gzip, deflate",
            **headers,
        }
        deadline = time.monotonic() + self.settings.timeout
        try:
            response = pool.urlopen(
                "GET", path, headers=send, redirect=False, preload_content=False, assert_same_host=False
            )
        except urllib3.exceptions.HTTPError as exc:
            raise _PageError(_network_reason(exc, self.settings.timeout)) from exc
        complete = False
        try:
            head = {k.lower(): v for k, v in response.headers.items()}
            declared = head.get("content-length", "")
            if declared.isdigit() and int(declared) > limit:
                raise _PageError(f"too large ({int(declared):,} bytes declared; the limit is {limit:,})")
            chunks: list[bytes] = []
            size = 0
            while True:
                # read1: what one socket read gives, so the page deadline is checked however slowly
                # the bytes come (a read that waits is bounded by the read timeout)
                chunk = response.read1(64 * 1024, decode_content=True)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise _PageError(f"too large (over {limit:,} bytes; the limit is {limit:,})")
                if time.monotonic() > deadline:
                    raise _PageError(f"too slow (no whole page within {self.settings.timeout:g} s)")
                chunks.append(chunk)
            self.bytes_read += size
            complete = True
            return response.status, head, b"".join(chunks)
        except urllib3.exceptions.HTTPError as exc:
            raise _PageError(_network_reason(exc, self.settings.timeout)) from exc
        finally:
            if not complete:  # a body not read to its end: the connection cannot be reused
                response.close()
            response.release_conn()


def _network_reason(exc: Exception, timeout: float) -> str:
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError | urllib3.exceptions.ConnectTimeoutError):
        return f"timed out after {timeout:g} s"
    if isinstance(exc, urllib3.exceptions.ProtocolError) and "timed out" in str(exc):
        return f"timed out after {timeout:g} s"
    reason = getattr(exc, "reason", None) or exc
    return f"network error: {reason}"


def _content_suffix(head: dict[str, str], url: str) -> str | None:
    """The file type a response is read as (``.html``, ``.pdf``...), from its Content-Type, else its URL."""
    content_type = head.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type in _HTML_TYPES:
        return ".html"
    if content_type in _TYPE_SUFFIX:
        return _TYPE_SUFFIX[content_type]
    if content_type in {"", "application/octet-stream"}:
        return _SUFFIX_GUESS.get(Path(urlsplit(url).path).suffix.lower())
    return None


def _charset(head: dict[str, str]) -> str | None:
    for part in head.get("content-type", "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def _decode_html(body: bytes, head: dict[str, str]) -> str:
    from trafilatura.utils import decode_file

    charset = _charset(head)
    if charset:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            pass
    return str(decode_file(body))


@dataclass
class _Parsed:
    links: list[str]
    canonical: str | None
    noindex: bool
    nofollow: bool


def _parse_html(html: str, url: str) -> _Parsed:
    """Links (absolute, fragment-free), the canonical URL and the robots meta of a page (lxml)."""
    import lxml.html
    from lxml import etree

    try:
        tree = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return _Parsed([], None, False, False)
    base = url
    for element in tree.iter("base"):
        href = element.get("href")
        if href:
            base = urljoin(url, href.strip())
            break
    robots = " ".join(
        (m.get("content") or "").lower()
        for m in tree.iter("meta")
        if (m.get("name") or "").lower() == "robots"
    )
    canonical = None
    for element in tree.iter("link"):
        if "canonical" in (element.get("rel") or "").lower().split() and element.get("href"):
            canonical = normalize_url(urljoin(base, element.get("href", "").strip()))
            break
    links: list[str] = []
    for element in tree.iter("a", "area"):
        href = (element.get("href") or "").strip()
        if not href or "nofollow" in (element.get("rel") or "").lower().split():
            continue
        absolute = urljoin(base, href)
        if urlsplit(absolute).scheme.lower() in {"http", "https"}:
            links.append(normalize_url(absolute))
    return _Parsed(
        links, canonical, "noindex" in robots or "none" in robots, "nofollow" in robots or "none" in robots
    )


def _sitemap_entries(text: str) -> tuple[list[str], list[str]]:
    """(page URLs, nested sitemap URLs) of an XML sitemap or sitemap index, or a plain-text URL list."""
    from lxml import etree

    stripped = text.lstrip()
    if not stripped.startswith("<"):
        urls = [line.strip() for line in text.splitlines() if is_url(line.strip())]
        return urls, []
    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True, huge_tree=False)
    try:
        root = etree.fromstring(stripped.encode("utf-8"), parser)
    except etree.XMLSyntaxError:
        return [], []
    if root is None:
        return [], []
    pages: list[str] = []
    nested: list[str] = []
    for loc in root.iter("{*}loc", "loc"):
        value = (loc.text or "").strip()
        if not is_url(value):
            continue
        parent = loc.getparent()
        tag = etree.QName(parent).localname if parent is not None else ""
        (nested if tag == "sitemap" else pages).append(value)
    return pages, nested


def _meta_key(meta: dict[str, Any]) -> bytes:
    """The extra meta as bytes for the content hash (``indexed_at`` says when, not what: left out)."""
    kept = {k: v for k, v in meta.items() if k != "indexed_at"}
    return json.dumps(kept, sort_keys=True, ensure_ascii=False, default=str).encode()


class _Crawl:
    """The state of one crawl (see `crawl_site`)."""

    def __init__(
        self,
        start: str,
        settings: CrawlSettings,
        known: dict[str, PageState],
        meta: dict[str, Any],
        on_page: Callable[[PageEvent], None] | None,
    ) -> None:
        self.start = normalize_url(start)
        self.origin, self.prefix = _scope(start)
        self.settings = settings
        self.known = known
        self.meta = meta
        self.meta_key = _meta_key(meta)
        self.on_page = on_page
        self.fetcher = _Fetcher(settings, self.origin)
        self.result = CrawlResult(site=self.start)
        self.robots: RobotFileParser | None = None
        self.hashes: dict[str, str] = {}  # body hash -> source id (one page served at two URLs)
        self.done: set[str] = set()  # source ids produced or accounted for
        self.pages = 0

    def in_scope(self, url: str) -> bool:
        return url.startswith(self.origin + self.prefix)

    def allowed(self, url: str) -> bool:
        return self.robots is None or self.robots.can_fetch(self.settings.user_agent, url)

    def event(self, url: str, status: str, detail: str = "") -> None:
        if self.on_page is not None:
            self.on_page(PageEvent(url, status, detail, self.pages, self.settings.max_pages))

    # -- robots.txt and sitemaps ----------------------------------------------------------------
    def read_robots(self) -> list[str]:
        """Fetch robots.txt (RFC 9309: a 4xx allows everything; 5xx or no answer stops the crawl)."""
        from trafilatura.sitemaps import extract_robots_sitemaps

        url = self.origin + "/robots.txt"
        try:
            status, _, _, body = self.fetcher.get(url, limit=512 * 1024)
        except _PageError as exc:
            raise WebSourceError(f"{url}: cannot read robots.txt ({exc}); nothing was crawled") from exc
        if status >= 500:
            raise WebSourceError(f"{url}: robots.txt answered {status}; nothing was crawled (RFC 9309)")
        if status >= 400:
            return []
        text = body.decode("utf-8", "replace")
        rules = RobotFileParser()
        rules.parse(text.splitlines())
        self.robots = rules
        delay = rules.crawl_delay(self.settings.user_agent)
        if delay is not None:
            self.fetcher.delay = max(self.fetcher.delay, min(float(delay), 60.0))
        return [normalize_url(u) for u in extract_robots_sitemaps(text, self.origin) or []]

    def read_sitemaps(self, sitemaps: list[str]) -> list[str] | None:
        """The in-scope page URLs of `sitemaps` (nested ones followed); None when none could be read."""
        queue = deque(s for s in sitemaps if s.startswith(self.origin + "/"))
        seen: set[str] = set()
        pages: list[str] = []
        read_any = False
        while queue and len(seen) < 50:
            url = queue.popleft()
            if url in seen:
                continue
            seen.add(url)
            try:
                status, _, _, body = self.fetcher.get(url)
            except _PageError as exc:
                self.result.failed.append(f"{url}: sitemap: {exc}")
                continue
            if status != 200:
                continue
            if body[:2] == b"\x1f\x8b":
                self.result.skipped.append(f"{url}: gzip-compressed sitemap files are not read")
                continue
            found, nested = _sitemap_entries(body.decode("utf-8", "replace"))
            if not found and not nested:
                continue
            read_any = True
            pages += [normalize_url(u) for u in found]
            queue.extend(normalize_url(u) for u in nested if normalize_url(u).startswith(self.origin + "/"))
        if not read_any:
            return None
        kept = [u for u in dict.fromkeys(pages) if self.in_scope(u)]
        return kept

    # -- pages -----------------------------------------------------------------------------------
    def run(self) -> CrawlResult:
        started = time.perf_counter()
        try:
            self._run()
        finally:
            self.fetcher.close()
            self.result.requests = self.fetcher.requests
            self.result.bytes_read = self.fetcher.bytes_read
            self.result.seconds = time.perf_counter() - started
        return self.result

    def _run(self) -> None:
        robots_sitemaps = self.read_robots()
        path = urlsplit(self.start).path.lower()
        sitemap_pages: list[str] | None = None
        if path.endswith(".xml") or path.endswith("sitemap.txt"):
            self.origin, self.prefix = _scope(self.origin + "/")  # a sitemap may list the whole site
            sitemap_pages = self.read_sitemaps([self.start])
            if sitemap_pages is None:
                raise WebSourceError(f"{self.start}: not a readable sitemap; nothing was crawled")
        elif urlsplit(self.start).path in {"", "/"} or path.endswith("/index.html"):
            sitemap_pages = self.read_sitemaps(robots_sitemaps or [self.origin + "/sitemap.xml"])
            if sitemap_pages is not None:
                sitemap_pages = [u for u in sitemap_pages if self.in_scope(u)]
        queue: deque[tuple[str, int]]
        # stored pages no link leads to any more are revisited once the links run out (at the depth
        # limit: their links are not followed); a stored page a link reaches is crawled at that link's
        # depth, so a page added and linked from a stored page is found on a re-sync
        revisit: deque[str] = deque()
        if sitemap_pages is not None:
            queue = deque((u, 0) for u in sitemap_pages)
        else:
            queue = deque([(self.start, 0)])
            revisit.extend(u for u in self.known if u != self.start)
        queued = {u for u, _ in queue}
        follow = sitemap_pages is None
        while queue or revisit:
            if not queue:
                stored = revisit.popleft()
                if stored not in queued:
                    queued.add(stored)
                    queue.append((stored, self.settings.max_depth))
                continue
            url, depth = queue.popleft()
            if self.pages >= self.settings.max_pages:
                rest = list(
                    dict.fromkeys([url, *(u for u, _ in queue), *(u for u in revisit if u not in queued)])
                )
                self.result.unchecked = sorted(u for u in rest if u in self.known and u not in self.done)
                self.result.skipped.append(
                    f"{self.start}: page limit {self.settings.max_pages} reached; "
                    f"{len(rest)} URL(s) not fetched"
                )
                break
            links = self.page(url, need_links=follow and depth < self.settings.max_depth)
            if follow and depth < self.settings.max_depth:
                for link in links:
                    if link not in queued and self.in_scope(link):
                        queued.add(link)
                        queue.append((link, depth + 1))
        if sitemap_pages is not None:
            # stored pages the sitemap no longer lists and no listed URL led to (by a redirect or a
            # canonical link) are gone
            for source_id in self.known:
                if source_id not in queued and source_id not in self.done:
                    self.result.vanished[source_id] = "gone from the sitemap"
                    self.event(source_id, "vanished", "gone from the sitemap")

    def page(self, url: str, *, need_links: bool = False) -> list[str]:
        """Fetch one page, record what happened to it; return the links to follow.

        A stored page is asked for conditionally (ETag, Last-Modified) unless `need_links`: a 304
        has no body to read links from, so a page whose links the crawl follows is fetched whole
        and compared by hash (an unchanged page is not converted or embedded again either way).
        """
        if url in self.done:
            return []
        if not self.allowed(url):
            if url in self.known:
                self.result.vanished[url] = "disallowed by robots.txt"
                self.done.add(url)
                self.event(url, "vanished", "disallowed by robots.txt")
            else:
                self.result.skipped.append(f"{url}: disallowed by robots.txt")
                self.event(url, "skipped", "disallowed by robots.txt")
            return []
        self.pages += 1
        state = self.known.get(url)
        headers: dict[str, str] = {}
        if state is not None and state.etag and not need_links:
            headers["If-None-Match"] = state.etag
        if state is not None and state.last_modified and not need_links:
            headers["If-Modified-Since"] = state.last_modified
        try:
            status, final, head, body = self.fetcher.get(url, headers)
        except _PageError as exc:
            return self.fail(url, str(exc))
        except UrlRefusedError as exc:
            return self.fail(url, str(exc))
        if status == 304 and state is not None:
            self.result.not_modified += 1
            return self.unchanged(url)
        if status in {404, 410}:
            if url in self.known:
                self.result.vanished[url] = f"HTTP {status}"
                self.done.add(url)
                self.event(url, "vanished", f"HTTP {status}")
            else:
                self.skip(url, f"HTTP {status}")
            return []
        if status != 200:
            return self.fail(url, f"HTTP {status}")
        suffix = _content_suffix(head, final)
        if suffix is None:
            content_type = head.get("content-type", "").split(";", 1)[0].strip() or "none"
            return self.skip(url, f"unsupported content type {content_type!r}")
        final = normalize_url(final)
        links: list[str] = []
        html = ""
        source_id = final
        if suffix == ".html":
            html = _decode_html(body, head)
            parsed = _parse_html(html, final)
            links = [] if parsed.nofollow else parsed.links
            if parsed.canonical and self.in_scope(parsed.canonical):
                source_id = parsed.canonical
            if parsed.noindex:
                self.skip(url, "the page asks not to be indexed (<meta name=robots content=noindex>)")
                return links
        self.done.add(url)
        if url in self.known and source_id != url:  # a stored page now redirects or names another URL
            self.result.vanished[url] = f"moved to {source_id}"
            self.event(url, "vanished", f"moved to {source_id}")
        if source_id in self.done and source_id != url:
            self.skip(url, f"same page as {source_id}")
            return links
        digest = hashlib.sha256(body + b"\x00" + self.meta_key).hexdigest()
        if digest in self.hashes and self.hashes[digest] != source_id:
            self.skip(url, f"same content as {self.hashes[digest]}")
            return links
        self.hashes[digest] = source_id
        self.done.add(source_id)
        known = self.known.get(source_id)
        if known is not None and known.source_hash == digest:
            self.unchanged(source_id, record=False)
            return links
        try:
            text, title, starts = _convert(body, suffix, html, source_id)
        except OcrUnavailableError as exc:  # an image or a scan, and no OCR: skipped, as a folder's are
            return self.skip(url, str(exc))
        except InputError as exc:
            return self.fail(url, str(exc).replace(str(_TMP_MARK), source_id))
        meta = {
            **self.meta,
            "source_id": source_id,
            "source": source_id,
            "url": source_id,
            "site": self.result.site,
            "title": title,
            "source_hash": digest,
            **({"etag": head["etag"]} if head.get("etag") else {}),
            **({"last_modified": head["last-modified"]} if head.get("last-modified") else {}),
            **({"page_starts": starts} if starts else {}),
        }
        self.result.documents.append(Document(content=text, meta=meta))
        status_name = "changed" if known is not None else "new"
        (self.result.changed if known is not None else self.result.new).append(source_id)
        self.event(source_id, status_name)
        return links

    def unchanged(self, url: str, *, record: bool = True) -> list[str]:
        self.done.add(url)
        self.result.unchanged.append(url)
        self.event(url, "unchanged", "not modified" if record else "same content")
        return []

    def fail(self, url: str, reason: str) -> list[str]:
        self.done.add(url)
        self.result.failed.append(f"{url}: {reason}")
        self.event(url, "failed", reason)
        return []

    def skip(self, url: str, reason: str) -> list[str]:
        self.done.add(url)
        self.result.skipped.append(f"{url}: {reason}")
        self.event(url, "skipped", reason)
        return []


_TMP_MARK = "page"


def _convert(body: bytes, suffix: str, html: str, url: str) -> tuple[str, str, list[int] | None]:
    """(Markdown text, title, page starts) of a fetched document, by the project's converters."""
    from haygraph.retrieval.converters import MultiFormatConverter, html_to_markdown
    from haygraph.retrieval.errors import EmptyDocumentError

    if suffix == ".html":
        text = html_to_markdown(html).replace("\r\n", "\n")
        if not text.strip():
            raise EmptyDocumentError(f"{url}: page has no text content")
        return text, _html_title(html, text, url), None
    with tempfile.TemporaryDirectory(prefix="haygraph-page-") as tmp:
        path = Path(tmp) / f"{_TMP_MARK}{suffix}"
        path.write_bytes(body)
        try:
            documents = MultiFormatConverter(strict=True).run([path])["documents"]
        except InputError as exc:
            raise type(exc)(str(exc).replace(str(path), url)) from exc
    doc = documents[0]
    title = str(doc.meta.get("title") or "")
    if title == _TMP_MARK:
        title = Path(urlsplit(url).path).stem or url
    return doc.content or "", title, doc.meta.get("page_starts")


def _html_title(html: str, text: str, url: str) -> str:
    """The page's first heading, else its ``<title>``, else the URL's last path segment."""
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    import lxml.html

    try:
        title = lxml.html.document_fromstring(html).findtext(".//title")
    except ValueError:
        title = None
    return (title or "").strip() or Path(urlsplit(url).path).stem or url


def _check_syntax(url: Any) -> None:
    """`UrlRefusedError` for what is not an http(s) URL with a host and without credentials."""
    if not isinstance(url, str) or not is_url(url):
        raise UrlRefusedError(f"{str(url)[:200]!r}: only http:// and https:// URLs can be indexed")
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 (a port out of range or not a number raises here)
    except ValueError as exc:
        raise UrlRefusedError(f"{url[:200]!r}: not a valid URL ({exc})") from exc
    if not parts.hostname:
        raise UrlRefusedError(f"{url[:200]!r}: the URL names no host")
    if parts.username or parts.password:
        raise UrlRefusedError(f"{url[:200]!r}: URLs with a user name or password are not indexed")


def check_url(url: str, allow_private_hosts: bool | None = None) -> str:
    """The normalised form of `url` if a crawl may start there; else `UrlRefusedError` says why.

    Checks what `crawl_site` checks before its first request: an http(s) URL with a host and no
    credentials, whose host resolves, and (unless `allow_private_hosts`, default the
    `HAYGRAPH_ALLOW_PRIVATE_HOSTS` environment variable) only to public addresses. The crawl checks
    every host again when it connects (a DNS answer may change in between).
    """
    _check_syntax(url)
    host = urlsplit(url.strip()).hostname or ""
    allowed = private_hosts_allowed() if allow_private_hosts is None else allow_private_hosts
    if not allowed:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise UrlRefusedError(f"cannot resolve host {host!r}: {exc}") from exc
        for address in sorted({str(info[4][0]) for info in infos}):
            why = _refused_address(address)
            if why:
                raise UrlRefusedError(
                    f"{host} resolves to {why} address {address}: refused (the operator allows loopback "
                    f"and private hosts with --allow-private-hosts or {ALLOW_PRIVATE_ENV}=1)"
                )
    return normalize_url(url)


def crawl_site(
    url: str,
    settings: CrawlSettings | None = None,
    known: dict[str, PageState] | None = None,
    meta: dict[str, Any] | None = None,
    on_page: Callable[[PageEvent], None] | None = None,
) -> CrawlResult:
    """Crawl the site at `url` (a page, a sitemap or a site root) into Documents; see the module docstring.

    :param url: ``http://`` or ``https://`` URL.
    :param settings: Limits and manners (`CrawlSettings`).
    :param known: Pages already stored, by source id (canonical URL): asked for conditionally, and the
        ones that are gone are listed in `CrawlResult.vanished`.
    :param meta: Extra meta for every document (``tenant``...); part of the content hash.
    :param on_page: Called after each page (progress).
    :raises UrlRefusedError: Not an http(s) URL, or its host is loopback/private and not allowed.
    :raises WebSourceError: robots.txt cannot be read (5xx, no answer), or a sitemap URL is not one.
    """
    _check_syntax(url)
    crawl = _Crawl(url, settings or CrawlSettings(), known or {}, meta or {}, on_page)
    return crawl.run()
