"""The callbacks loop as asyncio's event loop (``loops.callbacks.dropin``), on real sockets.

CPython's own tests run on it in ``tests/cpython_asyncio/``; these are the lab's: unmodified
asyncio programs given the loop only through ``loop_factory``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import ssl
import sys

import pytest

from loops.callbacks.dropin import AsyncioLoop, new_event_loop

MESSAGES = [b"x" * n for n in (1, 100, 65_536, 1_000_000)]  # the last one overflows buffers


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while data := await reader.read(65_536):
        writer.write(data)
        await writer.drain()
    writer.close()
    await writer.wait_closed()


async def echo_roundtrips(server_tls=None, client_tls=None) -> list[int]:
    """A streams echo server and client over loopback (over TLS with both contexts); the
    lengths that came back."""
    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_tls)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_tls)
    lengths = []
    for message in MESSAGES:
        writer.write(message)
        await writer.drain()
        assert await reader.readexactly(len(message)) == message
        lengths.append(len(message))
    if client_tls is None:  # TLS has no half-close in asyncio: its write_eof() raises
        writer.write_eof()
        assert await reader.read() == b""
    writer.close()
    await writer.wait_closed()
    server.close()
    await server.wait_closed()
    assert type(asyncio.get_running_loop()) is AsyncioLoop
    return lengths


def run(program):
    if sys.version_info >= (3, 12):
        return asyncio.run(program, loop_factory=new_event_loop)
    with asyncio.Runner(loop_factory=new_event_loop) as runner:  # loop_factory in run(): 3.12
        return runner.run(program)


def test_asyncio_run_streams_echo_on_the_callbacks_loop():
    assert run(echo_roundtrips()) == [len(m) for m in MESSAGES]


def tls_contexts():
    """A server context with CPython's test certificate, and a client that trusts it."""
    utils = pytest.importorskip("test.test_asyncio.utils", reason="CPython's test package")
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(utils.ONLYCERT, utils.ONLYKEY)
    client = ssl.create_default_context(cafile=utils.ONLYCERT)
    client.check_hostname = False  # the test certificate names "localhost", we dial 127.0.0.1
    return server, client


def test_streams_echo_over_tls_and_a_refused_handshake_leaves_the_server_serving():
    server_tls, client_tls = tls_contexts()
    assert run(echo_roundtrips(server_tls, client_tls)) == [len(m) for m in MESSAGES]

    async def stranger_then_friend() -> bytes:
        server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=server_tls)
        port = server.sockets[0].getsockname()[1]
        with pytest.raises(ssl.SSLCertVerificationError):  # trusts no one: the handshake fails
            await asyncio.open_connection("127.0.0.1", port, ssl=ssl.create_default_context())
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_tls)
        writer.write(b"still here")
        answer = await reader.readexactly(10)
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
        return answer

    assert run(asyncio.wait_for(stranger_then_friend(), 20)) == b"still here"


def test_runner_runs_tasks_threads_timeouts_and_async_generators():
    async def ticks():
        for i in range(3):
            yield i
            await asyncio.sleep(0)

    async def main():
        loop = asyncio.get_running_loop()
        tasks = [asyncio.create_task(asyncio.sleep(0.01, i)) for i in range(10)]
        in_thread = await loop.run_in_executor(None, sum, [1, 2, 3])
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.01):
                await asyncio.sleep(10)
        gathered = await asyncio.gather(*tasks)
        return gathered, in_thread, [i async for i in ticks()]

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        assert runner.run(main()) == (list(range(10)), 6, [0, 1, 2])
        loop = runner.get_loop()
        assert not loop.is_running()
    assert loop.is_closed()


def test_datagram_endpoint_echoes():
    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, transport):
            self.transport = transport

        def datagram_received(self, data, addr):
            self.transport.sendto(data.upper(), addr)

    class Client(asyncio.DatagramProtocol):
        def __init__(self, done):
            self.done = done

        def datagram_received(self, data, addr):
            self.done.set_result(data)

    async def main():
        loop = asyncio.get_running_loop()
        server, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        done = loop.create_future()
        client, _ = await loop.create_datagram_endpoint(
            lambda: Client(done), remote_addr=server.get_extra_info("sockname")
        )
        client.sendto(b"ping")
        reply = await asyncio.wait_for(done, 5)
        client.close()
        server.close()
        return reply

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        assert runner.run(main()) == b"PING"


def test_signal_handler_runs_on_the_loop():
    async def main():
        loop = asyncio.get_running_loop()
        got = loop.create_future()
        loop.add_signal_handler(signal.SIGUSR1, got.set_result, "usr1")
        os.kill(os.getpid(), signal.SIGUSR1)
        result = await asyncio.wait_for(got, 5)
        assert loop.remove_signal_handler(signal.SIGUSR1)
        return result

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        assert runner.run(main()) == "usr1"
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


def test_write_flow_control_pauses_and_resumes_the_protocol():
    """A peer that does not read: the transport buffers past the high-water mark, pauses the
    protocol, and resumes it once the peer reads."""
    events = []

    class Writer(asyncio.Protocol):
        def pause_writing(self):
            events.append("pause")

        def resume_writing(self):
            events.append("resume")

    async def main():
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        transport, _ = await loop.connect_accepted_socket(Writer, ours)
        transport.set_write_buffer_limits(high=64 * 1024)
        transport.write(b"x" * 4_000_000)
        assert events == ["pause"] and transport.get_write_buffer_size() > 0
        while transport.get_write_buffer_size():
            await loop.sock_recv(theirs, 1_000_000)
        transport.close()
        theirs.close()

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        runner.run(main())
    assert events == ["pause", "resume"]


def test_a_subprocess_talks_through_its_pipes_and_exits():
    async def main():
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; sys.stdout.write(sys.stdin.read().upper()); sys.exit(3)",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        out, _ = await child.communicate(b"hello")
        return out, child.returncode

    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        assert runner.run(main()) == (b"HELLO", 3)
