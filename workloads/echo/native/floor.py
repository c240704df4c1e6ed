"""The floor of a selectors loop: one ``selectors`` loop, a callback per readable socket.

No handles, no futures, no tasks, no timers: readiness comes back from epoll and the callback
registered as the key's data runs. What a loop built on ``selectors`` costs above this is its
abstraction. A loop that reads epoll itself skips the ``selectors`` layer and can cost less
(``loops/callbacks/readiness.py`` says what that saves, with the command that measures it): a
floor for the loops built on ``selectors`` only. Backpressure: when a client does not take its
echo, the unsent bytes wait in its buffer, the server stops reading from that client and
watches it for writability until the buffer drains. With ``tls`` (a server SSLContext) each
client's bytes go through an ``ssl.SSLObject`` over two memory BIOs, driven inline by the
same callbacks with the TLS layer's loop-free steps (``workloads/tls/common.py``): the floor
of TLS echo in Python.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import ssl
from collections.abc import Callable

from workloads.common import StopSignals
from workloads.echo.native import READ_SIZE
from workloads.tls.common import (
    Session,
    close_notify,
    encrypt,
    handshaken,
    plaintext,
    received,
)


def serve(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    selector = selectors.DefaultSelector()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    pending: dict[socket.socket, bytes] = {}  # unsent echo per client that is not reading
    sessions: dict[socket.socket, Session] = {}  # with tls: each client's TLS state

    def close(client: socket.socket) -> None:
        selector.unregister(client)
        pending.pop(client, None)
        sessions.pop(client, None)
        client.close()

    def readable(client: socket.socket) -> None:
        try:
            data = client.recv(READ_SIZE)
        except BlockingIOError:
            return
        except ConnectionError:
            data = b""
        if not data:
            close(client)
            return
        try:
            sent = client.send(data)
        except BlockingIOError:
            sent = 0
        except ConnectionError:
            close(client)
            return
        if sent < len(data):
            pending[client] = data[sent:]
            selector.modify(client, selectors.EVENT_WRITE, writable)

    def tls_readable(client: socket.socket) -> None:
        session = sessions[client]
        try:
            data = client.recv(READ_SIZE)
        except BlockingIOError:
            return
        except ConnectionError:
            data = b""
        if not data:  # EOF (without close_notify) or a reset
            close(client)
            return
        received(session, data)
        try:
            if session.established or handshaken(session):
                # Every record this read completed: plaintext left in the TLS object would
                # wait for a readiness that never comes.
                while chunk := plaintext(session, READ_SIZE):
                    encrypt(session, chunk)
                if chunk == b"":  # close_notify: answer it, then close
                    close_notify(session)
                    with contextlib.suppress(OSError):
                        client.send(session.outgoing.read())
                    close(client)
                    return
        except ssl.SSLError:  # a failed handshake, a broken record
            close(client)
            return
        data = session.outgoing.read()
        if not data:
            return
        try:
            sent = client.send(data)
        except BlockingIOError:
            sent = 0
        except ConnectionError:
            close(client)
            return
        if sent < len(data):
            pending[client] = data[sent:]
            selector.modify(client, selectors.EVENT_WRITE, writable)

    reader = readable if tls is None else tls_readable

    def writable(client: socket.socket) -> None:
        data = pending[client]
        try:
            sent = client.send(data)
        except BlockingIOError:
            return
        except ConnectionError:
            close(client)
            return
        if sent < len(data):
            pending[client] = data[sent:]
        else:
            del pending[client]
            selector.modify(client, selectors.EVENT_READ, reader)

    def accept(_: socket.socket) -> None:
        try:
            client, _address = listener.accept()
        except BlockingIOError:
            return
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if tls is not None:
            sessions[client] = Session(client, tls)
        selector.register(client, selectors.EVENT_READ, reader)

    stopping = False

    def stop(_: socket.socket) -> None:
        nonlocal stopping
        stopping = True

    # SIGTERM and SIGINT arrive as a readable socket, between two callbacks, never inside one.
    with StopSignals() as signals:
        selector.register(signals.reader, selectors.EVENT_READ, stop)
        selector.register(listener, selectors.EVENT_READ, accept)
        ready(listener.getsockname()[1])
        try:
            while not stopping:
                for key, _events in selector.select():
                    key.data(key.fileobj)
        finally:
            selector.unregister(signals.reader)
            for key in list(selector.get_map().values()):
                key.fileobj.close()
            selector.close()
