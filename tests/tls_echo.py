"""A TLS echo server on stdlib asyncio, in its own process, for the load generator's TLS tests.

    python -m tests.tls_echo [--flip-after BYTES]

It makes a self-signed certificate at start (trustme), as the echo workload's ``--tls`` does,
and echoes every connection faithfully, except with ``--flip-after``: the first connection
accepted flips one bit of the byte it echoes after that many (a corrupting server behind
TLS, which the generator must catch). It prints ``listening on 127.0.0.1:PORT`` when ready
and runs until killed. Not a loop of the lab's: a peer the generator is tested against.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import ssl

import trustme


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    trustme.CA().issue_cert("127.0.0.1", "localhost").configure_cert(context)
    return context


async def main(flip_after: int | None) -> None:
    accepted = itertools.count()

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        echoed, flips = 0, flip_after is not None and next(accepted) == 0
        try:
            while data := await reader.read(65536):
                if flips and echoed <= flip_after < echoed + len(data):
                    at = flip_after - echoed
                    data = data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]
                echoed += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_context())
    print(f"listening on 127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m tests.tls_echo")
    parser.add_argument("--flip-after", type=int, help="corrupt the first connection's echo")
    asyncio.run(main(parser.parse_args().flip_after))
