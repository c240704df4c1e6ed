"""The crawler in the coroutines style: async functions awaiting the variant's coroutines API.

Diff it against generators.py (the same program with ``yield from``) and callbacks.py (the
same program as a chain of callbacks): the names and the structure are the same, only the
style differs. Everything that is not waiting (HTTP, HTML, URLs, the books) is in common.py.

The shape is the "500 Lines or Less" crawler's: a Queue of URLs, --concurrency workers taking
from it, ``queue.join()`` to know the crawl is over, then the workers cancelled. A worker
visits a URL: fetches it, follows its redirects within the origin, queues the new links.
Connections are kept alive in a Pool, itself a Queue of slots (a connected socket, or an
empty slot to connect), so at most ``options.connections`` are open to the origin at once.
Each request (connect, send, the whole response) runs under ``timeout_after``.
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
        co.run(crawl_all(co, books, connections))
    finally:  # however the run ended (Ctrl-C included), the sockets to the origin close
        close_all(connections)


async def crawl_all(co, books, connections):
    queue = co.Queue()
    pool = Pool(co, connections)
    await pool.fill()
    await queue.put(books.start)
    workers = []
    for _ in range(books.options.concurrency):
        worker = await co.spawn(work(co, books, queue, pool))
        workers.append(worker)
    await queue.join()
    for worker in workers:
        await co.cancel(worker)


async def work(co, books, queue, pool):
    """Visit queued URLs until cancelled."""
    while True:
        url = await queue.get()
        try:
            await visit(co, books, queue, pool, url)
        finally:
            queue.task_done()


async def visit(co, books, queue, pool, url):
    """Fetch url and the redirects it leads to; queue the new links of the page."""
    chain = books.chain(url)
    while url is not None:
        try:
            response = await fetch(co, books, pool, url)
        except FetchError as error:
            books.failed(chain, error)
            return
        outcome = books.handle(chain, response)
        for link in outcome.links:
            await queue.put(link)
        url = outcome.follow


async def fetch(co, books, pool, url):
    """One request on a pooled connection; resent once, afresh, if a reused connection died."""
    request = books.request(url)
    timeout = books.options.timeout
    connection = await pool.acquire()
    try:
        while True:
            try:
                response = await co.timeout_after(
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
        await pool.release(connection)


async def exchange(co, books, connection, request):
    """Send the request and read the whole response, connecting first if the slot is empty."""
    if connection.sock is None:
        await connect(co, books, connection)
    parser = ResponseParser(books.options.max_bytes)
    try:
        await co.sendall(connection.sock, request)
        done = False
        while not done:
            data = await co.recv(connection.sock, RECV_SIZE)
            done = parser.feed(data) if data else parser.feed_eof()
    except OSError as error:
        raise error_for_os(error, connecting=False) from None
    response = parser.response()
    connection.done(response)
    return response


async def connect(co, books, connection):
    sock = connection.open(books.family)
    try:
        await co.connect(sock, books.address)
    except OSError as error:
        raise error_for_os(error, connecting=True) from None


class Pool:
    """Keep-alive connections to the origin: a Queue of slots, options.connections of them."""

    def __init__(self, co, connections):
        self.slots = co.Queue()
        self.connections = connections

    async def fill(self):
        for connection in self.connections:
            await self.slots.put(connection)

    async def acquire(self):
        connection = await self.slots.get()
        self.slots.task_done()
        return connection

    async def release(self, connection):
        await self.slots.put(connection)
