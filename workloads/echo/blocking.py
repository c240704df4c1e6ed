"""The echo server in the blocking style: a task per connection, plain calls that block it.

Diff it with coroutines.py: the same code without ``await``, and with ``co.spawn(fn, *args)``
where the coroutines style spawns a coroutine object. Where a task blocks is no longer marked
in the code: ``co.recv`` and ``co.sendall`` block the task (a thread on the threads variant, a
greenlet switched to the hub on greenlets and gevent). The rest is coroutines.py's account:
read a chunk, send it all before reading again (the backpressure), cancel every task on stop.
"""

from __future__ import annotations

import socket

from workloads.echo.common import CHUNK, DATAGRAM_MAX, accept_pause, accepted, log


def serve(co, listener, stop):
    """Echo on listener until stop is readable; return once every socket is closed."""
    co.run(main, co, listener, stop)


def main(co, listener, stop):
    connections = {}  # socket -> the task echoing it, while the connection is open
    if listener.type == socket.SOCK_STREAM:
        server = co.spawn(tcp_server, co, listener, connections)
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


def tcp_server(co, listener, connections):
    while True:
        try:
            conn, peer = co.accept(listener)
        except OSError as error:  # the peer gave up before we accepted, or out of descriptors
            pause = accept_pause(error)
            if pause:
                co.sleep(pause)
            continue
        task = co.spawn(echo, co, accepted(conn), peer, connections)
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


def udp_server(co, sock):
    while True:
        try:
            data, peer = co.recvfrom(sock, DATAGRAM_MAX)
            co.sendto(sock, data, peer)  # receive again only once it is sent
        except OSError as error:  # e.g. an ICMP error reported on the socket
            log.debug("udp: %s", error)
