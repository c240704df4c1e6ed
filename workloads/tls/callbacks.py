"""The TLS layer in the callbacks style: the same steps as coroutines.py, as continuations.

Diff it with coroutines.py: the same functions in the same order, but where a task would wait,
a function here takes ``then`` (called with the result once the step is done) and ``fail``
(called with the error instead), and the socket stays watched for reading from one read to
the next (see ``exchange``). ``common.py`` runs the TLS state machine over two memory BIOs
and never touches the socket. A step that finishes at once calls ``then`` before it returns;
the depth this adds is bounded by one read's worth of records, because ``exchange`` always
waits for readiness before it reads. A connection closed meanwhile is its owner's to unwatch
(``remove_reader``, ``remove_writer``): no continuation runs after that.
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


def handshake(loop, session, then, fail):
    """Run the handshake to its end, then then(); fail(ssl.SSLError) if it fails."""

    def step():
        try:
            finished = handshaken(session)
        except OSError as error:
            return fail(error)
        if not finished:
            return exchange(loop, session, step, fail)
        flush(loop, session, then, fail)  # the last flight (and TLS 1.3's session tickets)

    step()


def recv(loop, session, n, then, fail):
    """then(up to n bytes of plaintext); then(b"") once the peer sent close_notify."""

    def step():
        try:
            data = plaintext(session, n)
        except OSError as error:
            return fail(error)
        if data is None:
            return exchange(loop, session, step, fail)
        then(data)

    step()


def sendall(loop, session, data, then, fail):
    """Encrypt all of data and send its records, then then()."""
    try:
        encrypt(session, data)
    except OSError as error:
        return fail(error)
    flush(loop, session, then, fail)


def unwrap(loop, session, then, fail):
    """Send our close_notify (the peer's answer is not awaited), then then()."""
    try:
        close_notify(session)
    except OSError as error:
        return fail(error)
    flush(loop, session, then, fail)


def exchange(loop, session, then, fail):
    # The socket stays watched from one read to the next, as the plain callbacks server
    # watches its connection for its life (a registration per record would be two epoll_ctl
    # calls per request): on_readable hands each read to the step waiting for it, and once no
    # step waits, the next readiness unwatches the socket (a level-triggered loop would call
    # again at once). The first exchange's on_readable serves the connection's life: it reads
    # the session, not this call's then and fail.
    def on_readable():
        if session.reader is None:
            loop.remove_reader(session.sock)
            session.watched = False
            return
        then, fail = session.reader
        try:
            data = session.sock.recv(CIPHERTEXT_CHUNK)
        except BlockingIOError:
            return
        except OSError as error:
            session.reader = None
            loop.remove_reader(session.sock)
            session.watched = False
            return fail(error)
        session.reader = None
        received(session, data)
        then()

    def wait():
        session.reader = (then, fail)
        if not session.watched:
            loop.add_reader(session.sock, on_readable)
            session.watched = True

    flush(loop, session, wait, fail)  # the peer may be waiting for this before it says more


def flush(loop, session, then, fail):
    unsent = memoryview(session.outgoing.read())
    waiting = False  # watching the socket for writability

    def send():
        nonlocal unsent, waiting
        try:
            sent = session.sock.send(unsent) if unsent else 0
        except BlockingIOError:
            sent = 0
        except OSError as error:
            loop.remove_writer(session.sock)
            return fail(error)
        unsent = unsent[sent:]
        if unsent and not waiting:
            loop.add_writer(session.sock, send)
            waiting = True
        elif not unsent:
            if waiting:
                loop.remove_writer(session.sock)
            then()

    send()
