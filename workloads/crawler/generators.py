"""The crawler in the generators style: generator functions driven by ``yield from``.

Diff it against coroutines.py (the same program with ``async``/``await``) and callbacks.py
(the same program as a chain of callbacks): the names and the structure are the same, only the
style differs. This is the "500 Lines or Less" crawler's own style, before ``await`` existed:
a generator yields until the loop resumes it, and ``yield from`` delegates to another one.
Everything that is not waiting (HTTP, HTML, URLs, the books) is in common.py.

The shape: a Queue of URLs, --concurrency workers taking from it, ``queue.join()`` to know the
crawl is over, then the workers cancelled. A worker visits a URL: fetches it, follows its
redirects within the origin, queues the new links. Connections are kept alive in a Pool,
itself a Queue of slots (a connected socket, or an empty slot to connect), so at most
``options.connections`` are open to the origin at once. Each request (connect, send, the
whole response) runs under ``timeout_after``.
"""

from __future__ import annotations

from typing import Any

from workloads.crawler.common import (
    RECV_SIZE,
    Connection,
    Crawl,
    FetchError,
    ResponseParser,
    close_all,
    error_for_os,
    is_stale,
)


def crawl(co: Any, books: Crawl) -> None:
    """Crawl from books.start on the generators API `co`; the results are in `books`."""
    connections = [Connection() for _ in range(books.options.connections)]
    try:
        co.run(crawl_all(co, books, connections))
    finally:  # however the run ended (Ctrl-C included), the sockets to the origin close
        close_all(connections)


def crawl_all(co, books, connections):
    queue = co.Queue()
    pool = Pool(co, connections)
    yield from pool.fill()
    yield from queue.put(books.start)
    workers = []
    for _ in range(books.options.concurrency):
        worker = yield from co.spawn(work(co, books, queue, pool))
        workers.append(worker)
    yield from queue.join()
    for worker in workers:
        yield from co.cancel(worker)


def work(co, books, queue, pool):
    """Visit queued URLs until cancelled."""
    while True:
        url = yield from queue.get()
        try:
            yield from visit(co, books, queue, pool, url)
        finally:
            queue.task_done()


def visit(co, books, queue, pool, url):
    """Fetch url and the redirects it leads to; queue the new links of the page."""
    chain = books.chain(url)
    while url is not None:
        try:
            response = yield from fetch(co, books, pool, url)
        except FetchError as error:
            books.failed(chain, error)
            return
        outcome = books.handle(chain, response)
        for link in outcome.links:
            yield from queue.put(link)
        url = outcome.follow


def fetch(co, books, pool, url):
    """One request on a pooled connection; resent once, afresh, if a reused connection died."""
    request = books.request(url)
    timeout = books.options.timeout
    connection = yield from pool.acquire()
    try:
        while True:
            try:
                response = yield from co.timeout_after(
                    timeout,
                    exchange(co, books, connection, request),
                )
                return response
            except TimeoutError:
                error = FetchError("timeout", f"no full response in {timeout} s")
            except FetchError as caught:
                error = caught
            stale = is_stale(connection, error)
            connection.close()  # the slot is empty now: a retry connects afresh
            if not stale:
                raise error
    finally:
        yield from pool.release(connection)


def exchange(co, books, connection, request):
    """Send the request and read the whole response, connecting first if the slot is empty."""
    if connection.sock is None:
        yield from connect(co, books, connection)
    parser = ResponseParser(books.options.max_bytes)
    try:
        yield from co.sendall(connection.sock, request)
        done = False
        while not done:
            data = yield from co.recv(connection.sock, RECV_SIZE)
            done = parser.feed(data) if data else parser.feed_eof()
    except OSError as error:
        raise error_for_os(error, connecting=False) from None
    response = parser.response()
    connection.done(response)
    return response


def connect(co, books, connection):
    sock = connection.open(books.family)
    try:
        yield from co.connect(sock, books.address)
    except OSError as error:
        raise error_for_os(error, connecting=True) from None


class Pool:
    """Keep-alive connections to the origin: a Queue of slots, options.connections of them."""

    def __init__(self, co, connections):
        self.slots = co.Queue()
        self.connections = connections

    def fill(self):
        for connection in self.connections:
            yield from self.slots.put(connection)

    def acquire(self):
        connection = yield from self.slots.get()
        self.slots.task_done()
        return connection

    def release(self, connection):
        yield from self.slots.put(connection)
