"""A storm of clients that come and go at once: what a server sees as a load generator exits.

Hundreds of connections are opened without waiting for their handshakes (some are still in
the accept backlog), each sends a byte, and each is closed with a reset (SO_LINGER 0). A server
stopped right after must still stop cleanly: the echo tests send SIGTERM into the storm.
"""

from __future__ import annotations

import contextlib
import socket
import struct

RESET_ON_CLOSE = struct.pack("ii", 1, 0)


def storm(port: int, clients: int = 500) -> None:
    """Open `clients` connections to port, send a byte on each, and reset them all."""
    opened = []
    try:
        for _ in range(clients):
            client = socket.socket()
            opened.append(client)
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
        for client in opened:
            with contextlib.suppress(OSError):
                client.send(b"x")
        for client in opened:
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
    finally:
        for client in opened:
            client.close()
