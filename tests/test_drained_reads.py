"""Reads after a drained socket: the coroutine loops wait first instead of failing with EAGAIN.

traps, futures and roundrobin try socket calls optimistically. On a request/response connection
the recv after our reply would fail with EAGAIN: a syscall and an exception per request (the
cost anatomy in reports/bench.md counted one per echo request at 100 connections). Each of these
loops calls a socket drained when a try found nothing, and its recvs then wait for readiness
first, but for one in ``TRY_FIRST_EVERY``, which tries first and ends the rule if it finds data;
these tests pin that, and that it stays a per-socket, optimistic-by-default decision.
"""

from __future__ import annotations

import importlib
import socket

import pytest

import loops

pytestmark = pytest.mark.timeout(20)

LOOPS = ["traps", "futures", "roundrobin"]


class CountingSocket(socket.socket):
    """A socket that counts its recv calls, and those that failed with EAGAIN."""

    calls = 0
    failed = 0

    def recv(self, n, *flags):
        self.calls += 1
        try:
            return super().recv(n, *flags)
        except BlockingIOError:
            self.failed += 1
            raise


def _pair() -> tuple[socket.socket, CountingSocket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    server = CountingSocket(fileno=b.detach())
    server.setblocking(False)
    return a, server


@pytest.mark.parametrize("name", LOOPS)
def test_a_recv_that_fills_its_buffer_stays_optimistic(name):
    co = loops.get(name).coroutines

    async def main():
        client, server = _pair()
        with client, server:
            client.send(b"x" * 30)
            reads = [await co.recv(server, 10) for _ in range(3)]  # each fills its buffer
            client.send(b"y" * 10)
            reads.append(await co.recv(server, 10))  # data already there: no wait, no failure
            return reads, server.calls, server.failed

    assert co.run(main()) == ([b"x" * 10] * 3 + [b"y" * 10], 4, 0)


@pytest.mark.parametrize("name", LOOPS)
def test_a_socket_reusing_a_drained_sockets_fd_starts_optimistic(name):
    co = loops.get(name).coroutines

    async def main():
        client, server = _pair()
        with client, server:
            await _drain(co, client, server)
            fd = server.fileno()
        client, server = _pair()  # very likely reuses the fd just closed
        with client, server:
            await co.spawn(_send_later(co, client, b"later"))
            data = await co.recv(server, 100)  # optimistic: tries first, finds nothing
            return data, server.calls, server.failed, fd in (client.fileno(), server.fileno())

    data, calls, failed, reused = co.run(main())
    if not reused:
        pytest.skip("the new socket did not reuse the fd, so the case was not exercised")
    assert (data, calls, failed) == (b"later", 2, 1)


async def _send_later(co, sock: socket.socket, data: bytes) -> None:
    await co.sleep(0.01)
    sock.send(data)


async def _drain(co, client: socket.socket, server: CountingSocket) -> None:
    """A recv that tries, finds nothing and waits for the bytes sent later: server is drained."""
    await co.spawn(_send_later(co, client, b"first"))
    await co.recv(server, 100)


@pytest.mark.parametrize("name", LOOPS)
def test_a_socket_whose_try_found_nothing_waits_first_and_tries_again_now_and_then(name):
    co = loops.get(name).coroutines
    every = _api(name).TRY_FIRST_EVERY

    async def main():
        client, server = _pair()
        with client, server:
            await _drain(co, client, server)
            assert (server.calls, server.failed) == (2, 1)
            for _ in range(every):  # each answered later: only a try first fails
                await co.spawn(_send_later(co, client, b"next"))
                await co.recv(server, 100)
            return server.calls, server.failed

    # one of the `every` recvs tried first (and failed, then waited); the others waited first
    assert co.run(main()) == (2 + every + 1, 2)


@pytest.mark.parametrize("name", LOOPS)
def test_a_drained_socket_whose_try_finds_data_is_optimistic_again(name):
    co = loops.get(name).coroutines
    every = _api(name).TRY_FIRST_EVERY

    async def main():
        client, server = _pair()
        with client, server:
            await _drain(co, client, server)
            for _ in range(every):  # data there already: one of these tries first and finds it
                client.send(b"ready")
                await co.recv(server, 100)
            failed = server.failed
            await co.spawn(_send_later(co, client, b"later"))
            await co.recv(server, 100)  # optimistic again: tries first, finds nothing
            return failed, server.failed

    assert co.run(main()) == (1, 2)


def _api(name: str):
    return importlib.import_module(f"loops.{name}.api")


def test_greenlets_waits_first_once_after_a_try_that_found_nothing():
    """The blocking-style twin of the rule: one wait first after a try that found nothing."""
    co = loops.get("greenlets").blocking

    def main():
        client, server = _pair()
        with client, server:

            def send_later(data: bytes) -> None:
                co.sleep(0.01)
                client.send(data)

            counts = []
            for data in (b"first", b"second", b"third"):
                co.spawn(send_later, data)
                assert co.recv(server, 100) == data
                counts.append((server.calls, server.failed))
            return counts

    # tries and fails, then waits (2 calls); waits first (1 call); tries and fails again (2)
    assert co.run(main) == [(2, 1), (3, 1), (5, 2)]
