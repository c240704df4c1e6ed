"""TLS echo end to end: ``python -m workloads.echo --tls`` on every variant and style, and the
anchors' ``--tls``, as real processes on loopback, against a real TLS client (stdlib ssl).

Each case echoes 1 byte, 1 KiB and 1 MiB on one connection (every byte compared), half-closes
with close_notify (the server echoes what it had, then closes), and stops on SIGINT with every
socket closed, an idle TLS connection's too. Bad input is played on one home-made loop per
style and on the anchors: a client that stops mid-handshake, one that refuses the
certificate, one that never reads, a reset mid-record, a raw TCP half-close; the server keeps
serving and ends up holding the descriptors it held before.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

import loops
from bench.plan import anchor_names
from bench.procs import LISTENING
from workloads.tls import client_context

ROOT = Path(__file__).resolve().parent.parent
SIZES = (1, 1024, 2**20)
STALL_BOUND = 64 * 2**20  # a server that buffered for a client that does not read: more
CASES = [
    pytest.param(variant, style, id=f"{variant.name}-{style}")
    for variant in loops.discover().values()
    for style in variant.styles
]
TLS_ANCHORS = anchor_names()
# Anchors whose library drops the echo of bytes that came just before the peer's close_notify
# (always) or its raw FIN (when the FIN is read before the handler writes).
DROPS_HALF_CLOSE = {
    name: "asyncio's sslproto (and uvloop's port of it) starts its own shutdown as soon as "
    "close_notify (or EOF) is read; a stream handler writes the echo after that, and the write "
    "is dropped (the Protocol server writes inside data_received, before the shutdown starts)"
    for name in ("asyncio-streams", "uvloop-streams")
}


def _message(size: int) -> bytes:
    return (bytes(range(251)) * (size // 251 + 1))[:size]  # 251: no period of a power of two


class Server:
    """A server process started with --tls; ``port`` from its ready line."""

    def __init__(self, command: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", *command, "--port", "0", "--tls"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        ready, _, _ = select.select([self.process.stdout], [], [], 30)
        line = self.process.stdout.readline() if ready else ""
        match = LISTENING.search(line)
        if match is None:
            self.process.kill()
            pytest.fail(f"no ready line: {line!r} {self.process.communicate()[1]}")
        assert "tls" in line, line
        self.port = int(match.group(1))

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def settles_at(self, count: int) -> None:
        """Wait (bounded) until the server holds `count` descriptors: it closes a connection
        whose peer reset without the peer seeing it, so there is nothing else to wait on."""
        deadline = time.monotonic() + 10
        while self.fds() != count and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.fds() == count, "a descriptor was lost"

    def stop(self) -> tuple[str, str]:
        self.process.send_signal(signal.SIGINT)
        out, err = self.process.communicate(timeout=20)
        assert self.process.returncode == 0, out + err
        assert "Traceback" not in err, err
        return out, err

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate()


class Client:
    """A TLS client: ssl.SSLObject over memory BIOs on a blocking socket, so a test can say
    exactly what goes on the wire (half a record, close_notify while echoes are in flight)."""

    def __init__(self, port: int, verify: bool = False) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=15)
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        context = client_context(verify)
        self.tls = context.wrap_bio(self.incoming, self.outgoing, server_hostname="127.0.0.1")

    def handshake(self) -> None:
        while True:
            try:
                self.tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self.sock.sendall(self.outgoing.read())
                self._feed()
        self.sock.sendall(self.outgoing.read())

    def _feed(self) -> None:
        data = self.sock.recv(65536)
        if data:
            self.incoming.write(data)
        else:
            self.incoming.write_eof()

    def echo(self, message: bytes) -> bytes:
        """Send message while reading its echo (the server reads again only once it wrote)."""
        self.tls.write(message)
        pending = memoryview(self.outgoing.read())
        received = bytearray()
        self.sock.setblocking(False)
        try:
            while len(received) < len(message):
                wanted = [self.sock] if pending else []
                readable, writable, _ = select.select([self.sock], wanted, [], 15)
                assert readable or writable, f"echo stalled at {len(received)} bytes"
                if writable:
                    pending = pending[self.sock.send(pending[:65536]) :]
                if readable:
                    self._feed()
                    self._plaintext(received)
        finally:
            self.sock.setblocking(True)
        return bytes(received)

    def _plaintext(self, into: bytearray) -> None:
        """Append the plaintext the TLS object can give now."""
        while True:
            try:
                part = self.tls.read(65536)
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):  # ZeroReturn: close_notify
                return
            if not part:
                return
            into += part

    def half_close(self, message: bytes) -> tuple[bytes, bool]:
        """Send message and close_notify together; read to the end: (echo, the server sent
        close_notify before its TCP FIN)."""
        self.tls.write(message)
        with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server's
            self.tls.unwrap()
        self.sock.sendall(self.outgoing.read())
        received = bytearray()
        while True:
            data = self.sock.recv(65536)
            if not data:
                return bytes(received), False
            self.incoming.write(data)
            try:
                self._plaintext(received)
                self.tls.unwrap()  # completes once the server's close_notify is in
            except ssl.SSLWantReadError:
                continue
            except ssl.SSLEOFError:
                return bytes(received), False
            assert self.sock.recv(1) == b"", "the server did not close after its close_notify"
            return bytes(received), True

    def rest(self) -> bytes:
        """The plaintext until the server closes the TCP connection."""
        received = bytearray()
        while data := self.sock.recv(65536):
            self.incoming.write(data)
            try:
                self._plaintext(received)
            except ssl.SSLError:  # OpenSSL 3 answers an EOF without close_notify with an alert
                break
        return bytes(received)

    def close(self) -> None:
        self.sock.close()


def _serve_and_half_close(server: Server, last: bytes = _message(5000)) -> bool:
    """Echo every size on one connection, then send `last` with close_notify: the server
    echoes it before it closes. Whether its close_notify came back."""
    client = Client(server.port)
    try:
        client.handshake()
        for size in SIZES:
            message = _message(size)
            assert client.echo(message) == message, f"{size}-byte echo differs"
        echoed, notified = client.half_close(last)
        assert echoed == last, "the server did not echo what it had before closing"
        return notified
    finally:
        client.close()


def _closed_by_server(sock: socket.socket) -> None:
    """Read until the server closes (EOF or a reset: an unread alert makes close send RST)."""
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass


def _fill_until_stalled(client: Client) -> int:
    """Send without ever reading until the socket takes nothing for a while; bytes sent."""
    client.sock.setblocking(False)
    pending = memoryview(b"")
    sent = 0
    while sent < STALL_BOUND:
        if not pending:
            client.tls.write(_message(2**18))
            pending = memoryview(client.outgoing.read())
        _, writable, _ = select.select([], [client.sock], [], 0.2)
        if not writable:
            break
        with contextlib.suppress(BlockingIOError):
            count = client.sock.send(pending)
            pending = pending[count:]
            sent += count
    return sent


def _raw_half_close(server: Server, message: bytes) -> None:
    """A raw TCP half-close (a FIN, no close_notify) right behind a message: the echo comes
    back, then the server closes."""
    raw = Client(server.port)
    try:
        raw.handshake()
        raw.tls.write(message)
        raw.sock.sendall(raw.outgoing.read())
        raw.sock.shutdown(socket.SHUT_WR)
        assert raw.rest() == message, "the server did not echo what came before the FIN"
    finally:
        raw.close()


def _bad_input(server: Server, last: bytes = _message(5000)) -> None:
    """Each bad client in turn; the server serves a good one after, and holds no more fds."""
    _serve_and_half_close(server, last)
    baseline = server.fds()

    # A client that stops mid-handshake: the first 40 bytes of a ClientHello, then its FIN.
    hello = ssl.MemoryBIO()
    greeter = client_context().wrap_bio(ssl.MemoryBIO(), hello, server_hostname="127.0.0.1")
    with contextlib.suppress(ssl.SSLWantReadError):
        greeter.do_handshake()
    with socket.create_connection(("127.0.0.1", server.port), timeout=15) as stopper:
        stopper.sendall(hello.read()[:40])
        stopper.shutdown(socket.SHUT_WR)
        _closed_by_server(stopper)

    # A client that refuses the self-signed certificate (verifies against the default CAs).
    refusing = Client(server.port, verify=True)
    with pytest.raises(ssl.SSLCertVerificationError):
        refusing.handshake()
    refusing.sock.sendall(refusing.outgoing.read())  # its alert, if not sent yet
    _closed_by_server(refusing.sock)
    refusing.close()

    _raw_half_close(server, last)

    # A client that never reads stalls its own connection at a bounded amount, not the others.
    stalled = Client(server.port)
    stalled.handshake()
    assert _fill_until_stalled(stalled) < STALL_BOUND
    _serve_and_half_close(server, last)
    stalled.close()  # with bytes unread: a reset

    # A reset in the middle of a record.
    resetting = Client(server.port)
    resetting.handshake()
    resetting.tls.write(_message(10000))
    resetting.sock.sendall(resetting.outgoing.read()[:3000])
    resetting.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
    resetting.close()  # linger 0: RST

    server.settles_at(baseline)
    _serve_and_half_close(server, last)  # still serving


def _home_made_per_style() -> list:
    chosen = {}
    for variant in loops.discover().values():
        if variant.kind == loops.HOME_MADE and "io" in variant.capabilities:
            for style in variant.styles:
                chosen.setdefault(style, variant)
    return [pytest.param(v, s, id=f"{v.name}-{s}") for s, v in chosen.items()]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("variant", "style"), CASES)
def test_tls_echo_every_size_then_half_close_then_sigint(variant, style):
    if "io" not in variant.capabilities:
        pytest.skip(f"{variant.name} does not claim 'io'")
    server = Server(["workloads.echo", "--loop", variant.name, "--style", style])
    try:
        assert _serve_and_half_close(server), "no close_notify after the peer's"
        idle = Client(server.port)  # open at the stop: the server closes it too
        idle.handshake()
        assert idle.echo(b"ping") == b"ping"
        out, _ = server.stop()
        assert idle.rest() == b""
        idle.close()
    finally:
        server.kill()
    assert "every socket closed" in out, out


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("variant", "style"), _home_made_per_style())
def test_tls_bad_input_is_one_line_and_loses_nothing(variant, style):
    server = Server(["workloads.echo", "--loop", variant.name, "--style", style])
    try:
        _bad_input(server)
        out, err = server.stop()
    finally:
        server.kill()
    assert "every socket closed" in out, out
    failed = [line for line in err.splitlines() if "TLS handshake failed" in line]
    assert len(failed) == 2, err  # the stopped handshake and the refused certificate
    assert any("CERTIFICATE" in line or "UNKNOWN_CA" in line for line in failed), failed


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", TLS_ANCHORS)
def test_tls_anchor_echoes_survives_bad_input_and_stops(name):
    """Their own libraries may close without close_notify; the echo of what came before a
    half-close is the next test's (asyncio's streams may drop it)."""
    server = Server(["workloads.echo.native", name])
    try:
        _bad_input(server, last=b"")
        server.stop()
    finally:
        server.kill()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=DROPS_HALF_CLOSE[name], strict=True))
        if name in DROPS_HALF_CLOSE
        else name
        for name in TLS_ANCHORS
    ],
)
def test_tls_anchor_echoes_what_came_before_a_half_close(name):
    server = Server(["workloads.echo.native", name])
    try:
        _serve_and_half_close(server)  # close_notify (where the deviation always shows)
        _raw_half_close(server, _message(5000))  # a FIN without close_notify
        server.stop()
    finally:
        server.kill()


def test_tls_over_udp_is_a_usage_error():
    command = [sys.executable, "-m", "workloads.echo", "--loop", "asyncio", "--port", "0"]
    result = subprocess.run(
        [*command, "--udp", "--tls"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--tls is for TCP" in result.stderr, result.stderr
