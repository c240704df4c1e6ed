"""The echo workload end to end: the real server process under the real load generator process.

Every discovered variant and style is a case (new variants join by being discovered). Each
case serves a verified load, survives misbehaving peers (a reset, a half-close, a peer that
never reads) without harm to the others, and exits 0 on SIGTERM with every socket closed.
The load generator's own checks are tested against deliberately broken servers.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import select
import signal
import socket
import subprocess
import sys
import threading
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

import pytest

import loops
from tests.client_storm import storm
from workloads.echo import __main__ as echo_cli
from workloads.echo import load

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    pytest.param(variant, style, id=f"{variant.name}-{style}")
    for variant in loops.discover().values()
    for style in variant.styles
]
PR_SET_PDEATHSIG = 1
STALL_BOUND = 64 * 2**20  # a server that buffers for a non-reader would take more than this


def _die_with_parent() -> None:
    """Linux: the server gets SIGTERM if pytest dies, so a killed test run leaves no server."""
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _needs(variant: loops.Variant, capability: str) -> None:
    if capability not in variant.capabilities:
        pytest.skip(f"{variant.name} does not claim {capability!r}")


def _read_line(stream, timeout: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no line within {timeout} s"
    return stream.readline()


class Server:
    """An echo server process, started at once; ``port`` waits for its ready line."""

    def __init__(self, variant: loops.Variant, style: str, udp: bool = False) -> None:
        command = [sys.executable, "-m", "workloads.echo", "--loop", variant.name]
        command += ["--style", style, "--port", "0", *(["--udp"] if udp else [])]
        self.udp = udp
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_die_with_parent,
        )
        self._port: int | None = None

    @property
    def port(self) -> int:
        if self._port is None:
            line = _read_line(self.process.stdout, 20)
            assert line.startswith("listening on "), line + self.process.stderr.read()
            self._port = int(line.split()[2].rsplit(":", 1)[1])
        return self._port

    def stop_cleanly(self) -> None:
        """SIGTERM: exit 0, say every socket is closed, and leave the port free."""
        port = self.port
        self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=15)
        assert self.process.returncode == 0, out + err
        assert "every socket closed" in out, out + err
        assert "Traceback" not in err, err
        kind = socket.SOCK_DGRAM if self.udp else socket.SOCK_STREAM
        with socket.socket(socket.AF_INET, kind) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(("127.0.0.1", port))  # fails if the server's socket were still bound

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=10)


class Load:
    """A load generator process, started at once; ``result()`` waits for its record."""

    def __init__(self, port: int, report: Path, *args: str, server_pid: int | None = None):
        command = [sys.executable, "-m", "workloads.echo.load", "--port", str(port)]
        command += ["--json", str(report), "--timeout", "10", *args]
        if server_pid is not None:
            command += ["--server-pid", str(server_pid)]
        self.report = report
        self.process = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    def result(self) -> dict:
        output, _ = self.process.communicate(timeout=60)
        assert self.report.exists(), output
        record = json.loads(self.report.read_text())
        record["returncode"] = self.process.returncode
        record["output"] = output
        return record


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, f"EOF after {len(data)} of {n} bytes"
        data += chunk
    return bytes(data)


def _fill_until_stalled(sock: socket.socket) -> int:
    """Send without ever reading until the socket takes nothing for a while; bytes sent."""
    sock.setblocking(False)
    block = b"s" * 2**18
    sent = 0
    while sent < STALL_BOUND:
        _, writable, _ = select.select([], [sock], [], 0.2)
        if not writable:
            break
        try:
            sent += sock.send(block)
        except BlockingIOError:
            continue
    return sent


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("variant", "style"), CASES)
def test_echo_serves_a_verified_load_and_stops_cleanly(variant, style, tmp_path):
    """TCP, and UDP if claimed: both servers and both loads run side by side, to save time."""
    _needs(variant, "io")
    with ExitStack() as stack:
        tcp = stack.enter_context(closing(Server(variant, style)))
        udp = None
        if "udp" in variant.capabilities:
            udp = stack.enter_context(closing(Server(variant, style, udp=True)))
        args = ("--connections", "4", "--size", "3000", "--duration", "0.2")
        loads = [Load(tcp.port, tmp_path / "tcp.json", *args, server_pid=tcp.process.pid)]
        if udp is not None:
            loads.append(Load(udp.port, tmp_path / "udp.json", "--udp", *args))
        for load in loads:
            record = load.result()
            assert record["returncode"] == 0, record["output"]
            assert record["ok"] and record["requests"] > 0 and record["errors"] == 0
            assert record["bytes_echoed"] == record["requests"] * 3000
        assert loads[0].result()["server_cpu_s"] is not None

        # A peer that never reads stalls its own connection at a bounded amount ...
        stalled = stack.enter_context(_connect(tcp.port))
        assert _fill_until_stalled(stalled) < STALL_BOUND
        # ... while a reset, and a half-close (EOF) after a large message, are served alongside.
        reset = _connect(tcp.port)
        reset.sendall(b"x" * 5000)
        reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        reset.close()  # linger 0: RST instead of FIN
        with _connect(tcp.port) as half:
            message = bytes(range(256)) * 1024
            sender = threading.Thread(target=lambda: (half.sendall(message), half.shutdown(1)))
            sender.start()
            echoed = _recv_exactly(half, len(message))
            sender.join()
            assert echoed == message
            assert half.recv(1) == b"", "the server did not close after the peer's EOF"
        # An open, idle connection at stop time is closed by the server too.
        idle = stack.enter_context(_connect(tcp.port))
        idle.sendall(b"ping")
        assert _recv_exactly(idle, 4) == b"ping"

        tcp.stop_cleanly()
        assert idle.recv(1) == b""
        if udp is not None:
            udp.stop_cleanly()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("variant", "style"), CASES)
def test_sigterm_amid_a_storm_of_clients_coming_and_going_stops_cleanly(variant, style):
    """As the bench stops a server just as its load generator drops every connection at once.

    The same storm is played on the anchors in test_echo_native.py, where it caught
    curio-sockets exiting 1 ("Task not terminated") from a KeyboardInterrupt inside its kernel.
    """
    _needs(variant, "io")
    with closing(Server(variant, style)) as server:
        storm(server.port)
        server.stop_cleanly()


@contextmanager
def broken_server(mangle):
    """A loop-free thread server that answers each read with mangle(data) (None: hang up)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve():
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        # The generator aborts (RST) a connection it caught misbehaving: the end of this one.
        with conn, contextlib.suppress(ConnectionResetError):
            while data := conn.recv(65536):
                answer = mangle(data)
                if answer is None:
                    return
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        thread.join(timeout=10)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("mangle", "kind"),
    [
        (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "corrupt"),
        (lambda data: None, "missing"),
    ],
    ids=["flipped-byte", "hang-up"],
)
def test_the_load_generator_fails_on_a_wrong_or_missing_byte(mangle, kind, tmp_path):
    with broken_server(mangle) as port:
        args = ("--connections", "1", "--size", "100", "--duration", "0.2")
        record = Load(port, tmp_path / "load.json", *args).result()
    assert record["returncode"] == 1, record["output"]
    assert record[kind] == 1 and not record["ok"]
    assert "FAILED" in record["output"]


def test_the_load_generator_refuses_an_oversized_datagram(capsys):
    with pytest.raises(SystemExit) as exit_info:
        load.main(
            ["--port", "9", "--udp", "--connections", "1", "--size", "70000", "--duration", "1"]
        )
    assert exit_info.value.code == 2
    assert "does not fit in a UDP datagram" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loop", "no-such-loop"], "unknown loop 'no-such-loop'; known loops: "),
        (["--loop", "asyncio", "--style", "generators"], "does not speak generators"),
        (["--loop", "asyncio", "--style", "nope"], "unknown style 'nope'"),
    ],
)
def test_a_wrong_loop_or_style_is_a_clear_error(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        echo_cli.main([*args, "--port", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    if "known loops" in message:
        assert all(name in err for name in loops.discover())
