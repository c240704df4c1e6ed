"""The handlers loop's own idiom, beyond the contract: application handlers (Cookbook 11.12).

The contract's add_reader/add_writer are played by the conformance suite; these tests cover
``Loop.add_handler``/``remove_handler``, where a handler's own state answers what it wants.
Real sockets, a real select().
"""

from __future__ import annotations

import socket

import pytest

import loops


@pytest.fixture
def loop():
    loop = loops.get("handlers").callbacks()
    yield loop
    loop.close()


class Echo:
    """An application handler: wants to send while its buffer holds bytes, else to receive."""

    def __init__(self, sock):
        self.sock, self.outgoing, self.turns = sock, b"", []

    def fileno(self):
        return self.sock.fileno()

    def wants_to_receive(self):
        return not self.outgoing

    def wants_to_send(self):
        return bool(self.outgoing)

    def handle_receive(self):
        self.outgoing = self.sock.recv(100)
        self.turns.append(("received", self.outgoing))

    def handle_send(self):
        sent = self.sock.send(self.outgoing)
        self.turns.append(("sent", self.outgoing[:sent]))
        self.outgoing = self.outgoing[sent:]


def pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.settimeout(5)
    return a, b


def run_turns(loop, n):
    for _ in range(n):
        loop.call_soon(loop.stop)
        loop.run_forever()


def test_a_handlers_own_state_decides_what_the_loop_waits_for(loop):
    a, b = pair()
    with a, b:
        echo = Echo(a)
        loop.add_handler(echo)
        b.sendall(b"ping")
        run_turns(loop, 1)
        b.sendall(b"pong")  # readable now, but the handler holds "ping": it must not receive
        run_turns(loop, 3)
        assert b.recv(8, socket.MSG_WAITALL) == b"pingpong"  # nothing lost, in order
        assert echo.turns == [
            ("received", b"ping"),
            ("sent", b"ping"),
            ("received", b"pong"),
            ("sent", b"pong"),
        ]
        assert loop.remove_handler(echo) is True
        assert loop.remove_handler(echo) is False


def test_an_fd_held_by_an_application_handler_refuses_add_reader_and_a_second_handler(loop):
    a, b = pair()
    with a, b:
        loop.add_handler(Echo(a))
        with pytest.raises(RuntimeError, match="remove_handler"):
            loop.add_reader(a, print)
        with pytest.raises(RuntimeError, match="already watched"):
            loop.add_handler(Echo(a))


def test_a_failing_handler_goes_to_the_exception_handler_and_the_loop_goes_on(loop):
    a, b = pair()
    seen = []
    with a, b:

        class Broken(Echo):
            def handle_receive(self):
                raise ValueError("broken handler")

        broken = Broken(a)
        loop.add_handler(broken)
        loop.set_exception_handler(lambda loop, context: seen.append(context))
        b.sendall(b"x")
        run_turns(loop, 1)
        loop.remove_handler(broken)
    assert [type(c["exception"]) for c in seen] == [ValueError]
    assert seen[0]["handler"] is broken


def test_remove_handler_finds_a_handler_whose_socket_is_closed(loop):
    a, b = pair()
    echo = Echo(a)
    loop.add_handler(echo)
    a.close()  # fileno() is -1 now: found by identity
    assert loop.remove_handler(echo) is True
    b.close()
    run_turns(loop, 1)  # nothing left to select on but the wake-up handler


def test_a_loop_made_while_a_thousand_fds_are_open_refuses_clearly_and_leaks_nothing():
    """Its own wake-up socket would land past select()'s ceiling: say so at creation.

    It once took the socket without the check every other registration has, and the first
    run failed inside select() with "filedescriptor out of range", naming nothing.
    """
    import os
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"the hard open-file limit ({hard}) is below what this needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = []
    try:
        while not held or held[-1] < 1030:
            held.append(os.open(os.devnull, os.O_RDONLY))
        before = len(os.listdir("/proc/self/fd"))
        with pytest.raises(ValueError, match="beyond select\\(\\)'s ceiling"):
            loops.get("handlers").callbacks()
        assert len(os.listdir("/proc/self/fd")) == before  # its socketpair is closed again
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
