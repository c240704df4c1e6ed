"""The crawler in the callbacks style: a chain of callbacks on the variant's callbacks loop.

Diff it against coroutines.py and generators.py: the names and the structure are the same,
only the style differs. Where they write ``x = await f()``, this file passes f a callback that
receives x, and what came after the await moves into that callback; where they keep state in
local variables across awaits, :class:`Exchange` keeps it in attributes. This is the "500
Lines or Less" crawler's first version, with its "callback hell" in full view. Everything
that is not waiting (HTTP, HTML, URLs, the books) is in common.py.

The shape: a Queue of URLs (asyncio.Queue's semantics, written here with callbacks),
--concurrency workers taking from it, ``queue.join(callback)`` to know the crawl is over, then
the loop stopped. A worker visits a URL: fetches it, follows its redirects within the origin,
queues the new links. Connections are kept alive in a Pool, itself a Queue of slots (a
connected socket, or an empty slot to connect), so at most ``options.connections`` are open to
the origin at once. Each request (connect, send, the whole response) has a ``call_later``
deadline. An error raised inside a callback stops the loop and is re-raised by :func:`crawl`
rather than leaving a crawl that never ends.
"""

from __future__ import annotations

import os
import socket
from collections import deque
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


def crawl(new_loop: Any, books: Crawl) -> None:
    """Crawl from books.start on a loop made by `new_loop`; the results are in `books`."""
    loop = new_loop()
    crashes = []

    def crashed(loop, context):
        crashes.append(context.get("exception") or RuntimeError(context["message"]))
        loop.stop()

    loop.set_exception_handler(crashed)
    connections = [Connection() for _ in range(books.options.connections)]
    try:
        crawl_all(loop, books, connections, then=loop.stop)
        loop.run_forever()
    finally:  # however the run ended (Ctrl-C included), the sockets to the origin close
        loop.close()
        close_all(connections)
    if crashes:
        raise crashes[0]


def crawl_all(loop, books, connections, then):
    queue = Queue(loop)
    pool = Pool(loop, connections)
    pool.fill()
    queue.put(books.start)
    for _ in range(books.options.concurrency):
        work(loop, books, queue, pool)
    queue.join(then)


def work(loop, books, queue, pool):
    """Visit queued URLs, one after the other, for as long as the loop runs."""

    def got(url):
        visit(loop, books, queue, pool, url, then=visited)

    def visited():
        queue.task_done()
        work(loop, books, queue, pool)

    queue.get(got)


def visit(loop, books, queue, pool, url, then):
    """Fetch url and the redirects it leads to; queue the new links of the page."""
    chain = books.chain(url)

    def fetched(response, error):
        if error is not None:
            books.failed(chain, error)
            then()
            return
        outcome = books.handle(chain, response)
        for link in outcome.links:
            queue.put(link)
        if outcome.follow is None:
            then()
        else:
            fetch(loop, books, pool, outcome.follow, then=fetched)

    fetch(loop, books, pool, url, then=fetched)


def fetch(loop, books, pool, url, then):
    """One request on a pooled connection; resent once, afresh, if a reused connection died."""
    request = books.request(url)

    def acquired(connection):
        exchange(loop, books, connection, request, then=exchanged)

    def exchanged(connection, response, error):
        if error is not None:
            stale = is_stale(connection, error)
            connection.close()  # the slot is empty now: a retry connects afresh
            if stale:
                acquired(connection)
                return
        pool.release(connection)
        then(response, error)

    pool.acquire(acquired)


def exchange(loop, books, connection, request, then):
    """Send the request and read the whole response, connecting first if the slot is empty."""
    state = Exchange(loop, books, connection, request, then)
    if connection.sock is None:
        connect(loop, books, connection, then=state.connected)
    else:
        state.send()


def connect(loop, books, connection, then):
    sock = connection.open(books.family)

    def writable():
        loop.remove_writer(sock)
        code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if code:
            then(error_for_os(OSError(code, os.strerror(code)), connecting=True))
        else:
            then(None)

    try:
        sock.connect(books.address)
    except BlockingIOError:
        loop.add_writer(sock, writable)
    except OSError as error:
        then(error_for_os(error, connecting=True))
    else:
        then(None)


class Exchange:
    """The state exchange() keeps across its callbacks, where a coroutine keeps its locals."""

    def __init__(self, loop, books, connection, request, then):
        self.loop, self.books, self.connection, self.then = loop, books, connection, then
        self.unsent = memoryview(request)
        self.parser = ResponseParser(books.options.max_bytes)
        self.finished = False
        self.deadline = loop.call_later(books.options.timeout, self.timed_out)

    def connected(self, error):
        if error is not None:
            self.finish(error=error)
        else:
            self.send()

    def send(self):
        sock = self.connection.sock
        try:
            sent = sock.send(self.unsent)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as error:
            self.finish(error=error_for_os(error, connecting=False))
            return
        self.unsent = self.unsent[sent:]
        if self.unsent:
            self.loop.add_writer(sock, self.send)  # the same callback, until all is sent
            return
        self.loop.remove_writer(sock)
        self.loop.add_reader(sock, self.receive)

    def receive(self):
        try:
            data = self.connection.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            self.finish(error=error_for_os(error, connecting=False))
            return
        try:
            done = self.parser.feed(data) if data else self.parser.feed_eof()
        except FetchError as error:
            self.finish(error=error)
            return
        if done:
            response = self.parser.response()
            self.finish(response=response)

    def timed_out(self):
        timeout = self.books.options.timeout
        self.finish(error=FetchError("timeout", f"no full response in {timeout} s"))

    def finish(self, response=None, error=None):
        if self.finished:
            return
        self.finished = True
        self.deadline.cancel()
        sock = self.connection.sock
        if sock is not None and sock.fileno() >= 0:
            self.loop.remove_reader(sock)
            self.loop.remove_writer(sock)
        if response is not None:
            self.connection.done(response)
        self.then(self.connection, response, error)


class Pool:
    """Keep-alive connections to the origin: a Queue of slots, options.connections of them."""

    def __init__(self, loop, connections):
        self.slots = Queue(loop)
        self.connections = connections

    def fill(self):
        for connection in self.connections:
            self.slots.put(connection)

    def acquire(self, then):
        def got(connection):
            self.slots.task_done()
            then(connection)

        self.slots.get(got)

    def release(self, connection):
        self.slots.put(connection)


class Queue:
    """asyncio.Queue's semantics with callbacks: get(callback) is called back with an item.

    Callbacks run from the loop (call_soon), never inside put or get, so a long run of
    ready items cannot grow the stack.
    """

    def __init__(self, loop):
        self.loop = loop
        self.items = deque()
        self.getters = deque()  # callbacks waiting for an item
        self.joiners = []  # callbacks waiting for unfinished to reach zero
        self.unfinished = 0  # items put and not yet marked done

    def put(self, item):
        self.unfinished += 1
        if self.getters:
            self.loop.call_soon(self.getters.popleft(), item)
        else:
            self.items.append(item)

    def get(self, then):
        if self.items:
            self.loop.call_soon(then, self.items.popleft())
        else:
            self.getters.append(then)

    def task_done(self):
        if self.unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self.unfinished -= 1
        if self.unfinished == 0:
            for joiner in self.joiners:
                self.loop.call_soon(joiner)
            self.joiners.clear()

    def join(self, then):
        if self.unfinished == 0:
            self.loop.call_soon(then)
        else:
            self.joiners.append(then)
