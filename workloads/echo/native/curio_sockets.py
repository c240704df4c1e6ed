"""curio's native echo server: its socket wrappers, one task per client, in a TaskGroup.

curio 1.x has no signal API of its own. SIGTERM and SIGINT arrive as a byte on a socket
(:class:`workloads.common.StopSignals`) that the main task waits on like any other socket;
it then cancels the serving task, whose TaskGroup cancels every client task (closing its
socket on the way out of ``async with``). A handler that raised KeyboardInterrupt instead
would land at an arbitrary point inside curio's kernel: with thousands of clients it
interrupted the kernel between spawning a task and starting it, and the server exited 1 with
"Task not terminated" (see ``tests/test_echo_native.py``). With ``tls`` (a server SSLContext)
each client task first wraps its socket with curio's own ``curio.ssl`` and runs the handshake.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from loops.contract import requires
from workloads.common import StopSignals
from workloads.echo.native import READ_SIZE

with requires("curio"):  # curio 1.6 does not import on Python 3.12+
    import curio
    import curio.ssl
    from curio import socket
    from curio.io import Socket


async def _echo(client: socket.socket, tls) -> None:
    async with client:
        try:
            if tls is not None:
                client = await tls.wrap_socket(client, server_side=True)  # and the handshake
            while data := await client.recv(READ_SIZE):
                await client.sendall(data)  # waits while the peer is not reading
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            await client.close()  # the TLS socket, if any (the plain one closes on exit)


async def _serve_clients(listener: socket.socket, tls) -> None:
    async with curio.TaskGroup() as clients:
        while True:
            client, _ = await listener.accept()
            # Nagle off, as asyncio, uvloop and trio set it by default on TCP streams.
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            await clients.spawn(_echo, client, tls)


async def _main(host: str, port: int, ready: Callable[[int], None], stop: StopSignals, tls) -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    async with listener:
        serving = await curio.spawn(_serve_clients, listener, tls)
        ready(listener.getsockname()[1])
        await Socket(stop.reader).recv(1)
        await serving.cancel()


def serve(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    context = None if tls is None else curio.ssl.CurioSSLContext(tls)
    with StopSignals() as stop:
        curio.run(_main, host, port, ready, stop, context)
