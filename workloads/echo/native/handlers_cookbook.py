"""handlers-cookbook: the handlers loop in its own idiom, the Python Cookbook's recipe 11.12.

The lab's echo server reaches the handlers loop through the contract (``add_reader`` and
``add_writer``, which the loop turns into generic adapter handlers). A reader of the Cookbook
would write application handlers instead, whose own state answers the loop's two questions:
``EchoServer`` always wants to receive (connections), and an ``EchoConnection`` wants to send
while its outgoing buffer holds bytes and to receive only once it is empty (that is the
backpressure: a client that does not read stalls only itself). The names are those of
``loops/handlers/essence.py``; this is that essence made a real server.

The loop comes by discovery (``loops.get("handlers")``), as every workload gets its loops; its
``add_handler``/``remove_handler`` go beyond the lab's contract, which is why this is an anchor
(a loop's own API) and not a style file. On SIGTERM or SIGINT it closes every socket and exits.
With ``tls`` (a server SSLContext), ``TLSEchoConnection``'s outgoing buffer holds ciphertext
from an ``ssl.SSLObject`` over two memory BIOs (the TLS layer's loop-free steps,
``workloads/tls/common.py``): the same two answers, the same backpressure.
"""

from __future__ import annotations

import signal
import socket
import ssl
from collections.abc import Callable

import loops
from workloads.echo.native import READ_SIZE
from workloads.tls.common import (
    Session,
    close_notify,
    encrypt,
    handshaken,
    plaintext,
    received,
)


class EchoServer:
    """The listening socket's handler: every turn it wants to receive (connections)."""

    def __init__(self, loop, sock: socket.socket, connections: set, tls=None) -> None:
        self.loop, self.sock, self.connections = loop, sock, connections
        self.tls = tls  # the server's SSLContext, or None for plain TCP

    def fileno(self) -> int:
        return self.sock.fileno()

    def wants_to_receive(self) -> bool:
        return True

    def wants_to_send(self) -> bool:
        return False

    def handle_receive(self) -> None:
        try:
            conn, _address = self.sock.accept()
        except (BlockingIOError, ConnectionError):
            return  # another client's readiness, or a client that gave up before the accept
        conn.setblocking(False)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls is None:
            connection = EchoConnection(self.loop, conn, self.connections)
        else:
            connection = TLSEchoConnection(self.loop, conn, self.connections, self.tls)
        self.connections.add(connection)
        self.loop.add_handler(connection)

    def handle_send(self) -> None:
        pass


class EchoConnection:
    """One client: its outgoing buffer is the state that answers what it wants."""

    def __init__(self, loop, sock: socket.socket, connections: set) -> None:
        self.loop, self.sock, self.connections = loop, sock, connections
        self.outgoing = b""  # received and not yet echoed

    def fileno(self) -> int:
        return self.sock.fileno()

    def wants_to_receive(self) -> bool:
        return not self.outgoing  # backpressure: read again once the echo is written

    def wants_to_send(self) -> bool:
        return bool(self.outgoing)

    def handle_receive(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except BlockingIOError:
            return
        except ConnectionError:
            data = b""
        if not data:  # EOF, or a reset: the client is gone
            self.close()
            return
        self.outgoing = data
        self.handle_send()  # try at once: most of the time the socket takes it all

    def handle_send(self) -> None:
        try:
            sent = self.sock.send(self.outgoing)
        except BlockingIOError:
            return
        except ConnectionError:
            self.close()
            return
        self.outgoing = self.outgoing[sent:]

    def close(self) -> None:
        self.loop.remove_handler(self)
        self.connections.discard(self)
        self.sock.close()


class TLSEchoConnection(EchoConnection):
    """One TLS client: the outgoing buffer holds ciphertext, the rest is EchoConnection's."""

    def __init__(self, loop, sock: socket.socket, connections: set, tls) -> None:
        super().__init__(loop, sock, connections)
        self.session = Session(sock, tls)

    def handle_receive(self) -> None:
        try:
            data = self.sock.recv(READ_SIZE)
        except BlockingIOError:
            return
        except ConnectionError:
            data = b""
        if not data:  # EOF (without close_notify), or a reset
            self.close()
            return
        received(self.session, data)
        try:
            finished = self.session.established or handshaken(self.session)
            peer_done = finished and self.echo_records()
        except ssl.SSLError:  # a failed handshake, a broken record
            self.close()
            return
        self.outgoing = self.session.outgoing.read()
        if self.outgoing:
            self.handle_send()
        if peer_done:  # the peer's close_notify is answered: nothing more to say
            self.close()

    def echo_records(self) -> bool:
        """Encrypt the plaintext of every record this read completed (plaintext left in the
        TLS object would wait for a readiness that never comes); True at close_notify."""
        while chunk := plaintext(self.session, READ_SIZE):
            encrypt(self.session, chunk)
        if chunk == b"":
            close_notify(self.session)
            return True
        return False


def serve(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    loop = loops.get("handlers").callbacks()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    connections: set[EchoConnection] = set()
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(1024)
        listener.setblocking(False)
        server = EchoServer(loop, listener, connections, tls)
        loop.add_handler(server)

        def on_signal(signum, frame) -> None:
            # Runs in the main thread while select() waits: the wake-up byte ends the wait.
            loop.call_soon_threadsafe(loop.stop)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        ready(listener.getsockname()[1])
        loop.run_forever()
        loop.remove_handler(server)
        for connection in list(connections):
            connection.close()
    finally:
        listener.close()
        loop.close()
