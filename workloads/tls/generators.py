"""The TLS layer in the generators style: the contract's socket calls under a TLS object.

Diff it with coroutines.py (the same code with ``await``) and callbacks.py (the same steps as
callbacks). ``common.py`` runs the TLS state machine over two memory BIOs and never touches the
socket; this file moves its ciphertext with ``co.recv`` and ``co.sendall``, the same calls the
plain echo makes, so it serves every loop that speaks the style.
"""

from __future__ import annotations

from workloads.tls.common import (
    CIPHERTEXT_CHUNK,
    close_notify,
    encrypt,
    handshaken,
    plaintext,
    received,
)


def handshake(co, session):
    """Run the handshake to its end (ssl.SSLError if it fails)."""
    while not handshaken(session):
        yield from exchange(co, session)
    yield from flush(co, session)  # the last flight (and TLS 1.3's session tickets)


def recv(co, session, n):
    """Up to n bytes of plaintext; b"" once the peer sent close_notify."""
    while (data := plaintext(session, n)) is None:
        yield from exchange(co, session)
    return data


def sendall(co, session, data):
    """Encrypt all of data and send its records."""
    encrypt(session, data)
    yield from flush(co, session)


def unwrap(co, session):
    """Send our close_notify (the peer's answer is not awaited)."""
    close_notify(session)
    yield from flush(co, session)


def exchange(co, session):
    yield from flush(co, session)  # the peer may be waiting for this before it says more
    data = yield from co.recv(session.sock, CIPHERTEXT_CHUNK)
    received(session, data)


def flush(co, session):
    data = session.outgoing.read()
    if data:
        yield from co.sendall(session.sock, data)
