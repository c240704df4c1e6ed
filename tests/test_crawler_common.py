"""The crawler's loop-free parts on their own: URLs, HTTP parsing, link extraction, the books."""

import io

import pytest

from workloads.crawler.common import (
    BadURL,
    Connection,
    Crawl,
    FetchError,
    Options,
    Origin,
    Progress,
    Response,
    ResponseParser,
    canonical,
    extract_links,
    is_stale,
    normalize,
    request_bytes,
    resolve,
)

START = "http://127.0.0.1:8080/"


# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM:80", "http://example.com/"),
        ("http://example.com:8080/a#frag", "http://example.com:8080/a"),
        ("https://example.com:443/x?y=1", "https://example.com/x?y=1"),
        ("http://a/b/./c/../d", "http://a/b/d"),
        ("http://a/b/c/..", "http://a/b/"),
        ("http://a/../../x", "http://a/x"),
        ("http://a/x.y/z", "http://a/x.y/z"),
        ("http://a/with space/é", "http://a/with%20space/%C3%A9"),
        ("http://a/already%20escaped", "http://a/already%20escaped"),
        ("http://[::1]:9/", "http://[::1]:9/"),
        ("  http://a/  ", "http://a/"),
    ],
)
def test_normalize_gives_one_spelling_per_resource(url, expected):
    assert normalize(url) == expected


@pytest.mark.parametrize("url", ["ftp://a/", "mailto:x@y", "http://", "http://a:99999/", "a/b"])
def test_normalize_rejects_what_cannot_be_fetched(url):
    with pytest.raises(BadURL):
        normalize(url)


@pytest.mark.parametrize(
    ("base", "href", "expected"),
    [
        ("http://h/p/3.html", "5.html", "http://h/p/5.html"),
        ("http://h/p/3.html", "../q/5.html#x", "http://h/q/5.html"),
        ("http://h/p/3.html", "/abs", "http://h/abs"),
        ("http://h/p/3.html", "//other:81/x", "http://other:81/x"),
        ("http://h/p/3.html", "#top", "http://h/p/3.html"),
        ("http://h/p/3.html", "  5.html\n", "http://h/p/5.html"),
        ("http://h/p/3.html", "?q=1", "http://h/p/3.html?q=1"),
        ("http://h/p/", "..", "http://h/"),
        ("http://h/", "mailto:someone@example.com", None),
        ("http://h/", "javascript:void(0)", None),
        ("http://h/", "tel:+1555", None),
        ("http://h/", "ftp://h/file", None),
        ("http://h/", "http://h:bad/", None),
    ],
)
def test_resolve_joins_normalizes_and_drops_other_schemes(base, href, expected):
    assert resolve(base, href) == expected


def test_origin_compares_scheme_host_and_port():
    origin = Origin.of("http://Example.com:80/start")
    assert (origin.scheme, origin.host, origin.port) == ("http", "example.com", 80)
    assert origin.host_header == "example.com"
    assert origin.owns("http://example.com/x")
    assert origin.owns("http://example.com/")
    assert not origin.owns("https://example.com/x")
    assert not origin.owns("http://example.com:8080/x")
    assert not origin.owns("http://example.com.evil/x")
    assert Origin.of("http://127.0.0.1:8080/").host_header == "127.0.0.1:8080"


def test_request_is_a_keep_alive_get_for_the_path_and_query():
    origin = Origin.of(START)
    request = request_bytes("http://127.0.0.1:8080/a/b?c=d", origin).decode()
    lines = request.split("\r\n")
    assert lines[0] == "GET /a/b?c=d HTTP/1.1"
    assert "Host: 127.0.0.1:8080" in lines
    assert "Connection: keep-alive" in lines
    assert request.endswith("\r\n\r\n")


# --- HTTP responses -----------------------------------------------------------------------


def head(*headers: str, status: str = "200 OK", version: str = "1.1") -> bytes:
    return ("\r\n".join([f"HTTP/{version} {status}", *headers]) + "\r\n\r\n").encode()


def feed_all(parser: ResponseParser, data: bytes, step: int = 1) -> bool:
    done = False
    for i in range(0, len(data), step):
        done = parser.feed(data[i : i + step])
    return done


def test_content_length_body_fed_byte_by_byte():
    parser = ResponseParser()
    data = head("Content-Type: text/html; charset=utf-8", "Content-Length: 5") + b"hello"
    assert feed_all(parser, data[:-1]) is False
    assert parser.feed(data[-1:]) is True
    response = parser.response()
    assert (response.status, response.body, response.keep_alive) == (200, b"hello", True)
    assert response.content_type == "text/html"


def test_chunked_body_is_reassembled():
    parser = ResponseParser()
    data = head("Transfer-Encoding: chunked") + b"3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\n\r\n"
    assert feed_all(parser, data, step=3)
    assert parser.response().body == b"abcdefg"
    assert parser.response().keep_alive


def test_body_delimited_by_close_completes_at_eof_and_is_not_kept_alive():
    parser = ResponseParser()
    assert parser.feed(head("Connection: close") + b"all of it") is False
    assert parser.feed_eof() is True
    response = parser.response()
    assert response.body == b"all of it"
    assert response.keep_alive is False


def test_http_1_0_and_connection_close_are_not_kept_alive():
    for data in (
        head("Content-Length: 0", version="1.0"),
        head("Content-Length: 0", "Connection: close"),
    ):
        parser = ResponseParser()
        assert parser.feed(data)
        assert parser.response().keep_alive is False


def test_no_body_statuses_complete_at_the_head():
    parser = ResponseParser()
    assert parser.feed(head(status="304 Not Modified"))
    assert parser.response().body == b""


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"", "reset"),
        (b"HTTP/1.1 200 OK\r\nContent-", "malformed"),
        (head("Content-Length: 10") + b"short", "truncated"),
        (head("Transfer-Encoding: chunked") + b"5\r\nab", "truncated"),
    ],
)
def test_early_close_is_an_error_of_its_kind(data, kind):
    parser = ResponseParser()
    if data:
        assert parser.feed(data) is False
    with pytest.raises(FetchError) as info:
        parser.feed_eof()
    assert info.value.kind == kind


def test_truncated_keeps_the_status():
    parser = ResponseParser()
    parser.feed(head("Content-Length: 10") + b"short")
    with pytest.raises(FetchError) as info:
        parser.feed_eof()
    assert info.value.status == 200


@pytest.mark.parametrize("data", [b"HTTP/1.1 2OO OK\r\n\r\n", b"<html>not http</html>"])
def test_garbage_is_malformed(data):
    with pytest.raises(FetchError) as info:
        ResponseParser().feed(data)
    assert info.value.kind == "malformed"


def test_too_big_by_content_length_fails_at_the_head():
    with pytest.raises(FetchError) as info:
        ResponseParser(max_bytes=100).feed(head("Content-Length: 101"))
    assert (info.value.kind, info.value.status) == ("too-big", 200)


def test_too_big_by_counting_a_chunked_body():
    parser = ResponseParser(max_bytes=100)
    parser.feed(head("Transfer-Encoding: chunked"))
    parser.feed(b"40\r\n" + b"x" * 64 + b"\r\n")
    with pytest.raises(FetchError) as info:
        parser.feed(b"40\r\n" + b"x" * 64 + b"\r\n")
    assert info.value.kind == "too-big"


def test_bytes_after_the_response_spoil_the_connection():
    parser = ResponseParser()
    assert parser.feed(head("Content-Length: 2") + b"okHTTP/1.1 200 OK\r\n")
    assert parser.response().keep_alive is False


def test_response_before_completion_is_an_error():
    with pytest.raises(RuntimeError):
        ResponseParser().response()


def test_only_a_reused_connection_that_resets_is_stale():
    reused, fresh = Connection(served=3), Connection()
    assert is_stale(reused, FetchError("reset"))
    assert not is_stale(fresh, FetchError("reset"))
    assert not is_stale(reused, FetchError("timeout"))


def test_unknown_error_kind_is_refused():
    with pytest.raises(ValueError, match="unknown error kind"):
        FetchError("oops")


# --- HTML ---------------------------------------------------------------------------------


def test_links_come_from_a_real_html_parser():
    html = b"""<html><head><base href="/docs/"></head><body>
    <a href="a.html">a</a> <A HREF='B.html'>b</A> <a href=c.html>c</a>
    <a href="d&#46;html">entity</a> <a name="x">no href</a> <a href="  e.html  ">pad</a>
    <!-- <a href="commented.html">x</a> -->
    <script>document.write('<a href="scripted.html">x</a>')</script>
    <a href="mailto:x@y">mail</a></body></html>"""
    links = extract_links(html, "http://h/start/page.html")
    assert links == [
        "http://h/docs/a.html",
        "http://h/docs/B.html",
        "http://h/docs/c.html",
        "http://h/docs/d.html",
        "http://h/docs/e.html",
        "mailto:x@y",
    ]


def test_links_without_base_are_relative_to_the_page():
    assert extract_links(b'<a href="x">', "http://h/a/b") == ["http://h/a/x"]


# --- the books ----------------------------------------------------------------------------


def html_response(body: str, status: int = 200, **headers: str) -> Response:
    return Response(status, {"content-type": "text/html", **headers}, body.encode(), True)


def redirect(location: str | None, status: int = 302) -> Response:
    headers = {"location": location} if location else {}
    return Response(status, headers, b"", True)


def test_a_page_yields_its_new_same_origin_links_once():
    books = Crawl(START)
    page = (
        '<a href="/a">a</a><a href="/a#again">again</a><a href="b">b</a><a href="/">start</a>'
        '<a href="http://127.0.0.1:9/x">other port</a><a href="http://localhost:8080/">host</a>'
        '<a href="mailto:x@y">mail</a><a href="javascript:void(0)">js</a>'
    )
    outcome = books.handle(books.chain(START), html_response(page))
    assert outcome.links == ["http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b"]
    assert outcome.follow is None
    assert books.off_origin == {"http://127.0.0.1:9/x", "http://localhost:8080/"}
    assert books.ignored == {"mailto:x@y", "javascript:void(0)"}
    assert books.seen == {START, *outcome.links}
    again = books.handle(books.chain(START + "a"), html_response('<a href="/b">b</a>'))
    assert again.links == []


@pytest.mark.parametrize(
    ("response", "kind"),
    [
        (html_response("gone", 404), "http-4xx"),
        (html_response("oops", 503), "http-5xx"),
        (html_response("hm", 101), "http-other"),
        (Response(200, {"content-type": "text/plain"}, b'<a href="/x">', True), "not-html"),
        (Response(200, {}, b'<a href="/x">', True), "not-html"),
        (redirect(None), "malformed"),
        (redirect("http://elsewhere/"), "off-origin-redirect"),
        (redirect("mailto:x@y"), "off-origin-redirect"),
    ],
)
def test_responses_that_are_errors_are_recorded_by_kind_and_not_followed(response, kind):
    books = Crawl(START)
    outcome = books.handle(books.chain(START), response)
    assert (outcome.links, outcome.follow) == ([], None)
    assert books.errors == {kind: 1}
    record = books.records[START]
    assert (record.status, record.error) == (response.status, kind)


def test_redirects_are_followed_within_the_origin():
    books = Crawl(START)
    chain = books.chain(START)
    assert books.handle(chain, redirect("/next", 301)).follow == START + "next"
    assert books.handle(chain, redirect("../again")).follow == START + "again"
    assert chain.urls == [START, START + "next", START + "again"]
    assert not books.errors


def test_a_redirect_back_into_its_chain_is_a_loop():
    books = Crawl(START)
    chain = books.chain(START)
    books.handle(chain, redirect("/b"))
    assert books.handle(chain, redirect("/")).follow is None
    assert books.errors == {"redirect-loop": 1}
    assert books.records[START + "b"].error == "redirect-loop"


def test_redirects_beyond_the_limit_are_an_error():
    books = Crawl(START, Options(max_redirects=2))
    chain = books.chain(START)
    follows = [books.handle(chain, redirect(f"/{i}")).follow for i in range(3)]
    assert follows == [START + "0", START + "1", None]
    assert books.errors == {"too-many-redirects": 1}


def test_a_redirect_to_a_seen_url_ends_quietly():
    books = Crawl(START)
    books.admit(START + "known")
    assert books.handle(books.chain(START), redirect("/known")).follow is None
    assert not books.errors


def test_max_pages_caps_what_is_admitted():
    books = Crawl(START, Options(max_pages=3))
    page = "".join(f'<a href="/{i}">' for i in range(10))
    outcome = books.handle(books.chain(START), html_response(page))
    assert len(outcome.links) == 2
    assert len(books.seen) == 3
    assert books.over_budget == 8


def test_failures_and_summary():
    books = Crawl(START)
    books.handle(books.chain(START), html_response('<a href="/a">', **{"x": "y"}))
    books.failed(books.chain(START + "a"), FetchError("timeout", "slow"))
    summary = books.summary()
    assert summary["pages_fetched"] == 2
    assert summary["pages_ok"] == 1
    assert summary["errors"] == {"timeout": 1}
    assert [p.as_json()["error"] for p in books.pages()] == [None, "timeout"]


def test_https_and_unresolvable_hosts_are_clear_errors():
    with pytest.raises(BadURL, match="TLS"):
        Crawl("https://127.0.0.1/")
    with pytest.raises(BadURL, match="cannot resolve"):
        Crawl("http://no-such-host.invalid/")


def test_canonical_is_none_for_other_schemes():
    assert canonical("mailto:x@y") is None
    assert canonical("http://a") == "http://a/"


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_line_only_on_a_terminal():
    books = Crawl(START)
    quiet = io.StringIO()
    Progress(quiet).show(books, force=True)
    assert quiet.getvalue() == ""
    terminal = Terminal()
    progress = Progress(terminal)
    progress.show(books, force=True)
    assert "0 fetched, 0 errors, 1 pending" in terminal.getvalue()
    progress.done()
    assert terminal.getvalue().endswith("\r\x1b[K")
