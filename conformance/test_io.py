"""I/O: readiness and socket calls on non-blocking sockets."""

import socket

from conformance.harness import prop

MESSAGE = b"hello, loop" * 100


def _pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


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
