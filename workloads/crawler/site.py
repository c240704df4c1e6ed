"""The embedded site server: a seeded site graph (with its truth) or a directory, with faults.

    python -m workloads.crawler.site --port 0 --pages 1000 --links 8 --seed 1 \\
        [--faults all|KIND[=N],...] [--delay-ms D] [--truth FILE]
    python -m workloads.crawler.site --port 0 --root DIR

The crawler's peer, in its own process, on uvloop's transports and httptools' parser, with
every response but the faults prepared at start-up. The fault kinds, and the crawler error
each must produce, are :data:`FAULTS`. What the seeded site holds, its truth file and its
``/_site/log``: ``workloads/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import itertools
import json
import mimetypes
import posixpath
import random
import signal
import socket
import struct
import sys
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import httptools
import uvloop

from workloads.common import number, port_number, positive
from workloads.crawler.common import DEFAULT_MAX_REDIRECTS

SERVER = "lab-site/0.1 (uvloop+httptools)"
LOG_PATH = "/_site/log"
SLOW_INTERVAL = 0.2  # seconds between the bytes of a slow body
DRIP_INTERVAL = 1.0  # ... and of a dripping one
MANY_LINKS = 10_000
# Byte sequences that are not UTF-8: a lone continuation byte, a truncated sequence, an
# overlong '/', an encoded surrogate, a 5-byte form, and bytes UTF-8 never uses.
INVALID_UTF8 = (
    b"\x80",
    b"\xc3\x28",
    b"\xe2\x82",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xfe\xff",
)
HUGE_CHUNK = 64 * 1024

# fault name -> (what the server does, the crawler error kind it must produce)
FAULTS: dict[str, tuple[str, str]] = {
    "404": ("answers 404 with an HTML body whose links must not be followed", "http-4xx"),
    "500": ("answers 500 with an HTML body whose links must not be followed", "http-5xx"),
    "reset": ("resets the connection (RST) as soon as the request arrives", "reset"),
    "truncated": ("announces a Content-Length and closes halfway through the body", "truncated"),
    "slow": ("sends the head, then one body byte every 0.2 s, never finishing", "timeout"),
    "huge": ("a chunked HTML body of --huge-bytes (the crawler must stop reading)", "too-big"),
    "malformed": ("answers with a status line that is not HTTP", "malformed"),
    "not-html": ("a text/plain body (with links in it that must not be followed)", "not-html"),
    "redirect-loop": ("redirects to a second URL that redirects back", "redirect-loop"),
    "too-many-redirects": (
        f"a chain of {DEFAULT_MAX_REDIRECTS + 5} redirects (the crawler's limit is "
        f"{DEFAULT_MAX_REDIRECTS})",
        "too-many-redirects",
    ),
    "off-origin-redirect": ("redirects to the other origin", "off-origin-redirect"),
    "drip": ("sends the head, then one body byte a second, never finishing", "timeout"),
    "lying-length": (
        "a Content-Length twice the body it sends, then silence on an open connection",
        "timeout",
    ),
    # Hostile but valid: a correct crawler records no error, and follows the links.
    "bad-utf8": ("an HTML page declared UTF-8 with invalid UTF-8 around its links", None),
    "many-links": (
        f"an HTML page with {MANY_LINKS:,} links: repeats of pages in many spellings, "
        "distinct other origins, javascript: and mailto:",
        None,
    ),
}
# Faults that are pages with links of their own (in the graph), not responses played out.
PAGE_FAULTS = ("bad-utf8", "many-links")
REDIRECT_STATUSES = (301, 302, 303, 307, 308)
REASONS = {200: "OK", 404: "Not Found", 500: "Internal Server Error", 400: "Bad Request"}
REASONS |= {301: "Moved Permanently", 302: "Found", 303: "See Other"}
REASONS |= {307: "Temporary Redirect", 308: "Permanent Redirect", 405: "Method Not Allowed"}


def parse_faults(spec: str) -> dict[str, int]:
    """'all' or 'KIND[=N],...' -> {kind: count}; a clear ValueError for anything else."""
    if spec.strip() == "all":
        return dict.fromkeys(FAULTS, 1)
    counts: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        kind, _, count = item.partition("=")
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; faults are all, {', '.join(FAULTS)}")
        if count and not count.isdigit():
            raise ValueError(f"fault count must be a whole number: {item!r}")
        counts[kind] = counts.get(kind, 0) + (int(count) if count else 1)
    return counts


# --- responses ----------------------------------------------------------------------------


def head_bytes(status: int, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", f"Server: {SERVER}"]
    lines += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked(body: bytes, size: int) -> bytes:
    """The body in chunked transfer coding, `size` bytes a chunk."""
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size])
        for i in range(0, len(body), size)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


@dataclass
class Prepared:
    """A response prepared at start-up: head and body bytes, and whether to close after it."""

    head: bytes
    body: bytes
    close: bool = False

    @property
    def status(self) -> int:
        return int(self.head[9:12])  # b"HTTP/1.1 200 ..."

    @classmethod
    def html(cls, status: int, text: str, framing: str = "length") -> Prepared:
        body = text.encode()
        headers = [("Content-Type", "text/html; charset=utf-8")]
        if framing == "chunked":
            headers.append(("Transfer-Encoding", "chunked"))
            return cls(head_bytes(status, headers), chunked(body, 1000))
        if framing == "close":  # no length: the body ends when the connection does
            headers.append(("Connection", "close"))
            return cls(head_bytes(status, headers), body, close=True)
        headers.append(("Content-Length", str(len(body))))
        return cls(head_bytes(status, headers), body)

    @classmethod
    def redirect(cls, status: int, location: str) -> Prepared:
        body = f'<a href="{html.escape(location)}">moved</a>'.encode()
        headers = [("Location", location), ("Content-Type", "text/html")]
        return cls(head_bytes(status, [*headers, ("Content-Length", str(len(body)))]), body)

    @classmethod
    def plain(cls, status: int, content_type: str, body: bytes) -> Prepared:
        headers = [("Content-Type", content_type), ("Content-Length", str(len(body)))]
        return cls(head_bytes(status, headers), body)


@dataclass
class Fault:
    """A response that misbehaves on purpose; played by the connection (see Connection.fault)."""

    kind: str
    body: bytes = b""
    size: int = 0


# --- the seeded site ----------------------------------------------------------------------


@dataclass
class Link:
    """One link slot of a page: what it points at, before it is spelled."""

    kind: str  # page | redirect | fault | off-origin | odd | fragment
    target: str = ""  # the path on this site, or the full URL for off-origin and odd


@dataclass
class SeededSite:
    """A site graph drawn from a seed, its prepared responses, and the truth about it."""

    pages: int
    links: int
    seed: int
    faults: dict[str, int] = field(default_factory=dict)
    huge_bytes: int = 2 << 20
    routes: dict[str, Prepared | Fault] = field(default_factory=dict)
    truth: dict = field(default_factory=dict)

    def build(self, origin: str, elsewhere: str) -> None:
        """Draw the graph and prepare every response, for a site served at `origin`."""
        rng = random.Random(self.seed)
        self.origin, self.elsewhere = origin, elsewhere
        n = self.pages
        orphans = set(rng.sample(range(1, n), k=n // 10)) if n > 1 else set()
        linkable = [i for i in range(n) if i not in orphans]
        canaries: list[str] = []
        graph = {page_path(i): self._draw_links(rng, linkable, i) for i in range(n)}
        # Faults hang off pages a crawl reaches, so each one is in the truth exactly once.
        reachable_pages = [p for p in self._reach(graph, {}) if p in graph]
        fault_routes: dict[str, list[str]] = {}  # entry path -> further paths of its chain
        for kind, count in self.faults.items():
            for k in range(count):
                entry = f"/fault/{kind}/{k}"
                if kind in PAGE_FAULTS:
                    graph[entry] = self._hostile_links(rng, kind, linkable, sorted(orphans))
                else:
                    fault_routes[entry] = self._prepare_fault(kind, entry, canaries)
                graph[rng.choice(reachable_pages)].append(Link("fault", entry))
        for i in range(n):
            path = page_path(i)
            framing = "chunked" if i % 5 == 3 else "close" if i % 7 == 5 else "length"
            text = self._page_html(rng, path, graph[path], canaries)
            self.routes[path] = Prepared.html(200, text, framing)
        for path in (p for p in graph if p.startswith("/fault/")):
            self.routes[path] = self._hostile_page(rng, path, graph[path])
        for i in range(n):
            target = page_path(i)
            location = rng.choice([origin + target[1:], target, "../" + target[1:]])
            self.routes[f"/go/{i}"] = Prepared.redirect(REDIRECT_STATUSES[i % 5], location)
        for k, path in enumerate(canaries):
            self.routes[path] = Prepared.html(200, f"<title>canary {k}</title>never linked")
        self.truth = self._truth(graph, fault_routes, canaries, orphans)

    def _draw_links(self, rng: random.Random, linkable: list[int], i: int) -> list[Link]:
        drawn = []
        for _ in range(self.links):
            r = rng.random()
            if r < 0.10:
                drawn.append(Link("redirect", f"/go/{rng.randrange(self.pages)}"))
            elif r < 0.16:
                k = rng.randrange(50)
                other = [f"{self.elsewhere}x/{k}.html"]
                if "://127.0.0.1:" in self.origin:
                    other.append(self.origin.replace("127.0.0.1", "localhost") + f"p/{k}.html")
                drawn.append(Link("off-origin", rng.choice(other)))
            elif r < 0.20:
                k = rng.randrange(20)
                odd = [f"mailto:web{k}@example.invalid", f"javascript:void({k})", f"tel:+1555{k}"]
                drawn.append(Link("odd", rng.choice([*odd, f"ftp://127.0.0.1/{k}"])))
            elif r < 0.23:
                drawn.append(Link("fragment"))
            else:
                drawn.append(Link("page", page_path(rng.choice(linkable))))
        return drawn

    def _spell(self, rng: random.Random, source: str, link: Link) -> str:
        """One of the many ways to write a link to link.target from page `source`."""
        if link.kind in ("off-origin", "odd"):
            return link.target
        if link.kind == "fragment":
            return f"#s{rng.randrange(5)}"
        target = link.target
        forms = [
            target,
            posixpath.relpath(target, posixpath.dirname(source) or "/"),
            self.origin + target[1:],
            "HTTP://" + self.origin.split("://", 1)[1] + target[1:],
            "/p/../" + target[1:],
            target.replace(".", "&#46;"),
            f"  {target}\n",
        ]
        spelled = rng.choice(forms)
        return spelled + f"#f{rng.randrange(9)}" if rng.random() < 0.2 else spelled

    def _page_html(self, rng: random.Random, path: str, links: list[Link], canaries: list) -> str:
        items = []
        for n, link in enumerate(links):
            href = self._spell(rng, path, link)
            quoted = attribute(href)
            tag = rng.choice(
                [f'<a href="{quoted}">', f"<A HREF='{quoted}'>", f'<a class=x href="{quoted}">']
            )
            items.append(f"<li>{tag}link {n}</a></li>")
        hidden = [new_canary(canaries), new_canary(canaries)]
        words = " ".join(rng.choice(WORDS) for _ in range(120))
        return (
            f"<!doctype html><html><head><meta charset=utf-8><title>{path}</title></head>"
            f'<body><h1 id="s0">{path}</h1><p id="s1">{words}</p><ul id="s2">{"".join(items)}</ul>'
            f'<!-- <a href="{hidden[0]}">commented out</a> -->'
            f"<script>document.write('<a href=\"{hidden[1]}\">scripted</a>')</script>"
            f'<a name="s3">an anchor without href</a><p id="s4">{words[:200]}</p></body></html>'
        )

    def _hostile_links(
        self, rng: random.Random, kind: str, linkable: list[int], orphans: list[int]
    ) -> list[Link]:
        """The links of a hostile page (kind in PAGE_FAULTS)."""
        if kind == "bad-utf8":  # pages linked from nowhere else: missing them shows
            targets = orphans[:3] or linkable[:3]
            return [Link("page", page_path(i)) for i in targets]
        links = [Link("page", page_path(rng.choice(linkable))) for _ in range(MANY_LINKS // 2)]
        links += [Link("off-origin", f"{self.elsewhere}many/{j}.html") for j in range(2500)]
        links += [Link("odd", f"javascript:void({j})") for j in range(1000)]
        links += [Link("odd", f"mailto:m{j}@example.invalid") for j in range(1000)]
        links += [Link("fragment")] * (MANY_LINKS - len(links))
        rng.shuffle(links)
        return links

    def _hostile_page(self, rng: random.Random, path: str, links: list[Link]) -> Prepared:
        """A hostile page's response: bytes the crawler must cope with, links it must follow."""
        anchors = [
            f'<a href="{attribute(self._spell(rng, path, link))}">'.encode() for link in links
        ]
        if path.startswith("/fault/bad-utf8/"):
            items = [
                b"<li>" + bad + anchor + b"link " + bad + b"</a>" + bad + b"</li>"
                for anchor, bad in zip(anchors, itertools.cycle(INVALID_UTF8), strict=False)
            ]
            body = b"<!doctype html><title>bad " + INVALID_UTF8[0] + b"</title><ul>"
            body += b"".join(items) + b"</ul>" + b"".join(INVALID_UTF8)
        else:
            body = b"<!doctype html><title>many links</title>" + b".</a>".join(anchors)
        headers = [("Content-Type", "text/html; charset=utf-8")]
        return Prepared(head_bytes(200, [*headers, ("Content-Length", str(len(body)))]), body)

    def _prepare_fault(self, kind: str, entry: str, canaries: list[str]) -> list[str]:
        """Add the routes of one fault; return the chain paths that follow its entry."""
        trap = f'<a href="{new_canary(canaries)}">must not be followed</a>'
        if kind in ("404", "500"):
            self.routes[entry] = Prepared.html(int(kind), f"<title>{kind}</title>{trap}")
        elif kind == "not-html":
            self.routes[entry] = Prepared.plain(200, "text/plain", trap.encode())
        elif kind == "redirect-loop":
            self.routes[entry] = Prepared.redirect(302, entry + "/b")
            back = "../" + entry.rsplit("/", 1)[1]  # relative, from .../k/b to .../k
            self.routes[entry + "/b"] = Prepared.redirect(307, back)
            return [entry + "/b"]
        elif kind == "too-many-redirects":
            hops = [f"{entry}/hop/{j}" for j in range(DEFAULT_MAX_REDIRECTS + 5)]
            for here, there in zip([entry, *hops], hops, strict=False):
                self.routes[here] = Prepared.redirect(302, there)
            return hops[:DEFAULT_MAX_REDIRECTS]  # a correct crawl stops there
        elif kind == "off-origin-redirect":
            self.routes[entry] = Prepared.redirect(302, f"{self.elsewhere}landing")
        elif kind == "huge":
            self.routes[entry] = Fault(kind, trap.encode(), self.huge_bytes)
        else:  # reset, truncated, slow, drip, lying-length, malformed: played by the connection
            self.routes[entry] = Fault(kind, (f"<p>{trap}</p>" * 40).encode())
        return []

    def _reach(self, graph: dict[str, list[Link]], chains: dict[str, list[str]]) -> list[str]:
        """The paths a correct crawl fetches from '/', in breadth-first order."""
        order, seen, todo = [], {"/"}, deque(["/"])
        while todo:
            path = todo.popleft()
            order.append(path)
            if path in chains:
                nexts = chains[path]
            elif path.startswith("/go/"):
                nexts = [page_path(int(path[4:]))]
            else:
                nexts = [link.target for link in graph.get(path, ()) if link.kind in LINKED]
            for nxt in nexts:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return order

    def _truth(self, graph, fault_routes, canaries, orphans) -> dict:
        pages: dict[str, dict] = {}
        errors: Counter[str] = Counter()
        chains = {entry: rest[:1] for entry, rest in fault_routes.items()}  # entry -> next hop
        for rest in fault_routes.values():
            for here, there in itertools.pairwise(rest):
                chains[here] = [there]
        for path in self._reach(graph, chains):
            status, error = self._expect(path, fault_routes)
            pages[self.origin + path[1:]] = {"status": status, "error": error}
            if error:
                errors[error] += 1
        html_pages = [p for p in graph if self.origin + p[1:] in pages]
        links = [link for p in html_pages for link in graph[p]]
        never = [*canaries, *(page_path(i) for i in sorted(orphans))]
        return {
            "start": self.origin,
            "assumes": {
                "max_redirects": DEFAULT_MAX_REDIRECTS,
                "max_bytes_below": self.huge_bytes,
                "max_bytes_at_least": max(
                    len(r.body) for r in self.routes.values() if isinstance(r, Prepared)
                ),
                "timeout": "any: a slow body never ends",
            },
            "pages": dict(sorted(pages.items())),
            "errors": dict(sorted(errors.items())),
            "off_origin_links": len({link.target for link in links if link.kind == "off-origin"}),
            "ignored_links": len({link.target for link in links if link.kind == "odd"}),
            "unreachable": sorted(
                self.origin + p[1:] for p in never if self.origin + p[1:] not in pages
            ),
        }

    def _expect(
        self, path: str, fault_routes: dict[str, list[str]]
    ) -> tuple[int | None, str | None]:
        """(status, error kind) a correct crawler records for one reachable path."""
        route = self.routes[path]
        if not path.startswith("/fault/"):
            return route.status, None  # a page (200) or a /go/ redirect
        kind = path.split("/")[2]
        error = FAULTS[kind][1]
        if isinstance(route, Fault):  # played by the connection: no status when there is no head
            unanswered = ("reset", "slow", "malformed", "drip", "lying-length")
            return (None if kind in unanswered else 200), error
        chain = fault_routes.get("/".join(path.split("/")[:4]), [])  # paths after the entry
        if kind in ("too-many-redirects", "redirect-loop") and path != (
            chain[-1] if chain else path
        ):
            return route.status, None  # a hop the crawler follows; the last one is the error
        return route.status, error


LINKED = ("page", "redirect", "fault")
WORDS = ("event", "loop", "select", "epoll", "future", "task", "yield", "await", "callback")


def attribute(href: str) -> str:
    """href as the value of a double-quoted attribute (its character references kept)."""
    return href.replace('"', "&quot;")


def page_path(i: int) -> str:
    return "/" if i == 0 else f"/p/{i}.html"


def new_canary(canaries: list[str]) -> str:
    canaries.append(f"/canary/{len(canaries)}.html")
    return canaries[-1]


# --- the static site ----------------------------------------------------------------------


class StaticSite:
    """Any directory served as a static site; files are read when asked for."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise ValueError(f"--root must be a directory: {root}")
        self.root = root.resolve()

    def lookup(self, path: str) -> Prepared:
        try:
            local = (self.root / unquote(path).lstrip("/")).resolve()
            local.relative_to(self.root)  # no escaping the root with ../
        except (ValueError, OSError):
            return Prepared.html(404, "<title>404</title>not found")
        if local.is_dir():
            if not path.endswith("/"):
                return Prepared.redirect(301, path + "/")
            if (local / "index.html").is_file():
                local = local / "index.html"
            else:
                return Prepared.html(200, listing(path, local))
        if not local.is_file():
            return Prepared.html(404, "<title>404</title>not found")
        kind, encoding = mimetypes.guess_type(local.name)
        if kind is None or encoding is not None:
            kind = "application/octet-stream"
        elif kind.startswith("text/"):
            kind += "; charset=utf-8"
        return Prepared.plain(200, kind, local.read_bytes())


def listing(path: str, directory: Path) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in directory.iterdir())
    items = "".join(f'<li><a href="{quote(name)}">{html.escape(name)}</a></li>' for name in names)
    return f"<title>{html.escape(path)}</title><h1>{html.escape(path)}</h1><ul>{items}</ul>"


# --- the server ---------------------------------------------------------------------------


@dataclass
class Stats:
    """What the server saw, for /_site/log."""

    requests: Counter = field(default_factory=Counter)  # (method, host, target) -> count
    elsewhere_hits: int = 0
    open: int = 0
    max_open: int = 0

    def as_json(self) -> bytes:
        rows = [[*key, count] for key, count in sorted(self.requests.items())]
        log = {"requests": rows, "elsewhere_hits": self.elsewhere_hits, "max_open": self.max_open}
        return json.dumps(log).encode()


class Connection(asyncio.Protocol):
    """One client connection: parse requests with httptools, answer them in order."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.parser = httptools.HttpRequestParser(self)
        self.pending: deque[tuple[str, str, str, bool]] = deque()  # method, host, target, keep
        self.busy = False  # an answer that takes time is being written
        self.answering: asyncio.Future | None = None  # the task writing it
        self.transport: asyncio.Transport | None = None
        self.writable: asyncio.Future | None = None  # set while the transport is paused
        self._url = b""
        self._host = ""

    # asyncio.Protocol
    def connection_made(self, transport) -> None:
        self.transport = transport
        stats = self.server.stats
        stats.open += 1
        stats.max_open = max(stats.max_open, stats.open)

    def connection_lost(self, exc) -> None:
        self.server.stats.open -= 1
        self.transport = None
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self.writable is not None and not self.writable.done():
            self.writable.set_result(None)

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.write(Prepared.html(400, "bad request", "close").head)
            self.transport.close()

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"host":
            self._host = value.decode("latin-1")

    def on_message_complete(self) -> None:
        method = self.parser.get_method().decode()
        request = (method, self._host, self._url.decode("latin-1"), self.parser.should_keep_alive())
        self._url, self._host = b"", ""
        self.pending.append(request)
        if not self.busy:
            self.answer_pending()

    # answering
    def answer_pending(self) -> None:
        while self.pending and not self.busy and self.transport is not None:
            method, host, target, keep = self.pending.popleft()
            self.server.stats.requests[(method, host, target)] += 1
            route = self.server.route(target)
            if self.server.delay or isinstance(route, Fault):
                self.busy = True
                self.answering = asyncio.ensure_future(self.answer_later(method, route, keep))
            else:
                self.send(method, route, keep)

    def send(self, method: str, route: Prepared, keep: bool) -> None:
        self.transport.write(route.head if method == "HEAD" else route.head + route.body)
        if route.close or not keep:
            self.transport.close()

    async def answer_later(self, method: str, route: Prepared | Fault, keep: bool) -> None:
        try:
            if self.server.delay:
                await asyncio.sleep(self.server.delay)
            if self.transport is None:
                return
            if isinstance(route, Fault):
                await self.fault(route)
            else:
                self.send(method, route, keep)
        finally:
            self.busy = False
        self.answer_pending()

    async def fault(self, fault: Fault) -> None:
        transport = self.transport
        html_type = ("Content-Type", "text/html")
        if fault.kind == "reset":
            sock = transport.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        elif fault.kind == "malformed":
            transport.write(b"HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok")
            transport.close()
        elif fault.kind == "truncated":
            length = ("Content-Length", str(len(fault.body)))
            transport.write(
                head_bytes(200, [html_type, length]) + fault.body[: len(fault.body) // 2]
            )
            transport.close()
        elif fault.kind in ("slow", "drip"):
            interval = SLOW_INTERVAL if fault.kind == "slow" else DRIP_INTERVAL
            transport.write(head_bytes(200, [html_type, ("Content-Length", str(len(fault.body)))]))
            for byte in fault.body:
                await asyncio.sleep(interval)
                if self.transport is None:
                    return
                transport.write(bytes([byte]))
            transport.close()
        elif fault.kind == "lying-length":
            promised = ("Content-Length", str(2 * len(fault.body)))
            transport.write(head_bytes(200, [html_type, promised]) + fault.body)
            # ... and the rest never comes: the connection stays open until the crawler gives up
        elif fault.kind == "huge":
            transport.write(head_bytes(200, [html_type, ("Transfer-Encoding", "chunked")]))
            chunk = (fault.body * (HUGE_CHUNK // len(fault.body) + 1))[:HUGE_CHUNK]
            for _ in range(fault.size // HUGE_CHUNK):
                if self.transport is None:
                    return
                transport.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                if self.writable is not None:
                    await self.writable
            if self.transport is not None:
                transport.write(b"0\r\n\r\n")


class Elsewhere(asyncio.Protocol):
    """The other origin: counts every connection that sends it anything, answers 404."""

    def __init__(self, stats: Stats) -> None:
        self.stats = stats

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.stats.elsewhere_hits += 1
        self.transport.write(Prepared.html(404, "elsewhere", "close").head)
        self.transport.close()


@dataclass
class Server:
    """Routes, stats and settings shared by the connections."""

    site: SeededSite | StaticSite
    delay: float = 0.0
    stats: Stats = field(default_factory=Stats)

    def route(self, target: str) -> Prepared | Fault:
        path = urlsplit(target).path or "/"
        if path == LOG_PATH:
            return Prepared.plain(200, "application/json", self.stats.as_json())
        if isinstance(self.site, StaticSite):
            return self.site.lookup(path)
        return self.site.routes.get(path) or Prepared.html(404, "<title>404</title>not found")


async def serve(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    site = (
        StaticSite(Path(args.root))
        if args.root
        else SeededSite(
            args.pages, args.links, args.seed, parse_faults(args.faults), args.huge_bytes
        )
    )
    server = Server(site, args.delay_ms / 1000)
    try:
        main = await loop.create_server(
            lambda: Connection(server), args.host, args.port, backlog=4096
        )
        other = await loop.create_server(lambda: Elsewhere(server.stats), args.host, 0)
    except OSError as error:  # e.g. the port is in use: a clear message, not a traceback
        raise ValueError(f"cannot listen on {args.host}:{args.port}: {error.strerror}") from None
    port, other_port = (s.sockets[0].getsockname()[1] for s in (main, other))
    origin, elsewhere = f"http://{args.host}:{port}/", f"http://{args.host}:{other_port}/"
    if isinstance(site, SeededSite):
        site.build(origin, elsewhere)
        if args.truth:
            Path(args.truth).write_text(json.dumps(site.truth, indent=1) + "\n")
        what = f"{site.pages} pages, {site.links} links each, seed {site.seed}"
    else:
        what = f"static {site.root}"
    print(
        f"site {origin} ({what}; other origin {elsewhere}; log {origin}{LOG_PATH[1:]})", flush=True
    )
    stop = loop.create_future()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set_result, None)
    await stop
    main.close()
    other.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.crawler.site",
        description="The crawler's site server: a seeded site graph or a directory, with faults.",
    )
    parser.add_argument(
        "--port", type=port_number, required=True, help="0 picks a free port (printed)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--pages", type=int, help="seeded mode: number of pages")
    mode.add_argument("--root", help="static mode: the directory to serve")
    parser.add_argument("--links", type=int, default=8, help="links per page (seeded mode)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the site graph")
    parser.add_argument(
        "--faults", default="", help="'all' or KIND[=N],... of " + ", ".join(FAULTS)
    )
    parser.add_argument(
        "--huge-bytes", type=positive(int), default=2 << 20, help="size of a huge page"
    )
    parser.add_argument(
        "--delay-ms", type=number(float, 0.0), default=0.0, help="latency added to every answer"
    )
    parser.add_argument("--truth", help="write what a correct crawl finds to this JSON file")
    args = parser.parse_args(argv)
    if args.root and (args.faults or args.truth):
        parser.error("--faults and --truth need a seeded site (--pages), not --root")
    if args.pages is not None and (args.pages < 1 or args.links < 0):
        parser.error("--pages must be at least 1 and --links at least 0")
    try:
        parse_faults(args.faults)
    except ValueError as error:
        parser.error(str(error))
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    try:
        uvloop.run(serve(args))
    except ValueError as error:
        sys.exit(f"site: {error}")


if __name__ == "__main__":
    main()
