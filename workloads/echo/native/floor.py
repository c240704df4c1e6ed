"""The pure-Python floor: one ``selectors`` loop, a callback per ready socket, nothing else.

No handles, no futures, no tasks, no timers: readiness comes back from epoll and the callback
registered as the key's data runs. What any event loop written in Python costs above this is
its abstraction. Backpressure: when a client does not take its echo, the unsent bytes wait in
its buffer, the server stops reading from that client and watches it for writability until
the buffer drains.
"""

from __future__ import annotations

import selectors
import signal
import socket
from collections.abc import Callable

from workloads.echo.native import READ_SIZE


class Shutdown(Exception):
    """Raised by the SIGTERM/SIGINT handler out of the selector wait."""


def _raise_shutdown(signum, frame) -> None:
    raise Shutdown


def serve(host: str, port: int, ready: Callable[[int], None]) -> None:
    selector = selectors.DefaultSelector()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    pending: dict[socket.socket, bytes] = {}  # unsent echo per client that is not reading

    def close(client: socket.socket) -> None:
        selector.unregister(client)
        pending.pop(client, None)
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
            selector.modify(client, selectors.EVENT_READ, readable)

    def accept(_: socket.socket) -> None:
        try:
            client, _address = listener.accept()
        except BlockingIOError:
            return
        client.setblocking(False)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        selector.register(client, selectors.EVENT_READ, readable)

    signal.signal(signal.SIGTERM, _raise_shutdown)
    signal.signal(signal.SIGINT, _raise_shutdown)
    selector.register(listener, selectors.EVENT_READ, accept)
    ready(listener.getsockname()[1])
    try:
        while True:
            for key, _events in selector.select():
                key.data(key.fileobj)
    except Shutdown:
        pass
    finally:
        for key in list(selector.get_map().values()):
            key.fileobj.close()
        selector.close()
