"""The TLS layer in the coroutines style: the contract's socket calls under a TLS object.

Diff it with generators.py (the same code with ``yield from``), blocking.py (without
``await``) and callbacks.py (the same steps as callbacks). ``common.py`` runs the TLS state
machine over two memory BIOs and never touches the socket; this file moves its ciphertext with
``co.recv`` and ``co.sendall``, the same calls the plain echo makes, so it serves every loop
that speaks the style, readiness or completion alike. When the TLS object needs the peer's next
bytes, ``exchange`` first sends what it has to say, then reads once.
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


async def handshake(co, session):
    """Run the handshake to its end (ssl.SSLError if it fails)."""
    while not handshaken(session):
        await exchange(co, session)
    await flush(co, session)  # the last flight (and TLS 1.3's session tickets)


async def recv(co, session, n):
    """Up to n bytes of plaintext; b"" once the peer sent close_notify."""
    while (data := plaintext(session, n)) is None:
        await exchange(co, session)
    return data


async def sendall(co, session, data):
    """Encrypt all of data and send its records."""
    encrypt(session, data)
    await flush(co, session)


async def unwrap(co, session):
    """Send our close_notify (the peer's answer is not awaited)."""
    close_notify(session)
    await flush(co, session)


async def exchange(co, session):
    await flush(co, session)  # the peer may be waiting for this before it says more
    data = await co.recv(session.sock, CIPHERTEXT_CHUNK)
    received(session, data)


async def flush(co, session):
    data = session.outgoing.read()
    if data:
        await co.sendall(session.sock, data)
