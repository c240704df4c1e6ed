"""The echo workload end to end: the real server process under the real load generator process.

Every discovered variant and style is a case (new variants join by being discovered). Each
case serves a verified load, survives misbehaving peers (a reset, a half-close, a peer that
never reads) without harm to the others, and exits 0 on SIGTERM with every socket closed.
The load generator's own checks are tested against deliberately broken servers.
"""

from __future__ import annotations

import ctypes
import json
import select
import signal
import socket
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest

import loops
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


@contextmanager
def echo_server(variant: loops.Variant, style: str, *extra: str):
    """The server process and its port; killed at the end if a test left it running."""
    command = [sys.executable, "-m", "workloads.echo", "--loop", variant.name, "--style", style]
    process = subprocess.Popen(
        [*command, "--port", "0", *extra],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_die_with_parent,
    )
    try:
        line = _read_line(process.stdout, 20)
        assert line.startswith("listening on "), line + process.stderr.read()
        port = int(line.split()[2].rsplit(":", 1)[1])
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def run_load(port: int, tmp_path: Path, *extra: str, server_pid: int | None = None) -> dict:
    report = tmp_path / "load.json"
    command = [sys.executable, "-m", "workloads.echo.load", "--port", str(port)]
    command += ["--json", str(report), "--timeout", "10", *extra]
    if server_pid is not None:
        command += ["--server-pid", str(server_pid)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    record = json.loads(report.read_text())
    record["returncode"] = done.returncode
    record["output"] = done.stdout + done.stderr
    return record


def stop_cleanly(process: subprocess.Popen, port: int, udp: bool = False) -> None:
    """SIGTERM: exit 0, say every socket is closed, and leave the port free."""
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=15)
    assert process.returncode == 0, out + err
    assert "every socket closed" in out, out + err
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    with socket.socket(socket.AF_INET, kind) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", port))  # fails if the server's socket were still bound


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
def test_tcp_echo_serves_a_verified_load_and_stops_cleanly(variant, style, tmp_path):
    _needs(variant, "io")
    with echo_server(variant, style) as (server, port):
        record = run_load(
            port,
            tmp_path,
            *("--connections", "4", "--size", "3000", "--duration", "0.2"),
            server_pid=server.pid,
        )
        assert record["returncode"] == 0, record["output"]
        assert record["ok"] and record["requests"] > 0 and record["errors"] == 0
        assert record["bytes_echoed"] == record["requests"] * 3000
        assert record["server_cpu_s"] is not None

        # A peer that never reads stalls its own connection at a bounded amount ...
        stalled = _connect(port)
        assert _fill_until_stalled(stalled) < STALL_BOUND
        # ... while a reset, and a half-close (EOF) after a large message, are served alongside.
        reset = _connect(port)
        reset.sendall(b"x" * 5000)
        reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        reset.close()  # linger 0: RST instead of FIN
        with _connect(port) as half:
            message = bytes(range(256)) * 1024
            sender = threading.Thread(target=lambda: (half.sendall(message), half.shutdown(1)))
            sender.start()
            echoed = _recv_exactly(half, len(message))
            sender.join()
            assert echoed == message
            assert half.recv(1) == b"", "the server did not close after the peer's EOF"
        # An open, idle connection at stop time is closed by the server too.
        idle = _connect(port)
        idle.sendall(b"ping")
        assert _recv_exactly(idle, 4) == b"ping"

        stop_cleanly(server, port)
        assert idle.recv(1) == b""
        idle.close()
        stalled.close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("variant", "style"), CASES)
def test_udp_echo_serves_a_verified_load_and_stops_cleanly(variant, style, tmp_path):
    _needs(variant, "udp")
    with echo_server(variant, style, "--udp") as (server, port):
        record = run_load(
            port,
            tmp_path,
            *("--udp", "--connections", "4", "--size", "1200", "--duration", "0.2"),
        )
        assert record["returncode"] == 0, record["output"]
        assert record["ok"] and record["requests"] > 0 and record["transport"] == "udp"
        stop_cleanly(server, port, udp=True)


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
        with conn:
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
        record = run_load(port, tmp_path, *args)
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
