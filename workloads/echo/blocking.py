"""The echo server in the blocking style: a task per connection, plain calls that block it.

Diff it with coroutines.py: the same code without ``await``, and with ``co.spawn(fn, *args)``
where the coroutines style spawns a coroutine object. Where a task blocks is no longer marked
in the code: ``co.recv`` and ``co.sendall`` block the task (a thread on the threads variant, a
greenlet switched to the hub on greenlets and gevent). The rest is coroutines.py's account:
read a chunk, send it all before reading again (the backpressure), cancel every task on stop;
and ``tls_echo`` for ``--tls``, ``echo`` through the style's TLS layer (``workloads/tls/``).
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
    co.run(main, co, listener, stop, tls)


def main(co, listener, stop, tls):
    connections = {}  # socket -> the task echoing it, while the connection is open
    if listener.type == socket.SOCK_STREAM:
        server = co.spawn(tcp_server, co, listener, connections, tls)
    else:
        server = co.spawn(udp_server, co, listener)
    signalled = []  # the stopper's mark, made before it cancels the server
    stopper = co.spawn(cancel_on_signal, co, stop, server, signalled)
    try:
        co.join(server)  # until the stopper cancels it, or the server fails
    except BaseException:  # how join reports a cancelled task differs between loops
        if not signalled:
            raise
    finally:
        co.cancel(stopper)
        for task in list(connections.values()):
            co.cancel(task)
        listener.close()


def cancel_on_signal(co, stop, server, signalled):
    co.recv(stop, 1)  # SIGINT or SIGTERM
    signalled.append(True)
    co.cancel(server)


def tcp_server(co, listener, connections, tls):
    while True:
        try:
            conn, peer = co.accept(listener)
        except OSError as error:  # the peer gave up before we accepted, or out of descriptors
            pause = accept_pause(error)
            if pause:
                co.sleep(pause)
            continue
        if tls is None:
            task = co.spawn(echo, co, accepted(conn), peer, connections)
        else:
            task = co.spawn(tls_echo, co, accepted(conn), peer, connections, tls)
        if conn.fileno() != -1:  # still open (a loop may run a new task eagerly to its end)
            connections[conn] = task


def echo(co, conn, peer, connections):
    try:
        while True:
            data = co.recv(conn, CHUNK)
            if not data:
                break  # EOF: the peer is done sending
            co.sendall(conn, data)  # read again only once it is all written
    except ConnectionError as error:
        log.debug("%s: %s", peer, error)
    finally:
        connections.pop(conn, None)
        conn.close()


def tls_echo(co, conn, peer, connections, tls):
    session = tls.session(conn)  # a TLS object over two memory buffers, none of it I/O
    try:
        tls.handshake(co, session)
        while True:
            data = tls.recv(co, session, CHUNK)
            if not data:
                break  # close_notify: the peer is done sending
            tls.sendall(co, session, data)  # read again only once it is all written
        tls.unwrap(co, session)  # our close_notify; then the connection closes
    except (ConnectionError, ssl.SSLError) as error:
        tls_failed(peer, session, error)
    finally:
        connections.pop(conn, None)
        conn.close()


def udp_server(co, sock):
    while True:
        try:
            data, peer = co.recvfrom(sock, DATAGRAM_MAX)
            co.sendto(sock, data, peer)  # receive again only once it is sent
        except OSError as error:  # e.g. an ICMP error reported on the socket
            log.debug("udp: %s", error)
