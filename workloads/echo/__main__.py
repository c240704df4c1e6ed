"""``python -m workloads.echo``: serve echo on the chosen loop and style until a stop signal.

Usage is in ``workloads/README.md``. This module only does what is the
same for every style: arguments, the listening socket, the TLS context (``--tls``), the stop
signals, the ready line, and the final check that no socket is left open.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from machine.proc import raise_open_file_limit
from workloads.common import (
    StopSignals,
    add_loop_arguments,
    open_sockets,
    port_number,
    resolve,
    style_module,
)
from workloads.echo.common import open_listener
from workloads.tls import Layer, server_context


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.echo",
        description="Serve TCP, UDP or TLS echo on one loop and style until SIGINT or SIGTERM.",
    )
    add_loop_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument(
        "--port",
        type=port_number,
        required=True,
        help="port to bind; 0 picks a free one (it is printed)",
    )
    parser.add_argument("--udp", action="store_true", help="echo datagrams instead of TCP")
    parser.add_argument(
        "--tls",
        action="store_true",
        help="echo over TLS, with a certificate made at start by a throwaway CA (workloads/tls/)",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log per-connection events (resets, EOF)"
    )
    args = parser.parse_args(argv)
    variant, style = resolve(parser, args)
    if args.tls and args.udp:
        parser.error("--tls is for TCP: TLS needs a byte stream; over UDP it is DTLS, not offered")
    tls = Layer(style, server_context()) if args.tls else None
    raise_open_file_limit()  # C10k: as many connections as the hard limit allows
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(name)s %(levelname)s: %(message)s",
    )

    with StopSignals() as stop:
        try:
            listener = open_listener(args.host, args.port, args.udp)
        except OSError as error:
            parser.exit(1, f"cannot listen on {args.host}:{args.port}: {error}\n")
        with listener:
            host, port = listener.getsockname()[:2]
            transport = "udp" if args.udp else "tls" if args.tls else "tcp"
            print(
                f"listening on {host}:{port} "
                f"({transport}, loop {variant.name}, style {style}, pid {os.getpid()})",
                flush=True,
            )
            echo = style_module("workloads.echo", style)
            echo.serve(variant.api(style), listener, stop.reader, tls)
        received = stop.received

    left_open = open_sockets()
    if left_open:
        print("sockets left open at exit:\n  " + "\n  ".join(left_open), file=sys.stderr)
        return 1
    reason = signal.Signals(received).name if received else "the loop returning"
    print(f"stopped by {reason}; every socket closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
