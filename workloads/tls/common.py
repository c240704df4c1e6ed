"""The loop-free half of the TLS layer: a TLS object over two memory BIOs, and its steps.

Every step here only moves bytes between the TLS state machine (``ssl.SSLObject``) and its
two ``ssl.MemoryBIO``s; none touches a socket. Each returns what the style files need to
decide the next I/O: "done", or "give me the peer's next bytes" (asyncio's ``sslproto`` is
built the same way). The style files (``callbacks.py`` ... ``blocking.py``) do that I/O
through the loop's own socket calls; ``README.md`` beside this file says why it is split so.
"""

from __future__ import annotations

import contextlib
import socket
import ssl

# The most ciphertext taken from the socket at once: four full TLS records (16 KiB each).
CIPHERTEXT_CHUNK = 65536


class Session:
    """One connection's TLS state: the socket, the TLS object and its two buffers."""

    def __init__(self, sock: socket.socket, context: ssl.SSLContext) -> None:
        self.sock = sock
        self.incoming = ssl.MemoryBIO()  # ciphertext from the peer, not yet decrypted
        self.outgoing = ssl.MemoryBIO()  # ciphertext for the peer, not yet sent
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_side=True)
        self.established = False  # the handshake is over
        # The callbacks style's: the (then, fail) of the step waiting for a read, and whether
        # the socket is watched for reading (it stays so between reads: callbacks.exchange).
        self.reader = None
        self.watched = False


# An outgoing memory BIO takes every byte, so the TLS object never raises SSLWantWriteError
# here; and with renegotiation off (workloads.tls.server_context) a write never needs to read.
# SSLWantReadError is the one "wait": the style files answer it by sending what is pending
# (the TLS object may be waiting for the peer's answer to it) and feeding the next bytes in.


def handshaken(session: Session) -> bool:
    """One step of the handshake: True once it is over, False if the peer must speak next.

    A failed handshake (a client that refused the certificate, garbage) raises ssl.SSLError;
    the alert for the peer, if any, is left pending in session.outgoing.
    """
    try:
        session.tls.do_handshake()
    except ssl.SSLWantReadError:
        return False
    session.established = True
    return True


def plaintext(session: Session, n: int) -> bytes | None:
    """Up to n bytes of the plaintext already received; b"" once the peer sent close_notify;
    None if none is buffered and the peer's next ciphertext is needed.

    One read returns at most one TLS record's plaintext (16 KiB), so it reads until n bytes or
    SSLWantReadError: what is left buffered in the TLS object is invisible to the socket, and a
    loop that waited for the socket to be readable while plaintext sat here would wait forever.
    A peer that closed the TCP connection without close_notify (or mid-record) is
    ssl.SSLEOFError.
    """
    parts = []
    size = 0
    while size < n:
        try:
            part = session.tls.read(n - size)
        except ssl.SSLWantReadError:
            break
        except ssl.SSLZeroReturnError:  # close_notify, when ours went first
            part = b""
        if not part:  # close_notify: hand over what came before it first
            return b"".join(parts)
        parts.append(part)
        size += len(part)
    return b"".join(parts) if parts else None


def encrypt(session: Session, data: bytes) -> None:
    """Put all of data into the TLS object; its records wait in session.outgoing."""
    view = memoryview(data)
    while view:
        view = view[session.tls.write(view) :]


def close_notify(session: Session) -> None:
    """Put our close_notify in session.outgoing. The peer's answer is not awaited: the server
    closes the connection next, as most servers do."""
    with contextlib.suppress(ssl.SSLWantReadError):  # it would wait for the peer's
        session.tls.unwrap()


def received(session: Session, data: bytes) -> None:
    """Feed the peer's ciphertext in; b"" (the peer's TCP EOF) marks the end of its stream."""
    if data:
        session.incoming.write(data)
    else:
        session.incoming.write_eof()
