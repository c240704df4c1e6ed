"""`python -m workloads.echo.native NAME [--host H] --port P [--tls]`: run one anchor server."""

from __future__ import annotations

import argparse
import sys

from loops.contract import PYTHON, Unavailable
from machine.proc import raise_open_file_limit
from workloads.echo.native import SERVERS, server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workloads.echo.native", description=__doc__)
    parser.add_argument("name", help=f"one of: {', '.join(SERVERS)}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    parser.add_argument(
        "--tls", action="store_true", help="serve TLS, with a certificate made at start"
    )
    args = parser.parse_args(argv)
    raise_open_file_limit()  # C10k: as many connections as the hard limit allows
    try:
        serve = server(args.name)
    except LookupError as error:
        parser.error(str(error))
    except Unavailable as why:  # its library does not load on this interpreter
        parser.error(f"anchor {args.name!r} is unavailable on Python {PYTHON}: {why}")

    def ready(port: int) -> None:
        print(f"listening on {args.host}:{port}" + (" (tls)" if args.tls else ""), flush=True)

    if args.tls:
        from workloads.tls import server_context

        serve(args.host, args.port, ready, tls=server_context())
    else:
        serve(args.host, args.port, ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
