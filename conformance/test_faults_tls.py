"""TLS echo: every byte back, a half-close, a peer that stops mid-handshake, a refused certificate.

Each case runs the lab's echo server over TLS (``python -m workloads.echo ... --tls``: a
self-signed certificate made at start) on the case's loop and style, and talks to it from
this process with :class:`TlsClient`, TLS over memory BIOs on a plain socket, so one thread can
send and read at once, half-close (close_notify, then FIN) and stop in the middle of a
handshake. Then the server must stop cleanly, every socket closed (it checks its own at exit).
A server whose CLI does not accept ``--tls`` yet (exit status 2, "unrecognized arguments")
makes the case a skip, not a failure.
"""

from __future__ import annotations

import contextlib
import random
import select
import signal
import socket
import ssl
import time

import pytest

from conformance.processes import (
    ECHO_READY,
    PATIENCE,
    case_prop,
    connect,
    echo_command,
    running,
    stopped_cleanly,
    until,
)

SIZES = [1, 64 * 1024, 2**20]  # every byte back, from one byte to a mebibyte
STEP = 1 << 16


def tls_echo_server(case, tmp_path):
    """start() for the lab's echo server over TLS on the case's loop and style."""

    @contextlib.contextmanager
    def start():
        try:
            with running([*echo_command(case), "--tls"], ECHO_READY, tmp_path) as server:
                yield server
        except AssertionError as error:  # it did not start: a CLI without --tls yet?
            if "unrecognized arguments: --tls" in str(error):
                pytest.skip("the echo server does not accept --tls yet (exit 2)")
            raise

    return start


class TlsClient:
    """A TLS client over a plain socket and memory BIOs, driven from one thread.

    ``verify=False`` is the workloads' client (the server's certificate is self-signed);
    ``verify=True`` checks it against the system's trust store, as a careful client would."""

    def __init__(self, port: int, verify: bool = False) -> None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if verify:
            context.load_default_certs()
        else:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        self.sock = connect(port)
        self.sock.setblocking(False)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="localhost")
        self.pending = b""  # ciphertext not yet taken by the socket
        self.shut = False  # FIN sent after the pending ciphertext (a half-close)

    def pump(self) -> None:
        """Send what the socket takes, feed in what arrived; wait at most PATIENCE for either."""
        self.pending += self.outgoing.read()
        writing = [self.sock] if self.pending else []
        readable, writable, _ = select.select([self.sock], writing, [], PATIENCE)
        if not readable and not writable:
            raise TimeoutError(f"nothing moved in {PATIENCE} s")
        if writable:
            with contextlib.suppress(BlockingIOError):
                self.pending = self.pending[self.sock.send(self.pending[:STEP]) :]
        if self.shut and not self.pending:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)
        if readable:
            try:
                data = self.sock.recv(STEP)
            except BlockingIOError:
                return
            except ConnectionError:
                data = b""
            if data:
                self.incoming.write(data)
            else:
                self.incoming.write_eof()

    def handshake(self) -> None:
        """Complete the handshake (ssl.SSLCertVerificationError where a verifying client
        refuses the certificate)."""
        while True:
            try:
                self.tls.do_handshake()
                self.pending += self.outgoing.read()
                return
            except ssl.SSLWantReadError:
                self.pump()

    def exchange(self, message: bytes, half_close: bool = False) -> tuple[bytes, str]:
        """Send message (then close_notify and FIN if half_close), read its echo while sending;
        (the bytes echoed, how the stream ended after them: "open", "close_notify", "EOF")."""
        self.handshake()
        self.tls.write(message)
        if half_close:
            with contextlib.suppress(ssl.SSLWantReadError):
                self.tls.unwrap()  # our close_notify; the server's answer is read below
            self.shut = True
        echoed = bytearray()
        while len(echoed) < len(message) or half_close:
            try:
                chunk = self.tls.read(STEP)
            except ssl.SSLWantReadError:
                self.pump()
                continue
            except ssl.SSLZeroReturnError:
                return bytes(echoed), "close_notify"
            except ssl.SSLEOFError:
                return bytes(echoed), "EOF"
            if not chunk:
                return bytes(echoed), "close_notify"
            echoed += chunk
        return bytes(echoed), "open"

    def close(self) -> None:
        self.sock.close()


def message(size: int) -> bytes:
    return random.Random(size).randbytes(size)


@case_prop("io", timeout=90)
def test_over_tls_every_byte_comes_back(case, tmp_path):
    with tls_echo_server(case, tmp_path)() as server:
        back = {}
        for size in SIZES:
            client = TlsClient(server.port)
            try:
                echoed, _ = client.exchange(message(size))
                back[size] = echoed == message(size) or f"{len(echoed)} bytes, not the same"
            finally:
                client.close()
        seen = {"every byte back": back, "stopped cleanly": stopped_cleanly(server)}
    assert seen == {"every byte back": dict.fromkeys(SIZES, True), "stopped cleanly": True}


@case_prop("io", timeout=90)
def test_over_tls_a_half_closed_client_gets_every_byte_then_eof(case, tmp_path):
    """The client sends, then close_notify and FIN: the whole echo still comes back, then the
    stream ends (the server's close_notify, or its FIN)."""
    with tls_echo_server(case, tmp_path)() as server:
        ended = {}
        for size in SIZES:
            client = TlsClient(server.port)
            try:
                echoed, end = client.exchange(message(size), half_close=True)
                ended[size] = (echoed == message(size) or f"{len(echoed)} bytes", end != "open")
            finally:
                client.close()
        seen = {
            "echo, then the end": ended,
            "every connection closed": until(lambda: server.connections() == 0),
            "stopped cleanly": stopped_cleanly(server),
        }
    assert seen == {
        "echo, then the end": dict.fromkeys(SIZES, (True, True)),
        "every connection closed": True,
        "stopped cleanly": True,
    }


def partial_client_hello() -> bytes:
    """The first half of a real ClientHello: the handshake has begun and will not go on."""
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).wrap_bio(
        ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_hostname="localhost"
    )
    with contextlib.suppress(ssl.SSLWantReadError):
        client.do_handshake()
    hello = outgoing.read()
    return hello[: len(hello) // 2]


@case_prop("io", timeout=90)
def test_over_tls_a_peer_silent_mid_handshake_blocks_no_one_and_loses_no_fd(case, tmp_path):
    with tls_echo_server(case, tmp_path)() as server:
        # One client served and gone first: what a loop opens once, on its first connection
        # (a wake-up pipe, a thread pool), is in the count the end is compared with.
        warm = TlsClient(server.port)
        try:
            warm.exchange(message(16))
        finally:
            warm.close()
        until(lambda: server.connections() == 0)
        idle_fds = server.fds()
        stalled = connect(server.port)
        stalled.sendall(partial_client_hello())
        until(lambda: server.connections() >= 1)
        time.sleep(0.2)  # not a timing claim: the server has had the half hello to chew on
        client = TlsClient(server.port)
        try:
            echoed, _ = client.exchange(message(4096))
            seen = {"another client served": echoed == message(4096)}
        finally:
            client.close()
        stalled.close()
        seen["every connection closed"] = until(lambda: server.connections() == 0)
        seen["no fd lost"] = until(lambda: server.fds() <= idle_fds) or server.fds() - idle_fds
        seen["stopped cleanly"] = stopped_cleanly(server)
    assert seen == {
        "another client served": True,
        "every connection closed": True,
        "no fd lost": True,
        "stopped cleanly": True,
    }


@case_prop("io", timeout=90)
def test_over_tls_a_client_refusing_the_certificate_gets_a_clear_error(case, tmp_path):
    """A verifying client refuses the self-signed certificate with SSLCertVerificationError;
    the server goes on serving, and at SIGINT every socket is closed."""
    with tls_echo_server(case, tmp_path)() as server:
        careful = TlsClient(server.port, verify=True)
        try:
            careful.handshake()
            refused = "the handshake completed"
        except ssl.SSLCertVerificationError:
            with contextlib.suppress(OSError):  # our alert, as a refusing client sends it
                careful.sock.send(careful.outgoing.read())
            refused = True
        finally:
            careful.close()
        client = TlsClient(server.port)
        try:
            echoed, _ = client.exchange(message(4096))
        finally:
            client.close()
        seen = {
            "SSLCertVerificationError": refused,
            "still serving": echoed == message(4096),
            "every connection closed": until(lambda: server.connections() == 0),
            "stopped cleanly by SIGINT": stopped_cleanly(server, signal.SIGINT),
        }
    assert seen == {
        "SSLCertVerificationError": True,
        "still serving": True,
        "every connection closed": True,
        "stopped cleanly by SIGINT": True,
    }
