"""Faults at the echo server: peers that reset, half-close, never read, crowd in, send a lot.

Each case runs the lab's echo server (``python -m workloads.echo``) on the case's loop and style
in its own process and misbehaves at it from this process over loopback, while a verifying
client (a thread here, or the lab's load generator process) checks that the well-behaved
peers lose no byte. Then the server must still stop cleanly: SIGTERM, exit 0, every socket
closed (the server checks its own sockets at exit).

Each check is a function taking ``start`` (a context manager yielding a running
:class:`~conformance.processes.Server`), so ``tests/test_faults_catch.py`` can play the same
check against a server deliberately built without the protection and see it fail.
"""

from __future__ import annotations

import contextlib
import random
import select
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

from conformance.processes import (
    ECHO_READY,
    PATIENCE,
    case_prop,
    connect,
    echo_command,
    load,
    pattern,
    recv_exactly,
    reset,
    running,
    stopped_cleanly,
    until,
)
from machine.proc import raise_open_file_limit

RESETTERS = 200
MESSAGE = 64 * 1024  # the verifying client's message size
HOG_BYTES = 50 * 2**20  # what the client that never reads tries to send
HOG_GROWTH_BOUND = 24 * 2**20  # generous: the kernel holds the stalled bytes, not the server
# Connections open at once: "a thousand", and past select()'s 1024-descriptor ceiling on purpose.
CROWD = 1100
BIG_MESSAGE = 10 * 2**20


def echo_server(case, tmp_path):
    """start(**options) for the lab's echo server on the case's loop and style."""
    return lambda **options: running(echo_command(case), ECHO_READY, tmp_path, **options)


class Verifier(threading.Thread):
    """A well-behaved client: echo seeded random messages and compare every byte, until told."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.sock = connect(port)
        self.rounds = 0
        self.errors: list[str] = []
        self.done = threading.Event()
        self.progress = threading.Condition()

    def run(self) -> None:
        rng = random.Random(11)
        with self.sock:
            while not self.done.is_set():
                message = rng.randbytes(MESSAGE)
                try:
                    self.sock.sendall(message)
                    echoed = recv_exactly(self.sock, len(message))
                except OSError as error:
                    self.errors.append(f"round {self.rounds}: {error!r}")
                    break
                if echoed != message:
                    self.errors.append(f"round {self.rounds}: {len(echoed)} bytes, not the same")
                    break
                with self.progress:
                    self.rounds += 1
                    self.progress.notify_all()
        with self.progress:
            self.progress.notify_all()

    def more_rounds(self, n: int) -> bool:
        """Wait until n more rounds are verified (False: an error or the patience ran out)."""
        with self.progress:
            target = self.rounds + n
            return (
                self.progress.wait_for(
                    lambda: self.rounds >= target or self.errors, timeout=PATIENCE
                )
                and not self.errors
            )

    def finish(self) -> list[str]:
        self.done.set()
        self.join(timeout=PATIENCE)
        return self.errors


def _reset_storm(port: int) -> None:
    """RESETTERS clients: half reset after part of a message, half in the middle of its echo."""
    clients = [connect(port) for _ in range(RESETTERS)]
    for n, client in enumerate(clients):
        if n % 2:
            client.sendall(b"partial message " * 64)  # ... and the rest never comes
        else:
            client.setblocking(False)  # as much as the kernel takes, so the echo is under way
            with contextlib.suppress(BlockingIOError):
                client.send(b"m" * 2**20)
    for client in clients:
        reset(client)


def resets_lose_nothing(start) -> dict:
    with start() as server:
        verifier = Verifier(server.port)
        verifier.start()
        seen = {"verified before": verifier.more_rounds(3)}
        _reset_storm(server.port)
        seen["verified after"] = verifier.more_rounds(5)
        seen["verifier errors"] = verifier.finish()
        with connect(server.port) as fresh:
            fresh.sendall(b"still there?")
            seen["a new client is served"] = recv_exactly(fresh, 12) == b"still there?"
        seen["every reset connection closed"] = until(lambda: server.connections() == 0)
        seen["stopped cleanly"] = stopped_cleanly(server)
    return seen


NOTHING_LOST = {
    "verified before": True,
    "verified after": True,
    "verifier errors": [],
    "a new client is served": True,
    "every reset connection closed": True,
    "stopped cleanly": True,
}


@case_prop("io", timeout=60)
def test_resets_mid_message_lose_no_byte_of_the_others(case, tmp_path):
    assert resets_lose_nothing(echo_server(case, tmp_path)) == NOTHING_LOST


HALF_CLOSED_SIZES = [0, 1, 1000, 65535, 65536, 65537, 300_000, 2**20, 3 * 2**20]


def _half_close(port: int, size: int) -> str:
    """Send size bytes, shut down writing, read the whole echo, then EOF: 'ok' or what failed."""
    message = random.Random(size).randbytes(size)
    with connect(port) as sock:

        def send() -> None:
            sock.sendall(message)
            sock.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        echoed = recv_exactly(sock, size)
        sender.join(timeout=PATIENCE)
        if echoed != message:
            return f"{size}: got {len(echoed)} bytes, not the message"
        if sock.recv(1) != b"":
            return f"{size}: no EOF after the echo"
    return "ok"


def half_closed_connections_get_every_byte(start) -> dict:
    with start() as server, ThreadPoolExecutor(len(HALF_CLOSED_SIZES)) as pool:
        results = list(pool.map(lambda n: _half_close(server.port, n), HALF_CLOSED_SIZES))
        return {"half-closed": results, "stopped cleanly": stopped_cleanly(server)}


@case_prop("io", timeout=60)
def test_a_half_closed_connection_still_reads_every_echoed_byte(case, tmp_path):
    assert half_closed_connections_get_every_byte(echo_server(case, tmp_path)) == {
        "half-closed": ["ok"] * len(HALF_CLOSED_SIZES),
        "stopped cleanly": True,
    }


def _push_until_stalled(sock: socket.socket, data: bytes) -> int:
    """Send data (never reading) until it is all sent or the socket takes nothing for half
    a second; the bytes sent."""
    sock.setblocking(False)
    view, sent = memoryview(data), 0
    while sent < len(data):
        _, writable, _ = select.select([], [sock], [], 0.5)
        if not writable:
            break
        try:
            sent += sock.send(view[sent : sent + 2**18])
        except BlockingIOError:
            continue
    return sent


def a_non_reader_stalls_only_itself(start) -> dict:
    sent_pattern = pattern(HOG_BYTES)
    with start() as server:
        verifier = Verifier(server.port)
        verifier.start()
        before = server.rss()
        hog = connect(server.port)
        sent = _push_until_stalled(hog, sent_pattern)
        growth = server.rss() - before
        seen = {
            "server memory bounded": growth < HOG_GROWTH_BOUND or f"grew {growth >> 20} MiB",
            "others served meanwhile": verifier.more_rounds(5),
            "verifier errors": verifier.finish(),
        }
        hog.setblocking(True)
        seen["the stalled peer's bytes all echoed"] = recv_exactly(hog, sent) == sent_pattern[:sent]
        hog.close()
        seen["stopped cleanly"] = stopped_cleanly(server)
        return seen


STALLED_ONLY_ITSELF = {
    "server memory bounded": True,
    "others served meanwhile": True,
    "verifier errors": [],
    "the stalled peer's bytes all echoed": True,
    "stopped cleanly": True,
}


@case_prop("io", timeout=90)
def test_a_client_that_sends_50_mib_and_never_reads_stalls_only_itself(case, tmp_path):
    assert a_non_reader_stalls_only_itself(echo_server(case, tmp_path)) == STALLED_ONLY_ITSELF


def _echo(client: socket.socket, message: bytes) -> bytes:
    try:
        client.sendall(message)
        return recv_exactly(client, len(message))
    except OSError as error:
        return repr(error).encode()


def crowd_all_served(start) -> dict:
    raise_open_file_limit(CROWD + 256)
    with start(max_fds=CROWD + 256) as server:
        clients = []
        try:
            for _ in range(CROWD):
                clients.append(connect(server.port))
            until(lambda: not server.alive or server.connections() >= CROWD)
            seen = {"all open at once": server.alive and server.connections() >= CROWD}
            echoes = [_echo(client, b"%08d" % n) for n, client in enumerate(clients)]
            wrong = [n for n, echo in enumerate(echoes) if echo != b"%08d" % n]
            seen["every one echoed"] = not wrong or f"{len(wrong)} wrong, first {wrong[0]}"
        finally:
            for client in clients:
                client.close()
        seen["stopped cleanly"] = stopped_cleanly(server)
        if seen != CROWD_SERVED:
            seen["server log"] = server.errors()[-1500:]
        return seen


CROWD_SERVED = {"all open at once": True, "every one echoed": True, "stopped cleanly": True}


@case_prop("io", timeout=90)
def test_eleven_hundred_connections_open_at_once_are_all_served(case, tmp_path):
    assert crowd_all_served(echo_server(case, tmp_path)) == CROWD_SERVED


@case_prop("io", timeout=90)
def test_a_ten_mib_message_comes_back_whole(case, tmp_path):
    with echo_server(case, tmp_path)() as server:
        record = load(server.port, tmp_path, "--connections", "2", "--size", str(BIG_MESSAGE),
                      "--duration", "0.1", "--timeout", "30")  # fmt: skip
        seen = {
            "verified": record["ok"] or record["output"],
            "bytes": record.get("bytes_echoed", 0) % BIG_MESSAGE,
            "stopped cleanly": stopped_cleanly(server),
        }
    assert seen == {"verified": True, "bytes": 0, "stopped cleanly": True}
