"""asyncio's two native echo servers, streams and Protocol, on asyncio's own loop or uvloop's.

Streams are what asyncio's documentation teaches; a Protocol over transports is what its
fastest users write. The same two programs run on uvloop by changing only the loop factory,
which is how uvloop is meant to be used. With ``tls`` (a server SSLContext) both serve TLS
through the loop's own ``ssl=``: asyncio's sslproto, or uvloop's port of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import ssl
from collections.abc import Callable

from workloads.echo.native import READ_SIZE

# At stop, a TLS connection's close sends close_notify and waits this long for the peer's
# (asyncio's default is 30 s), so that a peer that never answers cannot hold the stop.
SHUTDOWN_TIMEOUT = 2.0


def _tls_options(tls: ssl.SSLContext | None) -> dict:
    """The server's TLS keyword arguments: none for plain TCP (asyncio refuses a timeout
    without ssl=)."""
    return {} if tls is None else {"ssl": tls, "ssl_shutdown_timeout": SHUTDOWN_TIMEOUT}


async def _until_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()


async def _streams(host: str, port: int, ready: Callable[[int], None], tls) -> None:
    live: dict[asyncio.StreamWriter, asyncio.Task] = {}

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        live[writer] = asyncio.current_task()
        try:
            while data := await reader.read(READ_SIZE):
                writer.write(data)
                await writer.drain()  # backpressure: wait while the peer is not reading
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()
            del live[writer]

    server = await asyncio.start_server(echo, host, port, backlog=1024, **_tls_options(tls))
    ready(server.sockets[0].getsockname()[1])
    await _until_signal()
    server.close()
    handlers = list(live.values())
    for writer in list(live):
        writer.close()  # each handler then reads EOF and ends on its own
    await asyncio.gather(*handlers, return_exceptions=True)


class EchoProtocol(asyncio.Protocol):
    """Echo what arrives; stop reading while the transport's write buffer is full."""

    def __init__(self, live: set[asyncio.Transport]) -> None:
        self.live = live

    def connection_made(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.live.add(transport)

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)

    def pause_writing(self) -> None:
        self.transport.pause_reading()

    def resume_writing(self) -> None:
        self.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.live.discard(self.transport)


async def _protocol(host: str, port: int, ready: Callable[[int], None], tls) -> None:
    live: set[asyncio.Transport] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: EchoProtocol(live), host, port, backlog=1024, **_tls_options(tls)
    )
    ready(server.sockets[0].getsockname()[1])
    await _until_signal()
    server.close()
    for transport in list(live):
        transport.close()
    await asyncio.sleep(0)  # let the transports' close callbacks run
    # A TLS transport closes once the close_notify exchange ends (or SHUTDOWN_TIMEOUT).
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SHUTDOWN_TIMEOUT + 1):
            while live:
                await asyncio.sleep(0.01)


def _run(program, loop_factory, host: str, port: int, ready, tls) -> None:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        runner.run(program(host, port, ready, tls))


def serve_asyncio_streams(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    _run(_streams, None, host, port, ready, tls)


def serve_asyncio_protocol(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    _run(_protocol, None, host, port, ready, tls)


def serve_uvloop_streams(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    import uvloop

    _run(_streams, uvloop.new_event_loop, host, port, ready, tls)


def serve_uvloop_protocol(host: str, port: int, ready: Callable[[int], None], tls=None) -> None:
    import uvloop

    _run(_protocol, uvloop.new_event_loop, host, port, ready, tls)
