"""The traps kernel's own promises, beyond the shared conformance suite.

Each test pins one thing the issue asks of this loop: join after the end returns at once,
cancelling a task that is already scheduled, cancelling an I/O wait unregisters the fd,
registrations kept across waits, optimistic I/O, lazy timer cancellation with compaction,
unknown requests rejected by name, and a clean shutdown.
"""

from __future__ import annotations

import array
import asyncio
import gc
import logging
import os
import socket
import threading
import time
import warnings

import pytest

import loops
from loops.traps import api
from loops.traps import api as co
from loops.traps.kernel import COMPACT_MIN_TIMERS, Loop, running_loop

pytestmark = pytest.mark.timeout(20)


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


class CountingPollerCalls:
    """Counts register/modify/unregister calls on the running kernel's epoll."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        kernel = running_loop()
        self._poller = kernel._io.epoll
        kernel._io.epoll = self

    def __getattr__(self, name: str):
        original = getattr(self._poller, name)
        if name not in ("register", "modify", "unregister"):
            return original

        def counted(*args):
            self.calls.append(name)
            return original(*args)

        return counted


def test_the_variant_speaks_coroutines_only():
    variant = loops.get("traps")
    assert variant.styles == ("coroutines",)
    assert variant.coroutines is co


def test_join_after_the_child_finished_returns_without_a_switch():
    async def main():
        ran = []

        async def child():
            return "result"

        async def bystander():
            ran.append("bystander")

        task = await co.spawn(child())
        await co.sleep(0)  # the child runs and finishes
        await co.spawn(bystander())  # ready now: a switch would run it
        result = await co.join(task)
        return result, ran

    assert co.run(main()) == ("result", [])


def test_join_reraises_the_childs_exception_even_after_it_finished():
    async def main():
        async def child():
            raise KeyError("boom")

        task = await co.spawn(child())
        await co.sleep(0)
        with pytest.raises(KeyError, match="boom"):
            await co.join(task)
        return "survived"

    assert co.run(main()) == "survived"


def test_cancelling_a_task_before_it_ever_ran_skips_its_body():
    async def main():
        ran = []

        async def child():
            ran.append("body")

        task = await co.spawn(child())
        await co.cancel(task)
        return ran, task.cancelled

    assert co.run(main()) == ([], True)


def test_cancelling_a_task_already_scheduled_to_run_delivers_at_its_suspension_point():
    async def main():
        events = []
        client, server = _pair()

        async def reader():
            try:
                await co.recv(server, 100)  # traps: nothing to read yet
                events.append("recv returned")
            except co.CancelledError:
                events.append("cancelled at recv")
                raise

        task = await co.spawn(reader())
        await co.sleep(0)  # the reader parks on the fd
        client.send(b"data")
        # Let the kernel see the fd ready and schedule the reader, then cancel it while it
        # sits on the ready queue behind us.
        while task.state != "ready":
            await co.sleep(0)
        await co.cancel(task)
        with client, server:
            return events, task.cancelled, server.recv(100)

    assert co.run(main()) == (["cancelled at recv"], True, b"data")


def test_cancelling_a_reader_unregisters_its_fd_and_a_later_reader_gets_the_data():
    async def main():
        client, server = _pair()
        kernel = running_loop()

        async def read():
            return await co.recv(server, 100)

        first = await co.spawn(read())
        await co.sleep(0)
        registered_while_waiting = server.fileno() in kernel._io.records
        await co.cancel(first)
        registered_after_cancel = server.fileno() in kernel._io.records
        second = await co.spawn(read())
        await co.sleep(0)
        client.send(b"for the second reader")
        with client, server:
            data = await co.join(second)
        return registered_while_waiting, registered_after_cancel, data

    assert co.run(main()) == (True, False, b"for the second reader")


def test_registrations_are_kept_across_waits_on_the_same_fd():
    rounds = 200

    async def main():
        client, server = _pair()
        counter = CountingPollerCalls()

        async def echo():
            while data := await co.recv(server, 65536):
                await co.sendall(server, data)

        with client, server:
            task = await co.spawn(echo())
            for i in range(rounds):
                message = b"%d" % i
                await co.sendall(client, message)
                assert await co.recv(client, 65536) == message
            client.shutdown(socket.SHUT_WR)
            await co.join(task)
        return counter.calls

    calls = co.run(main())
    # One registration per socket for 200 round trips, no modify/unregister churn.
    assert calls.count("register") == 2
    assert len(calls) <= 4


async def _two_optimistic_calls():
    """A recv with data waiting and a sendall that fits, beside a ready bystander: what they
    received, and whether a switch ran the bystander."""
    client, server = _pair()
    ran = []

    async def bystander():
        ran.append("bystander")

    with client, server:
        client.send(b"ready already")
        await co.spawn(bystander())  # a switch would run it
        data = await co.recv(server, 100)
        await co.sendall(server, b"fits in the buffer")  # a budget spent would yield here
        return data, ran


def test_io_is_optimistic_no_trap_when_the_call_can_complete():
    # A fresh kernel: its budget is full, no yield owed.
    assert co.run(_two_optimistic_calls()) == (b"ready already", [])


def test_the_budget_is_the_kernels_a_run_leaves_none_owed_to_the_next():
    async def nearly_spend_it():
        client, server = _pair()

        async def send_later():
            client.send(b"x" * api.FAST_CALLS_PER_TURN)

        with client, server:
            await co.spawn(send_later())
            await co.recv(server, 1)  # it waits: the count starts again, at 1 for this call
            for _ in range(api.FAST_CALLS_PER_TURN - 2):
                await co.recv(server, 1)  # each completes at once: the count rises

    co.run(nearly_spend_it())
    assert co.run(_two_optimistic_calls()) == (b"ready already", [])


def test_a_connection_that_always_has_data_cannot_starve_the_others():
    async def main():
        client, server = _pair()
        reads_before_the_other_ran = []

        async def other():
            reads_before_the_other_ran.append(reads)

        client.send(b"x" * 4096)  # every recv(server, 1) below succeeds at once
        await co.spawn(other())
        reads = 0
        with client, server:
            while not reads_before_the_other_ran:
                await co.recv(server, 1)
                reads += 1
        return reads_before_the_other_ran[0]

    assert co.run(main()) <= api.FAST_CALLS_PER_TURN


def test_sendall_sends_every_byte_of_a_buffer_of_wide_items():
    # 4-byte items: len() counts items, not bytes; the payload is far bigger than the socket
    # buffer, so sendall goes through its partial-send path and must count in bytes there.
    payload = array.array("i", range(400_000))

    async def main():
        client, server = _pair()
        with client, server:
            reader = await co.spawn(_read_exactly(server, payload.itemsize * len(payload)))
            await co.sendall(client, payload)
            return await co.join(reader)

    assert co.run(main()) == payload.tobytes()


async def _read_exactly(sock, size):
    data = bytearray()
    while len(data) < size:
        data += await co.recv(sock, 65536)
    return bytes(data)


def test_two_readers_on_one_socket_is_a_clear_error():
    async def main():
        client, server = _pair()
        with client, server:
            first = await co.spawn(co.recv(server, 10))
            await co.sleep(0)
            with pytest.raises(RuntimeError, match="already waiting to read"):
                await co.recv(server, 10)
            await co.cancel(first)
        return "ok"

    assert co.run(main()) == "ok"


def test_awaiting_an_asyncio_future_is_a_type_error_naming_it():
    async def main():
        future = asyncio.Future(loop=asyncio.new_event_loop())
        try:
            await future
        except TypeError as error:
            return str(error)
        finally:
            future.get_loop().close()

    message = co.run(main())
    assert "Future" in message and "awaited" in message


def test_a_blocking_socket_is_a_value_error():
    async def main():
        a, b = socket.socketpair()
        with a, b, pytest.raises(ValueError, match="non-blocking"):
            await co.recv(a, 1)
        return "ok"

    assert co.run(main()) == "ok"


def test_timeout_after_raises_timeout_error_and_cancels_the_inner_work():
    async def main():
        events = []

        async def slow():
            try:
                await co.sleep(10)
            finally:
                events.append("inner cleanup ran")

        with pytest.raises(TimeoutError):
            await co.timeout_after(0.01, slow())
        return events

    assert co.run(main()) == ["inner cleanup ran"]


def test_nested_timeouts_report_to_the_one_that_fired():
    async def main():
        async def inner():
            return await co.timeout_after(10, co.sleep(10))

        with pytest.raises(TimeoutError):
            await co.timeout_after(0.01, inner())
        # The inner, longer timeout is disarmed: it must not fire into later work.
        await co.sleep(0.02)
        return await co.timeout_after(0.05, _value(7))

    assert co.run(main()) == 7


async def _value(x):
    await co.sleep(0)
    return x


def test_cancelled_timers_are_compacted_so_the_heap_stays_bounded():
    n = 5 * COMPACT_MIN_TIMERS

    async def main():
        kernel = running_loop()
        peak = 0
        for _ in range(n):
            await co.timeout_after(60, _value(None))  # each leaves a cancelled timer behind
            peak = max(peak, len(kernel._timers))
        return peak

    peak = co.run(main())
    assert peak <= 2 * COMPACT_MIN_TIMERS + 2


def test_an_endless_sleep_waits_and_can_be_cancelled():
    async def main():
        sleeper = await co.spawn(co.sleep(float("inf")))
        # While main waits for a thread, the only deadline the kernel can poll with is inf.
        await co.run_in_thread(time.sleep, 0.02)
        await co.cancel(sleeper)
        return sleeper.cancelled

    assert co.run(main()) is True


def test_run_inside_a_running_loop_is_a_runtime_error():
    async def main():
        inner = _value(1)
        try:
            with pytest.raises(RuntimeError, match="running loop"):
                co.run(inner)
        finally:
            inner.close()
        return "ok"

    assert co.run(main()) == "ok"


def test_a_keyboard_interrupt_escapes_run_and_leftover_tasks_are_unwound():
    events = []

    async def main():
        async def bystander():
            try:
                await co.sleep(10)
            finally:
                events.append("bystander unwound")

        await co.spawn(bystander())
        await co.sleep(0)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        co.run(main())
    assert events == ["bystander unwound"]


def test_a_failure_nobody_joins_is_logged_when_the_kernel_closes(caplog):
    async def main():
        async def child():
            raise ValueError("lost")

        await co.spawn(child())
        await co.sleep(0)

    with caplog.at_level(logging.ERROR, logger="loops.traps.kernel"):
        co.run(main())
    assert "nobody joined" in caplog.text and "ValueError: lost" in caplog.text


def test_a_deadlock_is_a_clear_error_not_a_hang():
    async def main():
        queue = co.Queue()
        getter = await co.spawn(queue.get())  # nothing will ever be put
        await co.join(getter)

    with pytest.raises(RuntimeError, match="deadlock"):
        co.run(main())


def test_close_is_idempotent_and_run_after_close_fails():
    kernel = Loop()
    assert kernel.run(_value(3)) == 3
    kernel.close()
    kernel.close()
    coro = _value(4)
    with pytest.raises(RuntimeError, match="closed"):
        kernel.run(coro)
    coro.close()


def test_no_fd_is_left_open_after_threads_and_sockets():
    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def main():
        client, server = _pair()
        with client, server:
            await co.sendall(client, b"x")
            await co.recv(server, 1)
        return await co.run_in_thread(sum, [1, 2, 3])

    before = fds()
    assert co.run(main()) == 6
    assert fds() == before


def test_cancelling_a_task_that_waits_for_a_thread_does_not_wait_for_the_thread():
    release = threading.Event()

    async def main():
        task = await co.spawn(co.run_in_thread(release.wait, 10))
        await co.sleep(0.01)
        await co.cancel(task)
        cancelled = task.cancelled
        release.set()  # let the worker end so that close() can join it
        return cancelled

    assert co.run(main()) is True


def test_a_bounded_queue_makes_put_wait_for_room():
    async def main():
        queue = co.Queue(maxsize=1)
        events = []

        async def producer():
            for item in range(3):
                await queue.put(item)
                events.append(f"put {item}")

        task = await co.spawn(producer())
        await co.sleep(0)  # put 0 fits; put 1 waits for room
        events.append("consumer starts")
        for _ in range(3):
            events.append(f"got {await queue.get()}")
            queue.task_done()
        await co.join(task)
        await queue.join()
        return events

    assert co.run(main()) == [
        "put 0",
        "consumer starts",
        "got 0",
        "put 1",
        "got 1",
        "put 2",
        "got 2",
    ]


def test_a_nan_timeout_is_a_value_error_and_the_work_never_starts():
    async def main():
        started = []

        async def work():
            started.append(True)

        with pytest.raises(ValueError, match="nan"):
            await co.timeout_after(float("nan"), work())
        return started

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert co.run(main()) == []
        gc.collect()  # an abandoned coroutine warns "never awaited" when it is collected
    assert [str(w.message) for w in caught] == []


def test_a_getter_cancelled_after_its_wake_up_passes_it_on():
    async def main():
        queue = co.Queue()
        got = []

        async def getter(name):
            got.append((name, await queue.get()))

        first = await co.spawn(getter("first"))
        second = await co.spawn(getter("second"))
        await co.sleep(0)  # both park, first in line
        await queue.put("item")  # wakes the first getter...
        await co.cancel(first)  # ...which is cancelled before it runs
        await co.join(second)
        return got

    assert co.run(main()) == [("second", "item")]


def test_the_kernel_runs_on_poll_where_epoll_is_missing(monkeypatch):
    """Where there is no epoll, loops._poll.PollAsEpoll stands in: waits, a timed wait that
    rounds up, an fd watched both ways, and a cancelled wait that unregisters."""
    from loops._poll import PollAsEpoll
    from loops.traps import poller

    monkeypatch.setattr(poller, "new_poller", PollAsEpoll)

    async def main():
        assert type(running_loop()._io.epoll) is PollAsEpoll
        a, b = _pair()
        with a, b:

            async def answer():
                await co.sleep(0.0005)  # under a millisecond: poll's timeout must round up
                await co.sendall(a, b"ping")

            await co.spawn(answer())
            got = await co.recv(b, 10)
            reader = await co.spawn(co.recv(b, 10))
            await co.sleep(0)
            await co.sendall(b, b"pong")  # b watched both ways while the reader waits
            await co.cancel(reader)
            return got, a.recv(10), running_loop()._io.records.get(b.fileno())

    assert co.run(main()) == (b"ping", b"pong", None)
