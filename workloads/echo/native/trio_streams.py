"""trio's native echo server: ``trio.serve_tcp`` and a ``SocketStream`` per client.

Structured concurrency does the bookkeeping: every handler lives in serve_tcp's nursery, and
cancelling that nursery on SIGTERM ends and closes every connection. With ``tls`` (a server
SSLContext) each connection is wrapped in trio's own ``trio.SSLStream``.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable

from loops.contract import requires
from workloads.echo.native import READ_SIZE

with requires("trio"):
    import trio


async def _echo(stream: trio.abc.Stream) -> None:
    async with stream:  # over TLS, aclose sends close_notify
        try:
            while data := await stream.receive_some(READ_SIZE):
                await stream.send_all(data)  # waits while the peer is not reading
        except trio.BrokenResourceError:  # a reset; over TLS, also a failed handshake
            pass


def _tls_echo(context):
    async def echo(stream: trio.SocketStream) -> None:
        await _echo(trio.SSLStream(stream, context, server_side=True))

    return echo


async def _main(host: str, port: int, ready: Callable[[int], None], tls) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            handler = _echo if tls is None else _tls_echo(tls)
            listeners = await nursery.start(
                functools.partial(trio.serve_tcp, handler, port, host=host)
            )
            ready(listeners[0].socket.getsockname()[1])
            async for _ in signals:
                break
            nursery.cancel_scope.cancel()


def serve(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    trio.run(_main, host, port, ready, tls)
