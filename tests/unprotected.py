"""Deliberately unprotected peers for tests/test_faults_catch.py: each lacks exactly one
protection that a fault-suite case checks, so the case can be seen failing on it.

    python -m tests.unprotected buffering-echo              # asyncio's textbook echo server
    python -m tests.unprotected no-backoff-echo --loop L --style S --port 0

``buffering-echo`` writes whatever arrives, at once: ``transport.write()`` never refuses and
the protocol never pauses reading, so everything a peer that does not read sends piles up in
the server's memory. ``no-backoff-echo`` is the lab's own echo server with its accept back-off
set to zero: out of descriptors, it retries ``accept()`` at once, forever.
"""

from __future__ import annotations

import asyncio
import signal
import sys


class BufferingEcho(asyncio.Protocol):
    """Echo without flow control: no pause_reading(), no heed of pause_writing()."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)


async def buffering_echo() -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(BufferingEcho, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port} (buffering echo, no flow control)", flush=True)
    stop = loop.create_future()
    loop.add_signal_handler(signal.SIGTERM, stop.set_result, None)
    await stop
    server.close()


def no_backoff_echo(argv: list[str]) -> int:
    from workloads.echo import common
    from workloads.echo.__main__ import main

    common.ACCEPT_RETRY_DELAY = 0  # the one difference: out of descriptors, accept again at once
    return main(argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["buffering-echo"]:
        asyncio.run(buffering_echo())
    elif sys.argv[1:2] == ["no-backoff-echo"]:
        sys.exit(no_backoff_echo(sys.argv[2:]))
    else:
        sys.exit("usage: python -m tests.unprotected buffering-echo | no-backoff-echo ARGS")
