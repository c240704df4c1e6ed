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


def run(program, loop_factory=new_event_loop):
    if sys.version_info >= (3, 12):
        return asyncio.run(program, loop_factory=loop_factory)
    with asyncio.Runner(loop_factory=loop_factory) as runner:  # loop_factory in run(): 3.12
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


def test_tls_inside_tls_echoes_as_through_an_https_proxy():
    """start_tls over a connection that already speaks TLS, on both sides: what a client does
    through an HTTPS proxy (websockets' and aiohttp's proxy support); the drop-in took only
    plain transports until websockets' suite found it."""
    server_tls, client_tls = tls_contexts()

    async def inner_echo(reader, writer):
        await writer.start_tls(server_tls)  # a second handshake, inside the first
        await echo(reader, writer)

    async def main() -> bytes:
        server = await asyncio.start_server(inner_echo, "127.0.0.1", 0, ssl=server_tls)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_tls)
        outer = writer.transport
        await writer.start_tls(client_tls)
        assert writer.transport is not outer  # the inner TLS layer's transport
        writer.write(b"twice sealed")
        answer = await reader.readexactly(12)
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()
        return answer

    assert run(asyncio.wait_for(main(), 20)) == b"twice sealed"


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


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_unix_server_on_an_abstract_path_serves(kind):
    """An abstract socket (a path starting with NUL, as str or bytes) has no file to stat or
    remove: the server binds and serves it."""
    path = f"\0lab-dropin-{os.getpid()}-{kind.__name__}"
    path = path.encode() if kind is bytes else path

    async def main():
        server = await asyncio.start_unix_server(echo, path)
        reader, writer = await asyncio.open_unix_connection(path)
        writer.write(b"abstract")
        assert await reader.readexactly(8) == b"abstract"
        writer.close()
        await writer.wait_closed()
        server.close()
        await server.wait_closed()

    run(main())


@pytest.mark.parametrize("cleanup", [True, False])
def test_a_unix_servers_socket_file_goes_on_close_unless_told_otherwise(tmp_path, cleanup):
    """cleanup_socket (3.13's parameter, honoured on every Python here): the file is removed
    when the server closes, or kept with cleanup_socket=False."""
    path = tmp_path / "lab.sock"

    async def main():
        server = await asyncio.get_running_loop().create_unix_server(
            asyncio.Protocol, path, cleanup_socket=cleanup
        )
        assert path.exists()
        server.close()
        await server.wait_closed()

    run(main())
    assert path.exists() is not cleanup


@pytest.mark.parametrize("parameter", [{"happy_eyeballs_delay": 0.05}, {"interleave": 1}])
def test_happy_eyeballs_connects_past_an_address_that_refuses(parameter):
    """With happy eyeballs asked for, an address that refuses (IPv6 ::1 on a port only IPv4
    listens on) gives way to the next, and the connection is made."""

    async def main():
        loop = asyncio.get_running_loop()
        server = await loop.create_server(asyncio.Protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        real = loop.getaddrinfo

        async def both_families(host, port, **kwargs):  # ::1 first, where nobody listens
            v4 = await real("127.0.0.1", port, **kwargs)
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)), *v4]

        loop.getaddrinfo = both_families
        try:
            transport, _ = await loop.create_connection(
                asyncio.Protocol, "localhost", port, **parameter
            )
        finally:
            del loop.getaddrinfo
        assert transport.get_extra_info("peername")[:2] == ("127.0.0.1", port)
        transport.close()
        server.close()
        await server.wait_closed()

    run(main())


def test_interleave_alternates_families_as_rfc_8305_asks():
    from loops.callbacks.connections import _interleave

    v6 = [(socket.AF_INET6, i) for i in range(3)]
    v4 = [(socket.AF_INET, i) for i in range(2)]
    assert _interleave(v6 + v4, 1) == [v6[0], v4[0], v6[1], v4[1], v6[2]]
    assert _interleave(v6 + v4, 2) == [v6[0], v6[1], v4[0], v6[2], v4[1]]


def test_cancelled_socket_calls_leave_bytes_and_connections_for_the_next_call():
    """A sock_recv or sock_accept cancelled after its socket became ready (the readiness and
    the cancel in one turn) has taken nothing: the next call gets the byte, the connection."""

    async def main():
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(f"\0lab-dropin-accept-{os.getpid()}")
        listener.listen()
        with a, b, listener:
            for sock in (b, listener):
                sock.setblocking(False)
            waits = [
                asyncio.ensure_future(loop.sock_recv(b, 1)),
                asyncio.ensure_future(loop.sock_accept(listener)),
            ]
            await asyncio.sleep(0)  # both are waiting for readiness now
            a.send(b"x")
            client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            client.connect(listener.getsockname())
            # Both become ready in the next poll, and the timer due now runs in the same turn
            # after their readiness callbacks: asyncio's order that loses them (its callbacks
            # read and accept; the cancel then discards the results).
            loop.call_at(loop.time(), lambda: [wait.cancel() for wait in waits])
            await asyncio.gather(*waits, return_exceptions=True)
            assert all(wait.cancelled() for wait in waits)
            assert await loop.sock_recv(b, 1) == b"x"
            conn, _ = await loop.sock_accept(listener)
            conn.close()
            client.close()

    run(main())


def test_a_cancelled_sock_sendall_has_sent_a_prefix_and_says_how_much():
    async def main():
        loop = asyncio.get_running_loop()
        a, b = socket.socketpair()
        with a, b:
            a.setblocking(False)
            data = bytes(range(256)) * 40_000  # more than the socket buffers hold
            sending = asyncio.ensure_future(loop.sock_sendall(a, data))
            await asyncio.sleep(0.05)
            sending.cancel()
            with pytest.raises(asyncio.CancelledError) as cancelled:
                await sending
            (note,) = cancelled.value.__notes__
            sent = int(note.split(": ")[1].split(" of ")[0])
            assert 0 < sent < len(data)
            a.close()
            received = bytearray()
            while chunk := b.recv(1 << 20):
                received += chunk
            assert bytes(received) == data[:sent]

    run(main())


def test_sendfile_sends_the_file_after_what_was_written_before(tmp_path):
    """loop.sendfile on a plain connection (os.sendfile once the buffer is flushed) and
    sock_sendfile with an offset and a count: the bytes arrive in order; the file's position
    is left after the last byte sent."""
    path = tmp_path / "data"
    path.write_bytes(os.urandom(3_000_000))

    async def main():
        loop = asyncio.get_running_loop()
        received = bytearray()
        done = loop.create_future()

        async def collect(reader, writer):
            received.extend(await reader.read())
            writer.close()
            done.set_result(None)

        server = await asyncio.start_server(collect, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"head" * 100_000)  # buffered: sendfile waits until it is out
        with path.open("rb") as file:
            assert await loop.sendfile(writer.transport, file) == 3_000_000
            assert file.tell() == 3_000_000
        writer.close()
        await done
        server.close()
        await server.wait_closed()
        assert bytes(received) == b"head" * 100_000 + path.read_bytes()

        a, b = socket.socketpair()
        with a, b, path.open("rb") as file:
            a.setblocking(False)
            assert await loop.sock_sendfile(a, file, 10, 100) == 100
            assert file.tell() == 110
            assert b.recv(200) == path.read_bytes()[10:110]

    run(main())


@pytest.mark.parametrize("value", ["1", ""])
def test_a_new_loop_takes_its_debug_mode_from_pythonasynciodebug_as_asyncios_does(
    monkeypatch, value
):
    # anyio's suite runs asyncio.run under PYTHONASYNCIODEBUG=1 and expects a loop in debug.
    monkeypatch.setenv("PYTHONASYNCIODEBUG", value)
    stock = asyncio.new_event_loop()
    loop = new_event_loop()
    try:
        assert loop.get_debug() is stock.get_debug() is (bool(value) or sys.flags.dev_mode)
    finally:
        loop.close()
        stock.close()


def test_a_batchs_last_callback_and_its_arguments_go_once_run_though_a_traceback_lives_on():
    # anyio's suite found it: an exception kept by the handler holds the loop's frame in its
    # traceback, and that frame held the batch's last handle, so the finished task (and the
    # exception group) it was called with outlived everything else; asyncio's loop lets go.
    import gc
    import weakref

    class Payload:
        pass

    kept = []
    loop = new_event_loop()
    loop.set_exception_handler(lambda loop, context: kept.append(context["exception"]))
    payload = Payload()
    gone = weakref.ref(payload)

    def fail():
        raise RuntimeError("kept by the handler, traceback and all")

    loop.call_soon(fail)
    loop.call_soon(lambda payload: loop.stop(), payload)  # the batch's last handle
    del payload
    try:
        loop.run_forever()
        gc.collect()
        assert kept and gone() is None
    finally:
        loop.close()


def test_a_replaced_asyncio_task_name_changes_the_drop_ins_tasks_as_little_as_asyncios(
    monkeypatch,
):
    # anyio's suite puts the pure-Python Task at asyncio.Task; asyncio's loop reads
    # asyncio.tasks.Task, so its tasks stay what current_task() knows (3.14 found it).
    monkeypatch.setattr(asyncio, "Task", type("Replaced", (asyncio.tasks.Task,), {}))

    async def kind() -> tuple[type, bool]:
        return type(asyncio.current_task()), asyncio.current_task() is not None

    def run(factory):
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(kind())

    assert run(new_event_loop) == run(asyncio.SelectorEventLoop) == (asyncio.tasks.Task, True)


@pytest.mark.parametrize(
    "factory", [new_event_loop, asyncio.SelectorEventLoop], ids=["drop-in", "asyncio"]
)
def test_a_replaced_clock_moves_when_timers_fire_as_on_asyncios_loop(factory):
    # aiohttp's suite replaces loop.time to make a keep-alive deadline due at once: asyncio
    # reads every deadline through self.time(), so the drop-in must too (call_later's start,
    # the wait before the next timer, the test of which timers are due).
    loop = factory()
    try:
        fired = []
        loop.call_later(3600, fired.append, "later")
        loop.call_at(loop.time() + 3600, fired.append, "at")
        jumped = loop.time() + 7200  # an hour past both deadlines
        loop.time = lambda: jumped
        loop.call_later(1, fired.append, "a second after the jump")  # not due yet
        loop.call_soon(loop.stop)
        loop.run_forever()
        assert fired == ["later", "at"]
    finally:
        loop.close()


@pytest.mark.parametrize(
    "factory", [new_event_loop, asyncio.SelectorEventLoop], ids=["drop-in", "asyncio"]
)
def test_call_at_keeps_the_deadline_it_was_given(factory):
    # aiohttp rounds its timeouts up to whole seconds and reads back the int it scheduled.
    loop = factory()
    try:
        deadline = int(loop.time()) + 10
        handle = loop.call_at(deadline, lambda: None)
        assert type(handle.when()) is int and handle.when() == deadline
        later = loop.call_at(deadline + 0.5, lambda: None)
        assert later.when() == deadline + 0.5
    finally:
        loop.close()


@pytest.mark.parametrize(
    "factory", [new_event_loop, asyncio.SelectorEventLoop], ids=["drop-in", "asyncio"]
)
def test_a_patch_on_asyncios_base_transport_reaches_the_loops_transports(factory, monkeypatch):
    # websockets' suite patches asyncio.BaseTransport.get_extra_info to fake an address;
    # asyncio's transports inherit the method, so the drop-in's must not define their own.
    async def addresses():
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        _reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname())
        real = writer.get_extra_info("peername")
        monkeypatch.setattr(asyncio.BaseTransport, "get_extra_info", lambda *a: ("faked", 1))
        faked = writer.get_extra_info("peername")
        monkeypatch.undo()
        writer.close()
        server.close()
        await server.wait_closed()
        return real, faked

    real, faked = run(addresses(), factory)
    assert real[0] == "127.0.0.1" and faked == ("faked", 1)
