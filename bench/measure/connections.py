"""Connections, the running side: N connections opened from the bench's own process against a
fresh echo server, its resident memory read before them, with them idle and after a request.

What is measured and why is the workload's description (:mod:`bench.registry.connections`).
"""

from __future__ import annotations

import os
import selectors
import socket
import time
from pathlib import Path

from bench.measure.echo import Serving
from bench.plan import Point, Row
from bench.procs import ChildFailed
from bench.workload import Measuring
from machine.proc import resident

SETTLE_S = 30.0  # at most this long for the server to accept every connection


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh server, one warming round trip, then N connections."""
    count, size = point.args["connections"], point.args["size"]
    with Serving(row, point.args, cores, workdir) as server:
        with socket.create_connection(("127.0.0.1", server.port)) as first:
            _round_trip([first], size)  # the lazy parts of a first connection, not counted
        before = _memory(server.pid)
        connections = _connect(server.port, count)
        try:
            _accepted(server.pid, count)
            idle = _memory(server.pid)
            _round_trip(connections, size)
            active = _memory(server.pid)
        finally:
            for sock in connections:
                sock.close()
    return {
        "idle_bytes_per_connection": (idle - before) / count,
        "active_bytes_per_connection": (active - before) / count,
        "server_rss_mib": active / 2**20,
    }


def _memory(pid: int) -> int:
    found = resident(pid)
    if found is None:
        raise ChildFailed("the server ended while its memory was being read")
    return found


def _connect(port: int, count: int) -> list[socket.socket]:
    """count connected sockets (ChildFailed, saying how far it got, if the server stops)."""
    connections = []
    try:
        for _ in range(count):
            connections.append(socket.create_connection(("127.0.0.1", port), timeout=SETTLE_S))
    except OSError as error:
        for sock in connections:
            sock.close()
        raise ChildFailed(f"connection {len(connections) + 1:,} of {count:,}: {error}") from error
    return connections


def _accepted(pid: int, count: int) -> None:
    """Wait until the server holds a descriptor for each connection: accepted, not just
    queued in the kernel's backlog, so the idle reading includes what accepting made."""
    deadline = time.monotonic() + SETTLE_S
    while len(os.listdir(f"/proc/{pid}/fd")) < count:
        if _ended(pid):
            raise ChildFailed("the server ended while the connections were being accepted")
        if time.monotonic() > deadline:
            held = len(os.listdir(f"/proc/{pid}/fd"))
            raise ChildFailed(f"the server holds {held:,} descriptors after {SETTLE_S:g} s, "
                              f"not {count:,} connections")  # fmt: skip
        time.sleep(0.05)  # polling another process's descriptor table: nothing to wait on


def _ended(pid: int) -> bool:
    """The process has exited (a zombie its parent has not reaped yet, or gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def _round_trip(connections: list[socket.socket], size: int) -> None:
    """One request of `size` bytes on every connection, and its whole echo, checked."""
    message = b"m" * size
    with selectors.DefaultSelector() as selector:
        for sock in connections:
            sock.setblocking(False)
            sock.sendall(message)  # 1 KiB fits an empty send buffer: it does not block
            selector.register(sock, selectors.EVENT_READ, bytearray())
        waiting = len(connections)
        deadline = time.monotonic() + SETTLE_S
        while waiting:
            if time.monotonic() > deadline:
                raise ChildFailed(f"{waiting:,} echoes missing after {SETTLE_S:g} s")
            for key, _ in selector.select(1.0):
                data = key.fileobj.recv(size)
                if not data:
                    raise ChildFailed("the server closed a connection mid-echo")
                key.data.extend(data)
                if len(key.data) >= size:
                    if key.data != message:
                        raise ChildFailed("an echo came back wrong")
                    selector.unregister(key.fileobj)
                    waiting -= 1


MEASURING = Measuring(measure=measure)
