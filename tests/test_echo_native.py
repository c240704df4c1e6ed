"""The anchor echo servers: each serves a verified load and stops cleanly, as the bench needs.

Real processes and sockets: each anchor is started as ``python -m workloads.echo.native``,
loaded by the real load generator (which verifies every byte), checked for backpressure (a
client that does not read must not stall another), and stopped with SIGTERM.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.plan import anchor_names
from bench.procs import LISTENING
from tests.client_storm import storm

ROOT = Path(__file__).resolve().parent.parent


def start(name: str) -> tuple[subprocess.Popen, int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "workloads.echo.native", name, "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline()
    match = LISTENING.search(line)
    if match is None:
        server.kill()
        pytest.fail(f"{name} did not announce its port: {line!r} {server.stderr.read()}")
    return server, int(match.group(1))


def stop(server: subprocess.Popen) -> int:
    server.send_signal(signal.SIGTERM)
    try:
        return server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.kill()
        pytest.fail("the server did not stop within 10 s of SIGTERM")


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", anchor_names())
def test_anchor_serves_a_verified_load_and_stops_on_sigterm(name, tmp_path):
    server, port = start(name)
    try:
        out = tmp_path / "load.json"
        load = subprocess.run(
            [
                *(sys.executable, "-m", "workloads.echo.load", "--port", str(port)),
                *("--connections", "5", "--size", "20000", "--duration", "0.3"),
                *("--json", str(out), "--server-pid", str(server.pid)),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=50,
        )
        record = json.loads(out.read_text())
        assert load.returncode == 0, load.stderr
        assert record["ok"] and record["errors"] == 0 and record["requests"] > 0
    finally:
        status = stop(server)
    assert status == 0, server.stderr.read()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", anchor_names())
def test_a_client_that_does_not_read_stalls_only_itself(name):
    server, port = start(name)
    try:
        stalled = socket.create_connection(("127.0.0.1", port))
        stalled.setblocking(False)
        chunk = b"x" * 65536
        sent = 0
        deadline = time.monotonic() + 5
        # Send without reading until the kernel buffers on both sides are full.
        while time.monotonic() < deadline:
            try:
                sent += stalled.send(chunk)
            except BlockingIOError:
                time.sleep(0.05)
                try:
                    sent += stalled.send(chunk)
                except BlockingIOError:
                    break
        assert sent > 0
        with socket.create_connection(("127.0.0.1", port), timeout=5) as other:
            other.sendall(b"still served")
            assert other.recv(100) == b"still served"
        stalled.close()
    finally:
        status = stop(server)
    assert status == 0, server.stderr.read()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", anchor_names())
def test_sigterm_amid_a_storm_of_clients_coming_and_going_stops_cleanly(name):
    """The bench stops a server just as its load generator drops every connection at once.

    A stop that lands in the middle of that (connections still in the accept backlog, tasks
    spawned but not started, hundreds of resets to process) must still end the process with
    status 0 and nothing on stderr. curio-sockets once raised KeyboardInterrupt from its signal
    handler, which landed inside curio's kernel: it exited 1 with "Task not terminated" in
    every try at 500 connections. Each anchor is played, since each has its own way to stop.
    """
    server, port = start(name)
    try:
        storm(port)
    finally:
        status = stop(server)
    errors = server.stderr.read()
    assert status == 0, errors[-2000:]
    assert errors == "", errors[-2000:]


def test_an_unknown_anchor_is_a_usage_error_naming_the_known_ones():
    result = subprocess.run(
        [sys.executable, "-m", "workloads.echo.native", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "unknown anchor server 'nope'" in result.stderr and "selectors-floor" in result.stderr
