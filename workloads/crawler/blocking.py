"""The crawler in the blocking style: plain functions calling the variant's blocking API.

Diff it with coroutines.py: the same program without ``await``, with ``co.spawn(fn, *args)`` and
``co.timeout_after(seconds, fn, *args)`` where the coroutines style passes a coroutine object.
The workers, the Queue of URLs, the Pool of keep-alive connections and the per-request timeout
are coroutines.py's; only where a task may be switched away is no longer written down.
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
    """Crawl from books.start on the coroutines API `co`; the results are in `books`."""
    connections = [Connection() for _ in range(books.options.connections)]
    try:
        co.run(crawl_all, co, books, connections)
    finally:  # however the run ended (Ctrl-C included), the sockets to the origin close
        close_all(connections)


def crawl_all(co, books, connections):
    queue = co.Queue()
    pool = Pool(co, connections)
    pool.fill()
    queue.put(books.start)
    workers = []
    for _ in range(books.options.concurrency):
        worker = co.spawn(work, co, books, queue, pool)
        workers.append(worker)
    queue.join()
    for worker in workers:
        co.cancel(worker)


def work(co, books, queue, pool):
    """Visit queued URLs until cancelled."""
    while True:
        url = queue.get()
        try:
            visit(co, books, queue, pool, url)
        finally:
            queue.task_done()


def visit(co, books, queue, pool, url):
    """Fetch url and the redirects it leads to; queue the new links of the page."""
    chain = books.chain(url)
    while url is not None:
        try:
            response = fetch(co, books, pool, url)
        except FetchError as error:
            books.failed(chain, error)
            return
        outcome = books.handle(chain, response)
        for link in outcome.links:
            queue.put(link)
        url = outcome.follow


def fetch(co, books, pool, url):
    """One request on a pooled connection; resent once, afresh, if a reused connection died."""
    request = books.request(url)
    timeout = books.options.timeout
    connection = pool.acquire()
    try:
        while True:
            try:
                response = co.timeout_after(timeout, exchange, co, books, connection, request)
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
        pool.release(connection)


def exchange(co, books, connection, request):
    """Send the request and read the whole response, connecting first if the slot is empty."""
    if connection.sock is None:
        connect(co, books, connection)
    parser = ResponseParser(books.options.max_bytes)
    try:
        co.sendall(connection.sock, request)
        done = False
        while not done:
            data = co.recv(connection.sock, RECV_SIZE)
            done = parser.feed(data) if data else parser.feed_eof()
    except OSError as error:
        raise error_for_os(error, connecting=False) from None
    response = parser.response()
    connection.done(response)
    return response


def connect(co, books, connection):
    sock = connection.open(books.family)
    try:
        co.connect(sock, books.address)
    except OSError as error:
        raise error_for_os(error, connecting=True) from None


class Pool:
    """Keep-alive connections to the origin: a Queue of slots, options.connections of them."""

    def __init__(self, co, connections):
        self.slots = co.Queue()
        self.connections = connections

    def fill(self):
        for connection in self.connections:
            self.slots.put(connection)

    def acquire(self):
        connection = self.slots.get()
        self.slots.task_done()
        return connection

    def release(self, connection):
        self.slots.put(connection)
