"""curio's native echo server: its socket wrappers, one task per client, in a TaskGroup.

curio 1.x has no signal API of its own; SIGTERM is turned into KeyboardInterrupt, which
curio delivers out of ``run()``, whose kernel shutdown cancels every client task (closing its
socket on the way out of ``async with``).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable

import curio
from curio import socket

from workloads.echo.native import READ_SIZE


async def _echo(client: socket.socket) -> None:
    async with client:
        try:
            while data := await client.recv(READ_SIZE):
                await client.sendall(data)  # waits while the peer is not reading
        except ConnectionError:
            pass


async def _main(host: str, port: int, ready: Callable[[int], None]) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    async with listener:
        ready(listener.getsockname()[1])
        async with curio.TaskGroup() as clients:
            while True:
                client, _ = await listener.accept()
                # Nagle off, as asyncio, uvloop and trio set it by default on TCP streams.
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                await clients.spawn(_echo, client)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def serve(host: str, port: int, ready: Callable[[int], None]) -> None:
    signal.signal(signal.SIGTERM, _interrupt)
    with contextlib.suppress(KeyboardInterrupt):
        curio.run(_main, host, port, ready)
