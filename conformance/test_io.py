"""I/O: readiness and socket calls on non-blocking sockets, over real loopback sockets.

What the upstream tests check: asyncio's test_selector_events and test_sock_lowlevel (add/remove
reader and writer return values, sock_recv/sock_sendall of large payloads, sock_connect to a
refused port, sock_accept, the refusal of a blocking socket), uvloop's tests/test_sockets.py
(the same through libuv), trio's test_socket.py and curio's test_socket.py (EOF, cancelled
receives, UDP).
"""

import errno
import hashlib
import random
import socket

from conformance.harness import prop
from conformance.support import (
    SAFETY,
    closed_port,
    drain,
    fill_send_buffer,
    listener,
    nonblocking_pair,
    nonblocking_socket,
)

MESSAGE = b"hello, loop" * 100


def _pair():
    return nonblocking_pair()


@prop("io")
def test_echo_over_a_socketpair(play):
    assert play() == MESSAGE


@test_echo_over_a_socketpair.callbacks
def _(loop):
    client, server = _pair()
    received = bytearray()

    def on_server_readable():
        data = server.recv(65536)
        if data:
            server.sendall(data)  # small message: the socket buffer takes it whole

    def on_client_readable():
        received.extend(client.recv(65536))
        if len(received) >= len(MESSAGE):
            loop.stop()

    loop.add_reader(server, on_server_readable)
    loop.add_reader(client, on_client_readable)
    client.sendall(MESSAGE)
    try:
        loop.run_forever()
    finally:
        loop.remove_reader(server)
        loop.remove_reader(client)
        client.close()
        server.close()
    return bytes(received)


@test_echo_over_a_socketpair.generators
def _(co):
    client, server = _pair()

    def echo():
        data = yield from co.recv(server, 65536)
        yield from co.sendall(server, data)

    with client, server:
        task = yield from co.spawn(echo())
        yield from co.sendall(client, MESSAGE)
        received = b""
        while len(received) < len(MESSAGE):
            received += yield from co.recv(client, 65536)
        yield from co.join(task)
    return received


@test_echo_over_a_socketpair.coroutines
async def _(co):
    client, server = _pair()

    async def echo():
        data = await co.recv(server, 65536)
        await co.sendall(server, data)

    with client, server:
        task = await co.spawn(echo())
        await co.sendall(client, MESSAGE)
        received = b""
        while len(received) < len(MESSAGE):
            received += await co.recv(client, 65536)
        await co.join(task)
    return received


@test_echo_over_a_socketpair.blocking
def _(co):
    client, server = _pair()

    def echo():
        data = co.recv(server, 65536)
        co.sendall(server, data)

    with client, server:
        task = co.spawn(echo)
        co.sendall(client, MESSAGE)
        received = b""
        while len(received) < len(MESSAGE):
            received += co.recv(client, 65536)
        co.join(task)
    return received


READINESS = ["sent", "readable", "drained", "writable"]


@prop("io")
def test_readers_and_writers_fire_on_readiness_only(play):
    # The reader fires after data arrives, not before; the writer of a full socket only after
    # the peer drained it.
    assert play() == READINESS


@test_readers_and_writers_fire_on_readiness_only.callbacks
def _(loop):
    a, b = _pair()
    events = []

    def on_readable():
        events.append("readable")
        a.recv(1)
        loop.remove_reader(a)
        fill_send_buffer(a)
        loop.add_writer(a, on_writable)
        loop.call_later(0.02, lambda: (events.append("drained"), drain(b)))

    def on_writable():
        events.append("writable")
        loop.remove_writer(a)
        loop.stop()

    loop.add_reader(a, on_readable)
    loop.call_later(0.02, lambda: (events.append("sent"), b.send(b"x")))
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    loop.remove_reader(a)
    loop.remove_writer(a)
    a.close()
    b.close()
    return events


@test_readers_and_writers_fire_on_readiness_only.generators
def _(co):
    a, b = _pair()
    events = []

    def reader_then_writer():
        yield from co.recv(a, 1)
        events.append("readable")
        fill_send_buffer(a)
        yield from co.sendall(a, b"y")
        events.append("writable")

    with a, b:
        task = yield from co.spawn(reader_then_writer())
        yield from co.sleep(0.02)
        events.append("sent")
        b.send(b"x")
        yield from co.sleep(0.02)
        events.append("drained")
        drain(b)
        yield from co.join(task)
    return events


@test_readers_and_writers_fire_on_readiness_only.coroutines
async def _(co):
    a, b = _pair()
    events = []

    async def reader_then_writer():
        await co.recv(a, 1)
        events.append("readable")
        fill_send_buffer(a)
        await co.sendall(a, b"y")
        events.append("writable")

    with a, b:
        task = await co.spawn(reader_then_writer())
        await co.sleep(0.02)
        events.append("sent")
        b.send(b"x")
        await co.sleep(0.02)
        events.append("drained")
        drain(b)
        await co.join(task)
    return events


@test_readers_and_writers_fire_on_readiness_only.blocking
def _(co):
    a, b = _pair()
    events = []

    def reader_then_writer():
        co.recv(a, 1)
        events.append("readable")
        a.setblocking(False)  # the variant may have changed its mode: fill it without blocking
        fill_send_buffer(a)
        co.sendall(a, b"y")
        events.append("writable")

    with a, b:
        task = co.spawn(reader_then_writer)
        co.sleep(0.02)
        events.append("sent")
        b.send(b"x")
        co.sleep(0.02)
        events.append("drained")
        drain(b)
        co.join(task)
    return events


@prop("io")
def test_spurious_wakeups_are_tolerated(play):
    # Two fds for one socket (dup): one byte wakes both watchers, only one gets it; the other
    # must go back to waiting, not fail or give up, and gets the second byte.
    assert play() == [b"1", b"2"]


@test_spurious_wakeups_are_tolerated.callbacks
def _(loop):
    a, b = _pair()
    a2 = a.dup()
    got = []

    def on_readable(sock):
        try:
            data = sock.recv(1)
        except BlockingIOError:
            return  # the spurious wake-up: the other watcher took the byte
        got.append(data)
        if len(got) == 1:
            loop.call_later(0.01, b.send, b"2")
        else:
            loop.stop()

    loop.add_reader(a, on_readable, a)
    loop.add_reader(a2, on_readable, a2)
    b.send(b"1")
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    loop.remove_reader(a)
    loop.remove_reader(a2)
    for sock in (a, a2, b):
        sock.close()
    return sorted(got)


@test_spurious_wakeups_are_tolerated.generators
def _(co):
    a, b = _pair()
    a2 = a.dup()
    got = []

    def reader(sock):
        got.append((yield from co.recv(sock, 1)))

    with a, a2, b:
        tasks = [(yield from co.spawn(reader(a))), (yield from co.spawn(reader(a2)))]
        yield from co.sleep(0.01)  # both readers block (if not, the property must still hold)
        b.send(b"1")
        yield from co.sleep(0.01)
        b.send(b"2")
        for task in tasks:
            yield from co.join(task)
    return sorted(got)


@test_spurious_wakeups_are_tolerated.coroutines
async def _(co):
    a, b = _pair()
    a2 = a.dup()
    got = []

    async def reader(sock):
        got.append(await co.recv(sock, 1))

    with a, a2, b:
        tasks = [await co.spawn(reader(a)), await co.spawn(reader(a2))]
        await co.sleep(0.01)  # both readers block (if not, the property must still hold)
        b.send(b"1")
        await co.sleep(0.01)
        b.send(b"2")
        for task in tasks:
            await co.join(task)
    return sorted(got)


@test_spurious_wakeups_are_tolerated.blocking
def _(co):
    a, b = _pair()
    a2 = a.dup()
    got = []

    def reader(sock):
        got.append(co.recv(sock, 1))

    with a, a2, b:
        tasks = [co.spawn(reader, a), co.spawn(reader, a2)]
        co.sleep(0.01)  # both readers block (if not, the property must still hold)
        b.send(b"1")
        co.sleep(0.01)
        b.send(b"2")
        for task in tasks:
            co.join(task)
    return sorted(got)


@prop("io")
def test_remove_reader_and_writer_return_true_once_then_false(play):
    # reader: removed, removed again; writer: the same; an fd never added.
    assert play() == [True, False, True, False, False]


@test_remove_reader_and_writer_return_true_once_then_false.callbacks
def _(loop):
    a, b = _pair()
    with a, b:
        loop.add_reader(a, print)
        loop.add_writer(a, print)
        results = [loop.remove_reader(a), loop.remove_reader(a)]
        results += [loop.remove_writer(a), loop.remove_writer(a), loop.remove_reader(b)]
    return results


BIG = random.Random(16).randbytes(16 * 2**20)


@prop("io", timeout=30)
def test_sixteen_mib_cross_a_socketpair_intact(play):
    # Through partial writes and small reads: every byte, in order (length and SHA-256).
    assert play() == (len(BIG), hashlib.sha256(BIG).hexdigest())


@test_sixteen_mib_cross_a_socketpair_intact.callbacks
def _(loop):
    sender, receiver = _pair()
    view = memoryview(BIG)
    digest = hashlib.sha256()
    received = 0

    def on_writable():
        nonlocal view
        try:
            view = view[sender.send(view[: 1 << 20]) :]
        except BlockingIOError:
            return
        if not view:
            loop.remove_writer(sender)
            sender.shutdown(socket.SHUT_WR)

    def on_readable():
        nonlocal received
        try:
            data = receiver.recv(65536)
        except BlockingIOError:
            return
        digest.update(data)
        received += len(data)
        if not data:
            loop.stop()

    loop.add_writer(sender, on_writable)
    loop.add_reader(receiver, on_readable)
    guard = loop.call_later(SAFETY * 4, loop.stop)
    loop.run_forever()
    guard.cancel()
    loop.remove_writer(sender)
    loop.remove_reader(receiver)
    sender.close()
    receiver.close()
    return received, digest.hexdigest()


@test_sixteen_mib_cross_a_socketpair_intact.generators
def _(co):
    sender, receiver = _pair()

    def send():
        yield from co.sendall(sender, BIG)
        sender.shutdown(socket.SHUT_WR)

    with sender, receiver:
        task = yield from co.spawn(send())
        digest, received = hashlib.sha256(), 0
        while data := (yield from co.recv(receiver, 65536)):
            digest.update(data)
            received += len(data)
        yield from co.join(task)
    return received, digest.hexdigest()


@test_sixteen_mib_cross_a_socketpair_intact.coroutines
async def _(co):
    sender, receiver = _pair()

    async def send():
        await co.sendall(sender, BIG)
        sender.shutdown(socket.SHUT_WR)

    with sender, receiver:
        task = await co.spawn(send())
        digest, received = hashlib.sha256(), 0
        while data := await co.recv(receiver, 65536):
            digest.update(data)
            received += len(data)
        await co.join(task)
    return received, digest.hexdigest()


@test_sixteen_mib_cross_a_socketpair_intact.blocking
def _(co):
    sender, receiver = _pair()

    def send():
        co.sendall(sender, BIG)
        sender.shutdown(socket.SHUT_WR)

    with sender, receiver:
        task = co.spawn(send)
        digest, received = hashlib.sha256(), 0
        while data := co.recv(receiver, 65536):
            digest.update(data)
            received += len(data)
        co.join(task)
    return received, digest.hexdigest()


CONNECTIONS = 64


@prop("io", timeout=30)
def test_a_listener_accepts_many_connections(play):
    assert play() == list(range(CONNECTIONS))


@test_a_listener_accepts_many_connections.callbacks
def _(loop):
    server = listener()
    address = server.getsockname()
    got = []
    open_socks = []

    def on_acceptable():
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return
        conn.setblocking(False)
        open_socks.append(conn)
        loop.add_reader(conn, on_message, conn, bytearray())

    def on_message(conn, buffer):
        data = conn.recv(64)
        buffer.extend(data)
        if not data:
            loop.remove_reader(conn)
            got.append(int(buffer))
            if len(got) == CONNECTIONS:
                loop.stop()

    def connect(i):
        client = nonblocking_socket()
        open_socks.append(client)
        if client.connect_ex(address) == 0:
            on_connected(client, i)
        else:
            loop.add_writer(client, on_connected, client, i)

    def on_connected(client, i):
        loop.remove_writer(client)
        client.send(str(i).encode())
        client.shutdown(socket.SHUT_WR)

    loop.add_reader(server, on_acceptable)
    for i in range(CONNECTIONS):
        loop.call_soon(connect, i)
    guard = loop.call_later(SAFETY * 2, loop.stop)
    loop.run_forever()
    guard.cancel()
    loop.remove_reader(server)
    for sock in [server, *open_socks]:
        loop.remove_reader(sock)
        sock.close()
    return sorted(got)


@test_a_listener_accepts_many_connections.generators
def _(co):
    server = listener()
    got = []

    def handle(conn):
        with conn:
            buffer = b""
            while data := (yield from co.recv(conn, 64)):
                buffer += data
            got.append(int(buffer))

    def client(i):
        with nonblocking_socket() as sock:
            yield from co.connect(sock, server.getsockname())
            yield from co.sendall(sock, str(i).encode())

    with server:
        clients = []
        for i in range(CONNECTIONS):
            clients.append((yield from co.spawn(client(i))))
        handlers = []
        for _ in range(CONNECTIONS):
            conn, _address = yield from co.accept(server)
            handlers.append((yield from co.spawn(handle(conn))))
        for task in clients + handlers:
            yield from co.join(task)
    return sorted(got)


@test_a_listener_accepts_many_connections.coroutines
async def _(co):
    server = listener()
    got = []

    async def handle(conn):
        with conn:
            buffer = b""
            while data := await co.recv(conn, 64):
                buffer += data
            got.append(int(buffer))

    async def client(i):
        with nonblocking_socket() as sock:
            await co.connect(sock, server.getsockname())
            await co.sendall(sock, str(i).encode())

    with server:
        clients = [await co.spawn(client(i)) for i in range(CONNECTIONS)]
        handlers = []
        for _ in range(CONNECTIONS):
            conn, _address = await co.accept(server)
            handlers.append(await co.spawn(handle(conn)))
        for task in clients + handlers:
            await co.join(task)
    return sorted(got)


@test_a_listener_accepts_many_connections.blocking
def _(co):
    server = listener()
    got = []

    def handle(conn):
        with conn:
            buffer = b""
            while data := co.recv(conn, 64):
                buffer += data
            got.append(int(buffer))

    def client(i):
        with nonblocking_socket() as sock:
            co.connect(sock, server.getsockname())
            co.sendall(sock, str(i).encode())

    with server:
        clients = [co.spawn(client, i) for i in range(CONNECTIONS)]
        handlers = []
        for _ in range(CONNECTIONS):
            conn, _address = co.accept(server)
            handlers.append(co.spawn(handle, conn))
        for task in clients + handlers:
            co.join(task)
    return sorted(got)


@prop("io")
def test_connecting_to_a_closed_port_raises_connection_refused(play):
    assert play() == "ConnectionRefusedError"


@test_connecting_to_a_closed_port_raises_connection_refused.callbacks
def _(loop):
    sock = nonblocking_socket()
    verdict = []

    def on_writable():
        loop.remove_writer(sock)
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        verdict.append(type(OSError(error, "connect")).__name__ if error else "connected")
        loop.stop()

    with sock:
        error = sock.connect_ex(("127.0.0.1", closed_port()))
        if error in (0, errno.EINPROGRESS):  # the loop reports the outcome
            loop.add_writer(sock, on_writable)
            guard = loop.call_later(SAFETY, loop.stop)
            loop.run_forever()
            guard.cancel()
            loop.remove_writer(sock)
        else:
            verdict.append(type(OSError(error, "connect")).__name__)
    return verdict[0] if verdict else "no outcome"


@test_connecting_to_a_closed_port_raises_connection_refused.generators
def _(co):
    with nonblocking_socket() as sock:
        try:
            yield from co.connect(sock, ("127.0.0.1", closed_port()))
        except OSError as error:
            return type(error).__name__
    return "connected"


@test_connecting_to_a_closed_port_raises_connection_refused.coroutines
async def _(co):
    with nonblocking_socket() as sock:
        try:
            await co.connect(sock, ("127.0.0.1", closed_port()))
        except OSError as error:
            return type(error).__name__
    return "connected"


@test_connecting_to_a_closed_port_raises_connection_refused.blocking
def _(co):
    with nonblocking_socket() as sock:
        try:
            co.connect(sock, ("127.0.0.1", closed_port()))
        except OSError as error:
            return type(error).__name__
    return "connected"


@prop("io")
def test_recv_returns_empty_bytes_at_eof(play):
    assert play() == [b"last words", b""]


@test_recv_returns_empty_bytes_at_eof.callbacks
def _(loop):
    a, b = _pair()
    got = []

    def on_readable():
        data = a.recv(100)
        got.append(data)
        if not data:
            loop.remove_reader(a)
            loop.stop()

    loop.add_reader(a, on_readable)
    loop.call_later(0.01, lambda: (b.send(b"last words"), b.close()))
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    loop.remove_reader(a)
    a.close()
    b.close()
    return got


@test_recv_returns_empty_bytes_at_eof.generators
def _(co):
    a, b = _pair()
    got = []

    def reader():
        while True:
            got.append((yield from co.recv(a, 100)))
            if not got[-1]:
                return

    with a:
        task = yield from co.spawn(reader())
        yield from co.sleep(0.01)  # the reader is blocked when the peer speaks and hangs up
        b.send(b"last words")
        b.close()
        yield from co.join(task)
    return got


@test_recv_returns_empty_bytes_at_eof.coroutines
async def _(co):
    a, b = _pair()
    got = []

    async def reader():
        while True:
            got.append(await co.recv(a, 100))
            if not got[-1]:
                return

    with a:
        task = await co.spawn(reader())
        await co.sleep(0.01)  # the reader is blocked when the peer speaks and hangs up
        b.send(b"last words")
        b.close()
        await co.join(task)
    return got


@test_recv_returns_empty_bytes_at_eof.blocking
def _(co):
    a, b = _pair()
    got = []

    def reader():
        while True:
            got.append(co.recv(a, 100))
            if not got[-1]:
                return

    with a:
        task = co.spawn(reader)
        co.sleep(0.01)  # the reader is blocked when the peer speaks and hangs up
        b.send(b"last words")
        b.close()
        co.join(task)
    return got


@prop("io")
def test_a_blocking_socket_is_a_clear_value_error(play):
    # For every socket call; the message says what to do.
    assert play() == [("ValueError", True)] * 3


def _refusal(error):
    return type(error).__name__, "non-blocking" in str(error)


@test_a_blocking_socket_is_a_clear_value_error.generators
def _(co):
    a, b = socket.socketpair()  # blocking, as sockets are by default
    results = []
    with a, b:
        for call in (lambda: co.recv(a, 1), lambda: co.sendall(a, b"x"), lambda: co.accept(a)):
            try:
                yield from call()
            except Exception as error:
                results.append(_refusal(error))
            else:
                results.append(("accepted", False))
    return results


@test_a_blocking_socket_is_a_clear_value_error.coroutines
async def _(co):
    a, b = socket.socketpair()  # blocking, as sockets are by default
    results = []
    with a, b:
        for call in (lambda: co.recv(a, 1), lambda: co.sendall(a, b"x"), lambda: co.accept(a)):
            try:
                await call()
            except Exception as error:
                results.append(_refusal(error))
            else:
                results.append(("accepted", False))
    return results


@prop("io")
def test_a_cancelled_recv_lets_a_later_reader_get_the_data(play):
    assert play() == ("cancelled", b"for the second reader")


@test_a_cancelled_recv_lets_a_later_reader_get_the_data.generators
def _(co):
    a, b = _pair()
    first = []

    def reader(into):
        try:
            into.append((yield from co.recv(a, 100)))
        except co.CancelledError:
            into.append("cancelled")
            raise

    with a, b:
        task = yield from co.spawn(reader(first))
        yield from co.sleep(0.01)  # blocked in recv
        yield from co.cancel(task)
        second = []
        task = yield from co.spawn(reader(second))
        yield from co.sleep(0.01)
        b.send(b"for the second reader")
        yield from co.join(task)
    return first[0], second[0]


@test_a_cancelled_recv_lets_a_later_reader_get_the_data.coroutines
async def _(co):
    a, b = _pair()
    first = []

    async def reader(into):
        try:
            into.append(await co.recv(a, 100))
        except co.CancelledError:
            into.append("cancelled")
            raise

    with a, b:
        task = await co.spawn(reader(first))
        await co.sleep(0.01)  # blocked in recv
        await co.cancel(task)
        second = []
        task = await co.spawn(reader(second))
        await co.sleep(0.01)
        b.send(b"for the second reader")
        await co.join(task)
    return first[0], second[0]


@test_a_cancelled_recv_lets_a_later_reader_get_the_data.blocking
def _(co):
    a, b = _pair()
    first = []

    def reader(into):
        try:
            into.append(co.recv(a, 100))
        except co.CancelledError:
            into.append("cancelled")
            raise

    with a, b:
        task = co.spawn(reader, first)
        co.sleep(0.01)  # blocked in recv
        co.cancel(task)
        second = []
        task = co.spawn(reader, second)
        co.sleep(0.01)
        b.send(b"for the second reader")
        co.join(task)
    return first[0], second[0]


@prop("udp")
def test_udp_datagrams_go_both_ways(play):
    # (request, reply, each side saw the other's address)
    assert play() == (b"ping", b"pong", True)


@test_udp_datagrams_go_both_ways.callbacks
def _(loop):
    client, server = (nonblocking_socket(socket.SOCK_DGRAM) for _ in range(2))
    for sock in (client, server):
        sock.bind(("127.0.0.1", 0))
    seen = []

    def on_server_readable():
        data, address = server.recvfrom(100)
        seen.append((data, address == client.getsockname()))
        server.sendto(b"pong", address)

    def on_client_readable():
        data, address = client.recvfrom(100)
        seen.append((data, address == server.getsockname()))
        loop.stop()

    loop.add_reader(server, on_server_readable)
    loop.add_reader(client, on_client_readable)
    client.sendto(b"ping", server.getsockname())
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    for sock in (client, server):
        loop.remove_reader(sock)
        sock.close()
    (request, from_client), (reply, from_server) = seen
    return request, reply, from_client and from_server


@test_udp_datagrams_go_both_ways.generators
def _(co):
    client, server = (nonblocking_socket(socket.SOCK_DGRAM) for _ in range(2))
    for sock in (client, server):
        sock.bind(("127.0.0.1", 0))

    client_address, server_address = client.getsockname(), server.getsockname()

    def serve():
        data, address = yield from co.recvfrom(server, 100)
        yield from co.sendto(server, b"pong", address)
        return data, address == client_address

    with client, server:
        task = yield from co.spawn(serve())
        yield from co.sleep(0.001)  # the server waits before the datagram is sent
        yield from co.sendto(client, b"ping", server_address)
        reply, address = yield from co.recvfrom(client, 100)
        request, from_client = yield from co.join(task)
    return request, reply, from_client and address == server_address


@test_udp_datagrams_go_both_ways.coroutines
async def _(co):
    client, server = (nonblocking_socket(socket.SOCK_DGRAM) for _ in range(2))
    for sock in (client, server):
        sock.bind(("127.0.0.1", 0))

    client_address, server_address = client.getsockname(), server.getsockname()

    async def serve():
        data, address = await co.recvfrom(server, 100)
        await co.sendto(server, b"pong", address)
        return data, address == client_address

    with client, server:
        task = await co.spawn(serve())
        await co.sleep(0.001)  # the server waits before the datagram is sent
        await co.sendto(client, b"ping", server_address)
        reply, address = await co.recvfrom(client, 100)
        request, from_client = await co.join(task)
    return request, reply, from_client and address == server_address


@test_udp_datagrams_go_both_ways.blocking
def _(co):
    client, server = (nonblocking_socket(socket.SOCK_DGRAM) for _ in range(2))
    for sock in (client, server):
        sock.bind(("127.0.0.1", 0))

    client_address, server_address = client.getsockname(), server.getsockname()

    def serve():
        data, address = co.recvfrom(server, 100)
        co.sendto(server, b"pong", address)
        return data, address == client_address

    with client, server:
        task = co.spawn(serve)
        co.sleep(0.001)  # the server waits before the datagram is sent
        co.sendto(client, b"ping", server_address)
        reply, address = co.recvfrom(client, 100)
        request, from_client = co.join(task)
    return request, reply, from_client and address == server_address


@prop("io")
def test_the_blocking_style_takes_a_socket_in_either_mode(play):
    # The contract: a blocking-style variant puts a socket in the mode its design needs, so a
    # program need not know which variant runs it. Both ends echo, whichever mode they came in.
    assert play() == [b"from blocking", b"from non-blocking"]


@test_the_blocking_style_takes_a_socket_in_either_mode.blocking
def _(co):
    got = []
    for blocking in (True, False):
        a, b = socket.socketpair()
        a.setblocking(blocking)
        b.setblocking(not blocking)
        with a, b:
            peer = co.spawn(_echo_once, co, b)
            co.sendall(a, b"from blocking" if blocking else b"from non-blocking")
            got.append(co.recv(a, 100))
            co.join(peer)
    return got


def _echo_once(co, sock):
    co.sendall(sock, co.recv(sock, 100))
