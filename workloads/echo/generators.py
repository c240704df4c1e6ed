"""The echo server in the generators style: a task per connection, ``yield from`` at each wait.

Diff it with coroutines.py (the same code with ``await``) and callbacks.py (the same server
as readiness callbacks and explicit state). A connection's task reads a chunk, then waits in
``sendall`` until the whole chunk is written before it reads again: that order is the
backpressure (a peer that does not read stalls only its own task, holding one chunk). A peer's
EOF ends its task; a reset is logged at debug and ends only that connection. Out of
descriptors, the accepting task sleeps ACCEPT_RETRY_DELAY rather than retry at once (which
would spin at 100% CPU, or on some loops never yield at all). A stop signal
cancels the server's task; then every connection's task is cancelled (each closes its own
socket on the way out) and the listener is closed. An unexpected error in the server's task
ends the server the same way, and is raised from ``serve``. With ``--tls``, ``tls_echo`` is
``echo`` through the style's TLS layer (``workloads/tls/``): a handshake first, ``tls.recv``
and ``tls.sendall`` for ``co.recv`` and ``co.sendall``, and close_notify after the peer's.
"""

from __future__ import annotations

import socket
import ssl

from workloads.echo.common import (
    CHUNK,
    DATAGRAM_MAX,
    accept_pause,
    accepted,
    log,
    tls_failed,
)


def serve(co, listener, stop, tls=None):
    """Echo on listener until stop is readable; return once every socket is closed.

    tls: None for plain TCP, or the style's TLS layer (a workloads.tls.Layer).
    """
    co.run(main(co, listener, stop, tls))


def main(co, listener, stop, tls):
    connections = {}  # socket -> the task echoing it, while the connection is open
    if listener.type == socket.SOCK_STREAM:
        server = yield from co.spawn(tcp_server(co, listener, connections, tls))
    else:
        server = yield from co.spawn(udp_server(co, listener))
    signalled = []  # the stopper's mark, made before it cancels the server
    stopper = yield from co.spawn(cancel_on_signal(co, stop, server, signalled))
    try:
        yield from co.join(server)  # until the stopper cancels it, or the server fails
    except BaseException:  # how join reports a cancelled task differs between loops
        if not signalled:
            raise
    finally:
        yield from co.cancel(stopper)
        for task in list(connections.values()):
            yield from co.cancel(task)
        listener.close()


def cancel_on_signal(co, stop, server, signalled):
    yield from co.recv(stop, 1)  # SIGINT or SIGTERM
    signalled.append(True)
    yield from co.cancel(server)


def tcp_server(co, listener, connections, tls):
    while True:
        try:
            conn, peer = yield from co.accept(listener)
        except OSError as error:  # the peer gave up before we accepted, or out of descriptors
            pause = accept_pause(error)
            if pause:
                yield from co.sleep(pause)
            continue
        if tls is None:
            task = yield from co.spawn(echo(co, accepted(conn), peer, connections))
        else:
            task = yield from co.spawn(tls_echo(co, accepted(conn), peer, connections, tls))
        if conn.fileno() != -1:  # still open (a loop may run a new task eagerly to its end)
            connections[conn] = task


def echo(co, conn, peer, connections):
    try:
        while True:
            data = yield from co.recv(conn, CHUNK)
            if not data:
                break  # EOF: the peer is done sending
            yield from co.sendall(conn, data)  # read again only once it is all written
    except ConnectionError as error:
        log.debug("%s: %s", peer, error)
    finally:
        connections.pop(conn, None)
        conn.close()


def tls_echo(co, conn, peer, connections, tls):
    session = tls.session(conn)  # a TLS object over two memory buffers, none of it I/O
    try:
        yield from tls.handshake(co, session)
        while True:
            data = yield from tls.recv(co, session, CHUNK)
            if not data:
                break  # close_notify: the peer is done sending
            yield from tls.sendall(co, session, data)  # read again only once it is all written
        yield from tls.unwrap(co, session)  # our close_notify; then the connection closes
    except (ConnectionError, ssl.SSLError) as error:
        tls_failed(peer, session, error)
    finally:
        connections.pop(conn, None)
        conn.close()


def udp_server(co, sock):
    while True:
        try:
            data, peer = yield from co.recvfrom(sock, DATAGRAM_MAX)
            yield from co.sendto(sock, data, peer)  # receive again only once it is sent
        except OSError as error:  # e.g. an ICMP error reported on the socket
            log.debug("udp: %s", error)
