"""The TLS layer in the blocking style: the contract's socket calls under a TLS object.

Diff it with coroutines.py: the same code without ``await``. ``co.recv`` and ``co.sendall``
block the task (a thread on the threads variant, a greenlet on greenlets and gevent) while the
TLS object, in ``common.py``, never touches the socket. Why the TLS object is not simply
``ssl.wrap_socket`` on a blocking socket here: the same layer, and the same four functions,
serve every style (README.md beside this file).
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
        exchange(co, session)
    flush(co, session)  # the last flight (and TLS 1.3's session tickets)


def recv(co, session, n):
    """Up to n bytes of plaintext; b"" once the peer sent close_notify."""
    while (data := plaintext(session, n)) is None:
        exchange(co, session)
    return data


def sendall(co, session, data):
    """Encrypt all of data and send its records."""
    encrypt(session, data)
    flush(co, session)


def unwrap(co, session):
    """Send our close_notify (the peer's answer is not awaited)."""
    close_notify(session)
    flush(co, session)


def exchange(co, session):
    flush(co, session)  # the peer may be waiting for this before it says more
    data = co.recv(session.sock, CIPHERTEXT_CHUNK)
    received(session, data)


def flush(co, session):
    data = session.outgoing.read()
    if data:
        co.sendall(session.sock, data)
