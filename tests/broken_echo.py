"""An echo server that misbehaves on purpose, in its own process, for the load generator's tests.

    python -m tests.broken_echo MODE [--after BYTES] [--delay S]

It echoes faithfully on every connection (one thread each, plain blocking sockets, no loop of
the lab's) except the first one accepted, which after ``--after`` bytes echoed:

- ``flip``: flips one bit of the next byte it echoes (a corrupting server);
- ``extra``: echoes one byte more than it received;
- ``drop``: closes the connection without echoing what it just received (FIN);
- ``reset``: resets it (RST) without echoing;
- ``slow``: (every connection, from the start) sleeps ``--delay`` seconds before each echo,
  a server that cannot keep a rate above 1/delay per connection;
- ``costly``: (every connection) echoes faithfully but burns ``--delay`` seconds of CPU as it
  accepts a connection and again as it closes one: work a load window must leave out.

It prints ``listening on 127.0.0.1:PORT`` when ready and runs until killed.
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
import threading
import time

MODES = ("flip", "extra", "drop", "reset", "slow", "costly")


def burn(seconds: float) -> None:
    """Use `seconds` of this process's CPU (not wall time: other threads may hold the GIL)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def serve_one(conn: socket.socket, mode: str | None, after: int, delay: float) -> None:
    echoed = 0
    with conn:
        while data := conn.recv(65536):
            if mode == "costly":
                conn.sendall(data)
                continue
            if mode == "slow":
                time.sleep(delay)
            elif mode is not None and echoed + len(data) > after:
                if mode == "flip":
                    at = max(0, after - echoed)
                    data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
                elif mode == "extra":
                    data += b"!"
                elif mode == "drop":
                    return
                elif mode == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    return
                mode = None  # one fault, then faithful again (the generator must still fail)
            conn.sendall(data)
            echoed += len(data)
    if mode == "costly":
        burn(delay)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.broken_echo")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("--after", type=int, default=10_000, help="bytes echoed before the fault")
    parser.add_argument("--delay", type=float, default=0.005, help="slow: seconds per echo")
    args = parser.parse_args(argv)
    listener = socket.create_server(("127.0.0.1", 0), backlog=128)
    print(f"listening on 127.0.0.1:{listener.getsockname()[1]}", flush=True)
    first = True
    while True:
        conn, _ = listener.accept()
        if args.mode == "costly":
            burn(args.delay)
        mode = args.mode if first or args.mode in ("slow", "costly") else None
        first = False
        threading.Thread(
            target=serve_one, args=(conn, mode, args.after, args.delay), daemon=True
        ).start()


if __name__ == "__main__":
    sys.exit(main())
