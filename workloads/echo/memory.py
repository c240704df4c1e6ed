"""The echo memory peer: what a running echo server holds per open connection.

    python -m workloads.echo.memory --port P --server-pid PID --connections N
        [--size BYTES] [--host H] [--json FILE]

One connection's round trip warms the server; then N connections are opened and left idle
until the server holds a descriptor for each, then each sends one message and reads its echo,
checked. The server's resident memory (``VmRSS``) is read before the N, with them idle and
after their request: bytes per connection are the growth over the first reading, divided by
N. It runs in its own process, beside the server it measures (it reads ``/proc/PID``).
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import sys
import time
from pathlib import Path

from machine.proc import raise_open_file_limit, resident
from workloads.common import finish, port_number, positive

SETTLE_S = 30.0  # at most this long for the server to accept every connection, or to echo


class ServerStopped(RuntimeError):
    """The server ended, or could not take the connections: what the record says instead."""


def measure(host: str, port: int, pid: int, count: int, size: int) -> dict:
    """The three readings and the figures per connection (ServerStopped if it stops)."""
    with socket.create_connection((host, port), timeout=SETTLE_S) as first:
        round_trip([first], size, pid)  # the lazy parts of a first connection, not counted
    before = memory(pid)
    connections = connect(host, port, count)
    try:
        accepted(pid, count)
        idle = memory(pid)
        round_trip(connections, size, pid)
        active = memory(pid)
    finally:
        for sock in connections:
            sock.close()
    return {
        "rss_before_bytes": before,
        "rss_idle_bytes": idle,
        "rss_active_bytes": active,
        "idle_bytes_per_connection": round((idle - before) / count, 1),
        "active_bytes_per_connection": round((active - before) / count, 1),
    }


def memory(pid: int) -> int:
    found = resident(pid)
    if found is None or ended(pid):
        raise ServerStopped("the server ended while its memory was being read")
    return found


def ended(pid: int) -> bool:
    """The process has exited (a zombie its parent has not reaped yet, or gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


def connect(host: str, port: int, count: int) -> list[socket.socket]:
    """count connected sockets, or ServerStopped saying how far it got."""
    connections = []
    try:
        for _ in range(count):
            connections.append(socket.create_connection((host, port), timeout=SETTLE_S))
    except OSError as error:
        for sock in connections:
            sock.close()
        raise ServerStopped(f"connection {len(connections) + 1:,} of {count:,}: {error}") from error
    return connections


def accepted(pid: int, count: int) -> None:
    """Wait until the server holds a descriptor for each connection: accepted, not just
    queued in the kernel's backlog, so the idle reading includes what accepting made."""
    deadline = time.monotonic() + SETTLE_S
    while len(os.listdir(f"/proc/{pid}/fd")) < count:
        if ended(pid):
            raise ServerStopped("the server ended while the connections were being accepted")
        if time.monotonic() > deadline:
            held = len(os.listdir(f"/proc/{pid}/fd"))
            raise ServerStopped(
                f"the server holds {held:,} descriptors after {SETTLE_S:g} s, "
                f"not {count:,} connections"
            )
        time.sleep(0.05)  # polling another process's descriptor table: nothing to wait on


def round_trip(connections: list[socket.socket], size: int, pid: int) -> None:
    """One message of `size` bytes on every connection, and its whole echo, checked."""
    message = b"m" * size
    with selectors.DefaultSelector() as selector:
        for sock in connections:
            sock.setblocking(False)
            sock.sendall(message)  # a message that fits an empty send buffer: it does not block
            selector.register(sock, selectors.EVENT_READ, bytearray())
        waiting = len(connections)
        deadline = time.monotonic() + SETTLE_S
        while waiting:
            if ended(pid):
                raise ServerStopped(f"the server ended with {waiting:,} echoes missing")
            if time.monotonic() > deadline:
                raise ServerStopped(f"{waiting:,} echoes missing after {SETTLE_S:g} s")
            for key, _ in selector.select(1.0):
                try:
                    data = key.fileobj.recv(size)
                except ConnectionError as error:
                    raise ServerStopped(f"a connection failed mid-echo: {error}") from error
                if not data:
                    raise ServerStopped("the server closed a connection mid-echo")
                key.data.extend(data)
                if len(key.data) >= size:
                    if key.data != message:
                        raise ServerStopped("an echo came back wrong")
                    selector.unregister(key.fileobj)
                    waiting -= 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.echo.memory",
        description="What an echo server holds in memory per open connection, idle and active.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_number, required=True)
    parser.add_argument("--server-pid", type=int, required=True, help="the server to read")
    parser.add_argument("--connections", type=positive(int), required=True)
    parser.add_argument(
        "--size", type=positive(int), default=1024, help="bytes of the one message (default 1024)"
    )
    parser.add_argument("--json", metavar="FILE", help="write the result record ('-': stdout)")
    args = parser.parse_args(argv)
    if resident(args.server_pid) is None:
        parser.error(f"--server-pid {args.server_pid}: no such process")
    if args.size > 16 * 1024:
        parser.error("--size: at most 16384 bytes, so that a message never blocks its send")
    limit = raise_open_file_limit(args.connections + 64)
    if limit < args.connections + 16:
        parser.exit(1, f"{args.connections} connections need more open files than {limit}\n")
    record = {
        "workload": "echo-memory",
        "port": args.port,
        "server_pid": args.server_pid,
        "connections": args.connections,
        "size": args.size,
    }
    try:
        record |= measure(args.host, args.port, args.server_pid, args.connections, args.size)
        record["ok"], record["first_error"] = True, ""
        line = (
            f"echo memory: {args.connections:,} connections hold "
            f"{record['idle_bytes_per_connection']:,.0f} bytes each idle, "
            f"{record['active_bytes_per_connection']:,.0f} after one {args.size:,} B request"
        )
    except (ServerStopped, OSError) as error:
        record["ok"], record["first_error"] = False, str(error)
        line = f"echo memory: stopped: {error}"
    return finish(record, args.json, line)


if __name__ == "__main__":
    sys.exit(main())
