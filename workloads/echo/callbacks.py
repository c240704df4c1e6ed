"""The echo server in the callbacks style: readiness callbacks and explicit state per connection.

Diff it with coroutines.py and generators.py: the same names in the same order, but where a
task would wait, this file registers a callback and keeps the state a task would keep in its
frame (the unsent rest of a chunk). A connection is watched for reading until a chunk does not
fit in the socket; then it is watched for writing instead, until the rest is written: that
switch is the backpressure (a peer that does not read stalls only its own connection, holding
one chunk). A peer's EOF closes its connection; a reset is logged at debug and closes only that
connection. Out of descriptors, it stops watching the listener for ACCEPT_RETRY_DELAY rather
than be called again at once, and again (a spin at 100% CPU). On a stop signal the server
stops accepting, closes every connection, then the listener, and stops the loop. With
``--tls``, ``tls_echo`` is the same server through the style's TLS layer (``workloads/tls/``):
each of its steps takes the callback to call next, so the connection's state is which one waits.
"""

from __future__ import annotations

import socket

from workloads.common import run_until_stopped
from workloads.echo.common import (
    CHUNK,
    DATAGRAM_MAX,
    accept_pause,
    accepted,
    log,
    tls_failed,
)


def serve(new_loop, listener, stop, tls=None):
    """Echo on listener until stop is readable; return once every socket is closed.

    tls: None for plain TCP, or the style's TLS layer (a workloads.tls.Layer).
    """
    loop = new_loop()
    try:
        run_until_stopped(loop, main, loop, listener, stop, tls)
    finally:
        loop.close()


def main(loop, listener, stop, tls):
    connections = {}  # socket -> the function that cancels its echo, while it is open
    if listener.type == socket.SOCK_STREAM:
        cancel_server = tcp_server(loop, listener, connections, tls)
    else:
        cancel_server = udp_server(loop, listener)

    def stop_serving():
        cancel_server()
        for cancel in list(connections.values()):
            cancel()
        listener.close()
        loop.stop()

    cancel_on_signal(loop, stop, stop_serving)


def cancel_on_signal(loop, stop, cancel):
    def on_signal():  # SIGINT or SIGTERM
        loop.remove_reader(stop)
        cancel()

    loop.add_reader(stop, on_signal)


def tcp_server(loop, listener, connections, tls):
    paused = None  # the timer that resumes accepting, while accepts are paused

    def on_acceptable():
        nonlocal paused
        try:
            conn, peer = listener.accept()
        except BlockingIOError:
            return  # another readiness will come
        except OSError as error:  # the peer gave up before we accepted, or out of descriptors
            pause = accept_pause(error)
            if pause:  # the listener stays readable: stop watching it for a while
                loop.remove_reader(listener)
                paused = loop.call_later(pause, resume)
            return
        if tls is None:
            connections[conn] = echo(loop, accepted(conn), peer, connections)
        else:
            connections[conn] = tls_echo(loop, accepted(conn), peer, connections, tls)

    def resume():
        nonlocal paused
        paused = None
        loop.add_reader(listener, on_acceptable)

    def cancel():
        if paused is not None:
            paused.cancel()
        loop.remove_reader(listener)

    loop.add_reader(listener, on_acceptable)
    return cancel


def echo(loop, conn, peer, connections):
    unsent = memoryview(b"")  # the rest of the last chunk, not yet taken by the socket

    def on_readable():
        try:
            data = conn.recv(CHUNK)
        except BlockingIOError:
            return
        except ConnectionError as error:
            return close(error)
        if not data:
            return close()  # EOF: the peer is done sending
        send(memoryview(data))

    def on_writable():
        send(unsent)

    def send(data):
        nonlocal unsent
        try:
            sent = conn.send(data)
        except BlockingIOError:
            sent = 0
        except ConnectionError as error:
            return close(error)
        rest = data[sent:]
        if rest and not unsent:  # read again only once it is all written
            loop.remove_reader(conn)
            loop.add_writer(conn, on_writable)
        elif unsent and not rest:
            loop.remove_writer(conn)
            loop.add_reader(conn, on_readable)
        unsent = rest

    def close(error=None):
        if error is not None:
            log.debug("%s: %s", peer, error)
        loop.remove_reader(conn)
        loop.remove_writer(conn)
        connections.pop(conn, None)
        conn.close()

    loop.add_reader(conn, on_readable)
    return close


def tls_echo(loop, conn, peer, connections, tls):
    session = tls.session(conn)  # a TLS object over two memory buffers, none of it I/O

    def read():
        tls.recv(loop, session, CHUNK, on_received, fail)

    def on_received(data):
        if not data:  # close_notify: the peer is done sending
            return tls.unwrap(loop, session, close, fail)  # our close_notify; then close
        tls.sendall(loop, session, data, read, fail)  # read again only once it is all written

    def fail(error):
        tls_failed(peer, session, error)
        close()

    def close():
        loop.remove_reader(conn)
        loop.remove_writer(conn)
        connections.pop(conn, None)
        conn.close()

    tls.handshake(loop, session, read, fail)
    return close


def udp_server(loop, sock):
    unsent = None  # a datagram the socket could not take yet, and its peer

    def on_readable():
        try:
            data, peer = sock.recvfrom(DATAGRAM_MAX)
        except BlockingIOError:
            return
        except OSError as error:  # e.g. an ICMP error reported on the socket
            return log.debug("udp: %s", error)
        send(data, peer)

    def on_writable():
        send(*unsent)

    def send(data, peer):
        nonlocal unsent
        try:
            sock.sendto(data, peer)
            rest = None
        except BlockingIOError:
            rest = (data, peer)
        except OSError as error:
            log.debug("udp: %s", error)
            rest = None
        if rest and not unsent:  # receive again only once it is sent
            loop.remove_reader(sock)
            loop.add_writer(sock, on_writable)
        elif unsent and not rest:
            loop.remove_writer(sock)
            loop.add_reader(sock, on_readable)
        unsent = rest

    def cancel():
        loop.remove_reader(sock)
        loop.remove_writer(sock)

    loop.add_reader(sock, on_readable)
    return cancel
