"""``python -m workloads.http.serve``: uvicorn serving the workload's app on one loop.

    python -m workloads.http.serve --loop NAME [--host H] --port P
        [--http auto|httptools|h11]

The loop comes from discovery: the variant's ``asyncio_loop`` factory (``loops/contract.py``),
handed to ``asyncio.Runner`` exactly as ``uvicorn --loop module:factory`` would hand it to
``asyncio.run`` (asyncio's eager tasks are the ``asyncio_eager`` variant, 3.12+). The socket
is bound here (``--port 0`` picks a free one) and the ready line says where:
``listening on HOST:PORT (loop NAME, pid PID)``. SIGINT or SIGTERM stops uvicorn gracefully.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import loops
from workloads.common import port_number

HTTP_IMPLEMENTATIONS = ("auto", "httptools", "h11")


def asyncio_variants() -> list[str]:
    """The variants that offer an asyncio event loop (by discovery)."""
    return [name for name, v in loops.discover().items() if v.asyncio_loop is not None]


def loop_factory(parser: argparse.ArgumentParser, name: str) -> Callable[[], Any]:
    """The variant's asyncio loop factory, or a usage error saying which loops have one."""
    try:
        variant = loops.get(name)
    except loops.VariantLookupError as error:  # unknown, or unavailable on this interpreter
        parser.error(str(error))
    if variant.asyncio_loop is None:
        parser.error(
            f"loop {name!r} does not speak asyncio (no asyncio_loop in its VARIANT); "
            f"loops that do: {', '.join(asyncio_variants())}"
        )
    return variant.asyncio_loop


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """The options the server and the workload's CLI share."""
    parser.add_argument("--loop", required=True, metavar="NAME", help="a loop that speaks asyncio")
    parser.add_argument(
        "--http",
        choices=HTTP_IMPLEMENTATIONS,
        default="httptools",
        help="uvicorn's HTTP/1.1 implementation (default %(default)s)",
    )


def serve(factory: Callable[[], Any], sock: socket.socket, http: str) -> None:
    """Run uvicorn on sock until a stop signal, on a loop made by factory."""
    import uvicorn

    config = uvicorn.Config(
        "workloads.http.app:app",
        loop="none",  # the loop is ours: asyncio.Runner below makes it
        http=http,
        lifespan="off",
        access_log=False,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(server.serve(sockets=[sock]))


def listener(host: str, port: int) -> socket.socket:
    """A listening TCP socket made with proto=IPPROTO_TCP, not 0 as socket.create_server does:
    asyncio's transports set TCP_NODELAY only on sockets whose proto says TCP, and without it
    a response written in two parts waits for the client's delayed ACK (at least Linux's
    TCP_DELACK_MIN, 40 ms, each: include/net/tcp.h)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except BaseException:
        sock.close()
        raise
    return sock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.http.serve",
        description="Serve the http workload's ASGI app with uvicorn on one loop.",
    )
    add_server_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument("--port", type=port_number, required=True, help="0 picks a free one")
    args = parser.parse_args(argv)
    factory = loop_factory(parser, args.loop)
    sock = listener(args.host, args.port)
    host, port = sock.getsockname()[:2]
    print(f"listening on {host}:{port} (loop {args.loop}, pid {os.getpid()})", flush=True)
    with sock:
        serve(factory, sock, args.http)
    return 0


if __name__ == "__main__":
    sys.exit(main())
