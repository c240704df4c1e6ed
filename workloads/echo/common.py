"""Loop-free parts of the echo server: sizes, the listening socket, the logger.

The style files import these so that they differ only where the style differs.
"""

from __future__ import annotations

import errno
import logging
import socket

# One read's worth. It is also the most a connection ever holds: the server reads again only
# once the previous chunk is fully echoed, so a peer that does not read stalls its own
# connection at one chunk and the kernel's buffers instead of growing the server's memory.
CHUNK = 65536

# The largest UDP payload over IPv4 (65535 - 8-byte UDP header - 20-byte IP header).
DATAGRAM_MAX = 65507

# How long a server stops accepting after accept() failed for want of descriptors or memory.
# Accepting again at once would fail the same way, so a server that retries at once spins at
# 100% CPU until a descriptor frees up; meanwhile new connections wait in the kernel's backlog.
# trio's serve_listeners pauses 0.1 s, asyncio's _accept_connection 1 s.
ACCEPT_RETRY_DELAY = 0.1
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

log = logging.getLogger("workloads.echo")


def open_listener(host: str, port: int, udp: bool) -> socket.socket:
    """A bound, non-blocking socket: listening for TCP, or a UDP socket ready to receive."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    sock = socket.socket(family, kind)
    try:
        if not udp:
            # A restarted server must not wait for the previous one's TIME_WAIT connections.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        if not udp:
            sock.listen(socket.SOMAXCONN)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def accepted(conn: socket.socket) -> socket.socket:
    """Prepare an accepted connection: non-blocking, and no Nagle delay on small echoes."""
    conn.setblocking(False)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def accept_pause(error: OSError) -> float:
    """Seconds to stop accepting after accept() raised `error` (0: accept again at once).

    Out of descriptors or memory: pause (logged), since retrying cannot succeed until something
    is closed. Anything else (a peer that gave up before it was accepted): go on.
    """
    if error.errno in OUT_OF_RESOURCES:
        log.warning("accept: %s; pausing accepts for %s s", error, ACCEPT_RETRY_DELAY)
        return ACCEPT_RETRY_DELAY
    log.warning("accept: %s", error)
    return 0.0


def tls_failed(peer, session, error: OSError) -> None:
    """Log how a TLS connection failed: one line for a failed handshake (a client that refused
    the certificate, stopped halfway, or spoke something else); at debug, as a reset is, for a
    connection that failed after it (a reset, an EOF without close_notify)."""
    if session.established:
        log.debug("%s: %s", peer, error)
    else:
        log.info("%s: TLS handshake failed: %s", peer, error)
