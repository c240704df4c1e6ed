"""Everything in the crawler that is not concurrency: HTTP, HTML, URLs and the crawl's books.

The three style files (``callbacks.py``, ``generators.py``, ``coroutines.py``) only move bytes
and wait; every decision is made here, without a loop, so it is tested on its own and the
styles cannot drift apart. A crawl has one origin: it resolves its host once, before the loop
starts (the only blocking call, made where blocking is harmless), and never leaves it.
"""

from __future__ import annotations

import socket
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

import httptools
from selectolax.lexbor import LexborHTMLParser

DEFAULT_PORTS = {"http": 80, "https": 443}
DEFAULT_CONCURRENCY = 10
DEFAULT_TIMEOUT = 10.0  # seconds for one request: connect, send and the whole response
DEFAULT_MAX_BYTES = 1 << 20  # a body larger than this is an error, not a page
DEFAULT_MAX_REDIRECTS = 10  # redirects followed from one queued URL before giving up
RECV_SIZE = 256 * 1024
USER_AGENT = "event-loop-lab-crawler/0.1"

ERROR_KINDS: dict[str, str] = {
    "http-4xx": "the server answered with a 4xx status",
    "http-5xx": "the server answered with a 5xx status",
    "http-other": "a status that is neither 2xx, a followable redirect, 4xx nor 5xx",
    "connect": "the connection could not be made (refused, unreachable)",
    "reset": "the connection was reset or closed before any response byte",
    "malformed": "the response is not valid HTTP/1.1 (or a redirect without a Location)",
    "truncated": "the connection closed before the body was complete",
    "timeout": "the request took longer than --timeout",
    "not-html": "a 2xx response that is not text/html: fetched but not parsed for links",
    "too-big": "the body is larger than --max-bytes (reading stops there)",
    "redirect-loop": "a redirect points back into its own chain",
    "too-many-redirects": "more redirects in a row than the limit",
    "off-origin-redirect": "a redirect leaves the crawl's origin (not followed)",
}
HTML_TYPES = ("text/html", "application/xhtml+xml")
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
FOLLOWED_SCHEMES = frozenset(DEFAULT_PORTS)
# Characters left alone when percent-encoding a path or query: RFC 3986's reserved and
# unreserved sets, plus '%' so that existing escapes survive.
_URL_SAFE = "/:@!$&'()*+,;=?~-._%"


class BadURL(ValueError):
    """A URL the crawler cannot fetch (bad port, no host, unsupported scheme)."""


class FetchError(Exception):
    """A fetch that ended without a usable page; `kind` is a key of ERROR_KINDS."""

    def __init__(self, kind: str, detail: str = "", status: int | None = None) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail
        self.status = status


# --- URLs ---------------------------------------------------------------------------------
# Joined with ``urljoin``, then one canonical spelling per resource (lower-case scheme and host,
# default port dropped, empty path made ``/``, dot segments removed, fragment dropped, unsafe
# characters percent-encoded), so de-duplication is a set lookup. Links with schemes other
# than http(s) (``mailto:``, ``javascript:``, ``tel:``, ``file:`` ...) are ignored and counted.


def normalize(url: str) -> str:
    """The canonical spelling of an absolute http(s) URL; BadURL if it cannot be fetched."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in FOLLOWED_SCHEMES:
        raise BadURL(f"not an http(s) URL: {url!r}")
    host = parts.hostname  # lower-cased, brackets of an IPv6 literal removed
    if not host:
        raise BadURL(f"no host in {url!r}")
    try:
        port = parts.port
    except ValueError as error:
        raise BadURL(f"bad port in {url!r}: {error}") from None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    path = quote(_remove_dot_segments(parts.path), safe=_URL_SAFE) or "/"
    query = quote(parts.query, safe=_URL_SAFE)
    return urlunsplit((scheme, netloc, path, query, ""))


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path: '/a/./b/../c' is '/a/c'."""
    if "." not in path:
        return path
    segments = path.split("/")
    kept: list[str] = []
    for segment in segments[1:]:
        if segment == "..":
            if kept:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    if segments[-1] in (".", ".."):
        kept.append("")  # '/a/b/..' names the directory '/a/'
    return "/" + "/".join(kept)


def canonical(url: str) -> str | None:
    """normalize(url), or None for a URL the crawler does not follow (other scheme, bad port)."""
    if urlsplit(url).scheme.lower() not in FOLLOWED_SCHEMES:
        return None
    try:
        return normalize(url)
    except BadURL:
        return None


def resolve(base: str, href: str) -> str | None:
    """The canonical URL an href on page `base` points at; None if it is not followed."""
    return canonical(urljoin(base, href.strip()))


@dataclass(frozen=True)
class Origin:
    """Scheme, host and port: what "same origin" compares (RFC 6454)."""

    scheme: str
    host: str
    port: int

    @classmethod
    def of(cls, url: str) -> Origin:
        parts = urlsplit(normalize(url))
        port = parts.port or DEFAULT_PORTS[parts.scheme]
        return cls(parts.scheme, parts.hostname or "", port)

    def owns(self, url: str) -> bool:
        """True if the normalized `url` belongs to this origin."""
        return url.startswith(self.prefix) and url[len(self.prefix)] in "/?"

    @property
    def prefix(self) -> str:
        netloc = f"[{self.host}]" if ":" in self.host else self.host
        if self.port != DEFAULT_PORTS[self.scheme]:
            netloc += f":{self.port}"
        return f"{self.scheme}://{netloc}"

    @property
    def host_header(self) -> str:
        return self.prefix.split("://", 1)[1]

    def __str__(self) -> str:
        return self.prefix


def resolve_address(origin: Origin) -> tuple[int, tuple]:
    """(address family, socket address) of the origin's host: resolved once per crawl."""
    if origin.scheme != "http":
        raise BadURL(f"{origin.scheme}:// is not supported (no TLS in the lab's crawler)")
    try:
        infos = socket.getaddrinfo(origin.host, origin.port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise BadURL(f"cannot resolve {origin.host!r}: {error}") from None
    family, _, _, _, address = infos[0]
    return family, address


# --- HTTP/1.1 -----------------------------------------------------------------------------
# Requests are a few fixed lines; responses go through httptools (llhttp, the parser inside
# Node.js), a sans-IO parser fed whatever bytes arrive (h11 would do the same in pure Python,
# at many times the CPU per response). It handles ``Content-Length`` and chunked bodies; this
# part adds what httptools leaves to its caller: the end of a body delimited by the connection
# closing, the difference between that and a truncated body, a size cap, and whether the
# connection may be kept alive.


def request_bytes(url: str, origin: Origin) -> bytes:
    """A keep-alive GET for a normalized URL of `origin`."""
    target = url[len(origin.prefix) :] or "/"
    return (
        f"GET {target} HTTP/1.1\r\n"
        f"Host: {origin.host_header}\r\n"
        f"User-Agent: {USER_AGENT}\r\n"
        "Accept: text/html,application/xhtml+xml;q=0.9,*/*;q=0.1\r\n"
        "Accept-Encoding: identity\r\n"
        "Connection: keep-alive\r\n"
        "\r\n"
    ).encode("ascii")


@dataclass
class Response:
    """A complete response: status, headers (names lower-cased, last one wins), body."""

    status: int
    headers: dict[str, str]
    body: bytes
    keep_alive: bool  # the connection may carry the next request

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class ResponseParser:
    """Feed it the bytes of one response as they arrive; it says when the response is done.

    ``feed(data)`` returns True once the response is complete; ``feed_eof()`` is called when
    the peer closes first and either completes a body delimited by the close or raises.
    Both raise :class:`FetchError` (malformed, too-big, truncated, reset).
    """

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.received = 0  # bytes of the response seen so far (head and body)
        self.complete = False
        self._headers: dict[str, str] = {}
        self._chunks: list[bytes] = []
        self._body_size = 0
        self._headers_done = False
        self._too_big = False
        self._extra = False  # bytes after the end of the response: do not reuse the connection
        self._keep_alive = False  # what the response said, read when it completed
        self._parser = httptools.HttpResponseParser(self)

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self._headers_done = True
        length = self._headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_bytes:
            self._too_big = True

    def on_body(self, body: bytes) -> None:
        self._body_size += len(body)
        if self._body_size > self.max_bytes:
            self._too_big = True
        elif body:
            self._chunks.append(body)

    def on_message_begin(self) -> None:
        if self.complete:
            self._extra = True

    def on_message_complete(self) -> None:
        self.complete = True
        # Asked here: once the callback returns, llhttp resets for the next message.
        self._keep_alive = self._parser.should_keep_alive()

    # what the styles call
    def feed(self, data: bytes) -> bool:
        """Parse more bytes; True when the response is complete."""
        self.received += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            if not self.complete:
                raise FetchError("malformed", str(error) or type(error).__name__) from None
            self._extra = True  # garbage after a complete response only spoils the connection
        if self._too_big:
            raise FetchError("too-big", f"body over {self.max_bytes} bytes", self.status)
        return self.complete

    def feed_eof(self) -> bool:
        """The peer closed: complete a close-delimited body, or raise why it is not one."""
        if self.complete:
            return True
        if self.received == 0:
            raise FetchError("reset", "connection closed before any response byte")
        if not self._headers_done:
            raise FetchError("malformed", "connection closed inside the response head")
        if "content-length" in self._headers or self._chunked:
            raise FetchError("truncated", f"closed after {self._body_size} body bytes", self.status)
        self.complete = True  # a body delimited by the end of the connection (RFC 9112 6.3)
        return True

    @property
    def status(self) -> int | None:
        return self._parser.get_status_code() if self._headers_done else None

    @property
    def _chunked(self) -> bool:
        return "chunked" in self._headers.get("transfer-encoding", "").lower()

    def response(self) -> Response:
        """The complete response (call after feed or feed_eof returned True)."""
        if not self.complete:
            raise RuntimeError("the response is not complete yet")
        framed = "content-length" in self._headers or self._chunked
        keep_alive = self._keep_alive and framed and not self._extra
        return Response(self.status or 0, self._headers, b"".join(self._chunks), keep_alive)


def error_for_os(error: OSError, connecting: bool) -> FetchError:
    """The error kind of a socket failure."""
    kind = "connect" if connecting else "reset"
    return FetchError(kind, f"{type(error).__name__}: {error.strerror or error}")


@dataclass
class Connection:
    """A slot of the connection pool: a socket to the origin (None until connected) and how
    many responses it has carried (a reused connection may have been closed by the server)."""

    sock: socket.socket | None = None
    served: int = 0

    def open(self, family: int) -> socket.socket:
        """A new non-blocking TCP socket for this slot."""
        sock = self.sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def done(self, response: Response) -> None:
        """Count a response; close the socket if the response says it cannot be reused."""
        self.served += 1
        if not response.keep_alive:
            self.close()

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.served = None, 0


def close_all(connections: list[Connection]) -> None:
    """Close every pooled connection (the crawl is over, or was interrupted)."""
    for connection in connections:
        connection.close()


def is_stale(connection: Connection, error: FetchError) -> bool:
    """True if a reused keep-alive connection died before answering: retry on a fresh one.

    A server may close an idle connection just as a request is sent; clients (browsers, curl)
    resend once on a new connection when nothing at all came back.
    """
    return connection.served > 0 and error.kind == "reset"


# --- HTML ---------------------------------------------------------------------------------
# selectolax's lexbor, an HTML5 parser; ``<a href>`` and ``<base href>`` only, as a person
# browsing would follow.


def extract_links(html: bytes, page_url: str) -> list[str]:
    """The raw hrefs of the page's <a> elements, made absolute against <base> or the page."""
    tree = LexborHTMLParser(html)
    base = page_url
    base_node = tree.css_first("base[href]")
    if base_node is not None:
        base = urljoin(page_url, (base_node.attributes.get("href") or "").strip())
    hrefs = (node.attributes.get("href") for node in tree.css("a[href]"))
    return [urljoin(base, href.strip()) for href in hrefs if href is not None]


# --- The crawl's books --------------------------------------------------------------------


@dataclass
class PageRecord:
    """One fetched URL: its status (None if no response), error kind or None, body bytes."""

    url: str
    status: int | None
    error: str | None = None
    detail: str = ""
    bytes: int = 0

    def as_json(self) -> dict:
        return {"url": self.url, "status": self.status, "error": self.error, "bytes": self.bytes}


@dataclass
class RedirectChain:
    """The URLs one queued URL went through; redirects are followed within the chain."""

    urls: list[str]

    @property
    def followed(self) -> int:
        return len(self.urls) - 1


@dataclass
class Outcome:
    """What a fetched response means for the crawl: new links to queue, a redirect to follow."""

    links: list[str] = field(default_factory=list)
    follow: str | None = None


@dataclass
class Options:
    """The crawl's knobs, as the CLI passes them to a style."""

    concurrency: int = DEFAULT_CONCURRENCY
    per_host: int | None = None  # connections open at once to the origin; None: concurrency
    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_BYTES
    max_pages: int | None = None
    max_redirects: int = DEFAULT_MAX_REDIRECTS

    @property
    def connections(self) -> int:
        return self.per_host or self.concurrency


class Crawl:
    """The books of one crawl: the seen set, the records, the errors; no I/O, no loop.

    The style files ask it what to fetch (:meth:`admit`), tell it what came back
    (:meth:`handle` or :meth:`failed`), and queue what it returns.
    """

    def __init__(self, start_url: str, options: Options | None = None) -> None:
        self.options = options or Options()
        self.start = normalize(start_url)
        self.origin = Origin.of(self.start)
        self.family, self.address = resolve_address(self.origin)
        self.seen: set[str] = set()  # every URL admitted for fetching
        self.records: dict[str, PageRecord] = {}  # every URL fetched, by URL
        self.errors: Counter[str] = Counter()
        self.off_origin: set[str] = set()  # distinct same-scheme links to other origins
        self.ignored: set[str] = set()  # distinct links with other schemes (mailto: ...)
        self.over_budget = 0  # new URLs not admitted because of --max-pages
        self.bytes = 0  # body bytes received for fetched pages
        self.progress = Progress()
        self.admit(self.start)

    def admit(self, url: str) -> bool:
        """Mark `url` to be fetched; False if it was seen already or the budget is spent."""
        if url in self.seen:
            return False
        if self.options.max_pages is not None and len(self.seen) >= self.options.max_pages:
            self.over_budget += 1
            return False
        self.seen.add(url)
        return True

    def request(self, url: str) -> bytes:
        return request_bytes(url, self.origin)

    def chain(self, url: str) -> RedirectChain:
        return RedirectChain([url])

    def handle(self, chain: RedirectChain, response: Response) -> Outcome:
        """Record the response to the chain's last URL; say what to queue or follow next."""
        url = chain.urls[-1]
        record = self._record(url, response.status, len(response.body))
        status = response.status
        if status in REDIRECT_STATUSES:
            return Outcome(follow=self._redirect(chain, response, record))
        if 200 <= status < 300:
            if response.content_type not in HTML_TYPES:
                self._error(record, "not-html", response.content_type or "no content-type")
                return Outcome()
            return Outcome(links=self._new_links(url, response.body))
        kind = "http-4xx" if 400 <= status < 500 else "http-5xx" if status >= 500 else "http-other"
        self._error(record, kind, str(status))
        return Outcome()

    def failed(self, chain: RedirectChain, error: FetchError) -> None:
        """Record a fetch of the chain's last URL that ended in an error."""
        self._error(self._record(chain.urls[-1], error.status, 0), error.kind, error.detail)

    def _record(self, url: str, status: int | None, size: int) -> PageRecord:
        record = self.records[url] = PageRecord(url, status, bytes=size)
        self.bytes += size
        self.progress.show(self)
        return record

    def _error(self, record: PageRecord, kind: str, detail: str) -> None:
        record.error, record.detail = kind, detail
        self.errors[kind] += 1

    def _redirect(self, chain: RedirectChain, response: Response, record: PageRecord) -> str | None:
        location = response.headers.get("location")
        if not location:
            self._error(record, "malformed", f"{response.status} without a Location")
            return None
        target = resolve(chain.urls[-1], location)
        if target is None or not self.origin.owns(target):
            self._error(record, "off-origin-redirect", location)
            return None
        if target in chain.urls:
            self._error(record, "redirect-loop", f"back to {target}")
            return None
        if chain.followed >= self.options.max_redirects:
            self._error(record, "too-many-redirects", f"{chain.followed} followed")
            return None
        if not self.admit(target):
            return None  # fetched (or queued) already by another path
        chain.urls.append(target)
        return target

    def _new_links(self, page_url: str, html: bytes) -> list[str]:
        new = []
        for link in extract_links(html, page_url):
            url = canonical(link)
            if url is None:
                self.ignored.add(link)
            elif not self.origin.owns(url):
                self.off_origin.add(url)
            elif self.admit(url):
                new.append(url)
        return new

    # --- results ---

    def pages(self) -> list[PageRecord]:
        """Every fetched URL's record, sorted by URL."""
        return [self.records[url] for url in sorted(self.records)]

    def summary(self) -> dict:
        """The counts the CLI prints and writes (without timings)."""
        fetched = len(self.records)
        failed = sum(self.errors.values())
        return {
            "start": self.start,
            "pages_fetched": fetched,
            "pages_ok": fetched - failed,
            "errors": dict(sorted(self.errors.items())),
            "error_count": failed,
            "off_origin_links": len(self.off_origin),
            "ignored_links": len(self.ignored),
            "over_budget": self.over_budget,
            "bytes": self.bytes,
        }


class Progress:
    """A one-line progress display, only when stderr is a terminal, at most ten times a second."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty()
        self._last = 0.0

    def show(self, crawl: Crawl, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        pending = len(crawl.seen) - len(crawl.records)
        self.stream.write(
            f"\r{len(crawl.records)} fetched, {sum(crawl.errors.values())} errors, "
            f"{pending} pending, {crawl.bytes / 1e6:.1f} MB\x1b[K"
        )
        self.stream.flush()

    def done(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
