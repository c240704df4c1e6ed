"""The roundrobin loop's own claims: fairness per tick, idle CPU near zero, and the correctness
its small size must not cost (joins, cancellation wherever a task waits, errors, timeouts).

Properties every loop shares live in conformance/; these are the ones its design claims (the
README's), checked on counts and CPU ratios rather than wall-clock bounds.
"""

import contextlib
import gc
import math
import os
import random
import selectors
import signal
import socket
import threading
import time
import types

import pytest

import loops
from loops.roundrobin import api as co
from loops.roundrobin.scheduler import running_loop


def _pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def test_it_is_discovered_and_speaks_coroutines():
    variant = loops.get("roundrobin")
    assert variant.styles == ("coroutines",)
    assert variant.coroutines is co


# -- fairness: the virtue of the idea -------------------------------------------------------


def test_every_runnable_task_is_resumed_exactly_once_per_tick():
    async def main():
        turns = []

        async def spinner(name):
            for _ in range(50):
                turns.append(name)
                await co.sleep(0)

        tasks = [await co.spawn(spinner(name)) for name in "abcde"]
        for task in tasks:
            await co.join(task)
        return turns

    # Spawning costs no tick, so all five start in the same tick; from then on every tick
    # resumes each of them exactly once, always in the order they were spawned.
    assert co.run(main()) == list("abcde") * 50


def test_a_spinning_task_delays_a_ready_reader_by_at_most_one_tick():
    async def main():
        reader_sock, writer_sock = _pair()
        spins = 0
        stop = False

        async def spinner():
            nonlocal spins
            while not stop:
                spins += 1
                await co.sleep(0)

        async def reader():
            await co.recv(reader_sock, 10)
            return spins

        spin_task = await co.spawn(spinner())
        read_task = await co.spawn(reader())
        await co.sleep(0.01)  # the reader is parked in the selector, the spinner spins
        writer_sock.send(b"x")
        sent_at = spins
        woken_at = await co.join(read_task)
        stop = True
        await co.join(spin_task)
        reader_sock.close()
        writer_sock.close()
        return woken_at - sent_at

    assert co.run(main()) <= 2


def test_a_connection_that_always_has_data_cannot_starve_another():
    """A socket call is a checkpoint (a reply in turn after its recv, `_reply_in_turn`, and a
    recv after a short read, `_drained`, aside), so a flooded reader gets one call per tick."""

    async def main():
        flooded, flood_source = _pair()
        quiet, quiet_source = _pair()
        flood_source.send(b"x" * 10_000)
        flooded_reads = 0

        async def drain_flood():
            nonlocal flooded_reads
            while await co.recv(flooded, 1):  # data is always there: the call never blocks
                flooded_reads += 1
                if flooded_reads == 10_000:
                    return

        async def read_quiet():
            return await co.recv(quiet, 10), flooded_reads

        quiet_task = await co.spawn(read_quiet())
        flood_task = await co.spawn(drain_flood())
        await co.sleep(0)
        quiet_source.send(b"hello")
        sent_at = flooded_reads
        data, read_at = await co.join(quiet_task)
        await co.join(flood_task)
        for sock in (flooded, flood_source, quiet, quiet_source):
            sock.close()
        return data, read_at - sent_at

    data, flooded_reads_meanwhile = co.run(main())
    assert data == b"hello"
    assert flooded_reads_meanwhile <= 3


def _ticks_per_step(flooded_step, sink: socket.socket, steps: int = 1_000) -> float:
    """Run flooded_step() steps times beside a task that counts ticks; ticks per step.

    The ticker also empties sink, where the steps' sends arrive, so no send ever waits.
    """

    async def main():
        ticks = 0
        done = False

        async def ticker():
            nonlocal ticks
            while not done:
                ticks += 1
                with contextlib.suppress(BlockingIOError):
                    sink.recv(65536)
                await co.sleep(0)

        ticker_task = await co.spawn(ticker())
        await co.sleep(0)  # the ticker has started
        started_at = ticks
        for _ in range(steps):
            await flooded_step()
        done = True
        await co.join(ticker_task)
        return (ticks - started_at) / steps

    return co.run(main())


def test_an_echo_that_always_has_data_takes_a_tick_per_request():
    """A reply skips its checkpoint after recv (_reply_in_turn), yet every request yields."""
    flooded, peer = _pair()
    peer.send(b"x" * 1_000)  # data is always there: no call ever waits for readiness

    async def echo_one_byte():
        await co.sendall(flooded, await co.recv(flooded, 1))

    try:
        assert _ticks_per_step(echo_one_byte, peer) >= 1
    finally:
        flooded.close()
        peer.close()


def test_a_task_that_only_sends_still_checkpoints_every_call():
    """The skipped checkpoint is recv's credit: a send with no recv before it takes a tick."""
    sender, sink = _pair()

    async def send_twice():
        await co.sendall(sender, b"y")
        await co.sendall(sender, b"y")

    try:
        assert _ticks_per_step(send_twice, sink) >= 2
    finally:
        sender.close()
        sink.close()


# -- idle: nothing runnable means blocked in the selector ---------------------------------


@pytest.mark.timeout(20)
def test_idle_loop_uses_almost_no_cpu():
    async def main():
        rng = random.Random(7)
        silent = [_pair() for _ in range(5)]  # nobody ever writes: their readers stay blocked

        async def sleeper():
            for _ in range(3):
                await co.sleep(rng.uniform(0.1, 0.3))

        readers = [await co.spawn(co.recv(sock, 1)) for sock, _ in silent]
        sleepers = [await co.spawn(sleeper()) for _ in range(200)]
        thread_nap = await co.spawn(co.run_in_thread(time.sleep, 0.5))
        for task in [*sleepers, thread_nap]:
            await co.join(task)
        for task in readers:
            assert not task.done
            await co.cancel(task)
        for pair in silent:
            for sock in pair:
                sock.close()

    # This thread's CPU, the loop's: a thread another test left in the process is not its.
    cpu, wall = time.thread_time(), time.perf_counter()
    co.run(main())
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    assert wall >= 0.5
    assert cpu < 0.1 * wall, f"{cpu:.3f} s of CPU in {wall:.3f} s of waiting"


# -- correctness the small size must not cost ---------------------------------------------


def test_join_after_the_child_has_finished_returns_its_result():
    async def main():
        async def child():
            return "early"

        task = await co.spawn(child())
        await co.sleep(0.01)
        assert task.done
        return await co.join(task), await co.join(task)

    assert co.run(main()) == ("early", "early")


def test_cancel_a_runnable_task_delivers_at_its_next_resume():
    async def main():
        events = []

        async def spinner():
            try:
                while True:
                    await co.sleep(0)  # always runnable: back on the list every tick
            except co.CancelledError:
                events.append("cancelled at sleep(0)")
                raise

        task = await co.spawn(spinner())
        await co.sleep(0)
        assert task.waiting is None and not task.done  # runnable, not blocked
        await co.cancel(task)
        with pytest.raises(co.CancelledError):
            await co.join(task)
        return events

    assert co.run(main()) == ["cancelled at sleep(0)"]


def test_cancel_a_task_spawned_but_not_started_means_it_never_runs():
    async def main():
        started = []

        async def child():
            started.append(True)

        task = await co.spawn(child())  # queued for the next tick
        await co.cancel(task)
        with pytest.raises(co.CancelledError):
            await co.join(task)
        return started

    assert co.run(main()) == []


def test_cancel_a_task_blocked_in_recv_frees_the_socket_for_another_reader():
    async def main():
        a, b = _pair()
        events = []

        async def reader():
            try:
                await co.recv(a, 10)
            except co.CancelledError:
                events.append("cancelled in recv")
                raise

        task = await co.spawn(reader())
        await co.sleep(0.01)
        await co.cancel(task)
        second = await co.spawn(co.recv(a, 10))
        await co.sendall(b, b"after")
        events.append(await co.join(second))
        a.close()
        b.close()
        return events

    assert co.run(main()) == ["cancelled in recv", b"after"]


def test_cancelled_sleepers_do_not_pile_up_in_the_timer_heap():
    async def main():
        heap_sizes = []
        for _ in range(20):
            tasks = [await co.spawn(co.sleep(3600)) for _ in range(300)]
            await co.sleep(0)
            for task in tasks:
                await co.cancel(task)
            heap_sizes.append(len(running_loop()._timers))
        return heap_sizes

    # asyncio's rule: compact once over 100 entries are cancelled and they are the majority.
    assert max(co.run(main())) <= 2 * 100 + 1


def test_an_exception_reaches_the_joiner_and_the_loop_goes_on():
    async def main():
        async def fails():
            await co.sleep(0.001)
            raise ValueError("boom")

        async def succeeds():
            await co.sleep(0.002)
            return "fine"

        bad, good = await co.spawn(fails()), await co.spawn(succeeds())
        with pytest.raises(ValueError, match="boom"):
            await co.join(bad)
        return await co.join(good)

    assert co.run(main()) == "fine"


def test_a_failure_nobody_joins_is_reported(capsys):
    async def main():
        async def fails():
            raise KeyError("lost")

        await co.spawn(fails())
        await co.sleep(0.01)

    co.run(main())
    gc.collect()
    err = capsys.readouterr().err
    assert "nobody joined it" in err and "KeyError: 'lost'" in err


def test_timeout_after_cancels_the_work_and_raises_the_builtin_timeout_error():
    async def main():
        events = []

        async def slow():
            try:
                await co.sleep(3600)
            finally:
                events.append("inner finally")

        with pytest.raises(TimeoutError):
            await co.timeout_after(0.01, slow())
        events.append(await co.timeout_after(5, co.sleep(0)))
        return events

    assert co.run(main()) == ["inner finally", None]


def test_cancelling_a_task_inside_timeout_after_cancels_the_inner_work():
    async def main():
        events = []

        async def inner():
            try:
                await co.sleep(3600)
            finally:
                events.append("inner finally")

        outer = await co.spawn(co.timeout_after(3600, inner()))
        await co.sleep(0.01)
        await co.cancel(outer)
        return events

    assert co.run(main()) == ["inner finally"]


def test_a_woken_queue_getter_that_is_cancelled_passes_the_item_on():
    async def main():
        queue = co.Queue()
        first = await co.spawn(queue.get())
        second = await co.spawn(queue.get())
        await co.sleep(0.01)  # both parked, first in line
        await queue.put("item")  # wakes the first getter...
        await co.cancel(first)  # ...which is cancelled before it runs
        return await co.join(second)

    assert co.run(main()) == "item"


# -- registrations: kept across the waits of an echo loop, dropped when the task moves on ----


def test_an_echo_loop_keeps_its_registration_instead_of_churning(monkeypatch):
    calls = []
    for name in ("register", "modify", "unregister"):
        original = getattr(selectors.EpollSelector, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            calls.append(_name)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(selectors.EpollSelector, name, counted)

    async def main():
        client, server = _pair()

        async def echo():
            while data := await co.recv(server, 100):
                await co.sendall(server, data)

        echoer = await co.spawn(echo())
        for _ in range(200):
            await co.sendall(client, b"ping")
            assert await co.recv(client, 100) == b"ping"
        client.shutdown(socket.SHUT_WR)
        await co.join(echoer)
        client.close()
        server.close()

    co.run(main())
    # 400 readiness waits, but each socket is registered once and dropped once; the one more
    # register is the loop's wake-up socket.
    assert calls.count("register") <= 3 and calls.count("modify") == 0


@pytest.mark.timeout(10)
def test_a_kept_registration_on_a_closed_socket_does_not_confuse_its_fd_successor():
    async def main():
        a, b = _pair()

        async def send_later(sock, data):
            await co.sleep(0.01)
            await co.sendall(sock, data)

        await co.spawn(send_later(b, b"1"))
        await co.recv(a, 1)  # waited for readiness: main now keeps a's registration
        old_fd = a.fileno()
        a.close()  # still registered with the selector, under main's name
        b.close()
        c, d = _pair()
        if c.fileno() != old_fd:
            return "fd not reused"
        reader = await co.spawn(co.recv(c, 10))  # the same fd number, a new socket
        await co.spawn(send_later(d, b"successor"))
        data = await co.join(reader)
        c.close()
        d.close()
        return data

    result = co.run(main())
    if result == "fd not reused":
        pytest.skip("the kernel did not hand the closed fd to the new socket")
    assert result == b"successor"


# -- refusals and hygiene -----------------------------------------------------------------


def test_an_awaitable_of_another_loop_is_a_clear_type_error():
    import asyncio

    async def main():
        await asyncio.sleep(0)  # yields None: not a request

    with pytest.raises(TypeError, match="not a request this loop knows"):
        co.run(main())


def test_a_malformed_request_is_refused_into_the_task_and_the_loop_goes_on():
    @types.coroutine
    def odd(request):
        yield request

    async def main():
        refused = []
        for request in (None, (), ([1],), ("teleport", 1), {"sleep": 1}):
            with pytest.raises(TypeError, match="not a request this loop knows"):
                await odd(request)
            refused.append(request)
        return len(refused)

    assert co.run(main()) == 5


def test_sleeping_forever_blocks_without_overflowing_the_selector():
    async def main():
        sleeper = await co.spawn(co.sleep(math.inf))
        # The only timer is at infinity: the loop blocks in select() until the thread is done.
        await co.run_in_thread(time.sleep, 0.01)
        await co.cancel(sleeper)
        return sleeper.done

    assert co.run(main()) is True


def test_a_blocking_socket_is_a_clear_value_error():
    async def main():
        a, b = socket.socketpair()
        with a, b:
            await co.recv(a, 1)

    with pytest.raises(ValueError, match="non-blocking"):
        co.run(main())


def test_run_inside_a_running_loop_is_a_clear_runtime_error():
    async def main():
        inner = co.sleep(0)
        with pytest.raises(RuntimeError, match="while a roundrobin loop is running"):
            co.run(inner)
        inner.close()

    co.run(main())


def test_keyboard_interrupt_escapes_run_after_finally_blocks_ran():
    events = []

    async def main():
        async def interrupter():
            await co.sleep(0.01)
            raise KeyboardInterrupt

        await co.spawn(interrupter())
        try:
            await co.sleep(3600)
        finally:
            events.append("main finally")

    with pytest.raises(KeyboardInterrupt):
        co.run(main())
    assert events == ["main finally"]
    assert co.run(co.sleep(0)) is None  # the next run() starts clean


def test_a_finally_block_that_spawns_while_an_interrupt_closes_the_tasks():
    """Closing the tasks runs their finally blocks, and one may spawn: the spawned coroutine
    is closed too, and the KeyboardInterrupt (not a changed-size error) leaves run()."""
    late = []

    async def cleanup():
        await co.sleep(0)

    async def main():
        await co.sleep(0.01)
        raise KeyboardInterrupt

    async def bystander():
        try:
            await co.sleep(3600)
        finally:
            coro = cleanup()
            late.append(coro)
            await co.spawn(coro)

    async def both():
        await co.spawn(bystander())
        await main()

    with pytest.raises(KeyboardInterrupt):
        co.run(both())
    assert len(late) == 1 and late[0].cr_frame is None  # closed, never left to the collector


@pytest.mark.timeout(10)
def test_a_signal_caught_by_another_thread_wakes_the_blocked_loop():
    async def main():
        # The C-level handler runs in the signalling thread; only the wake-up fd tells the main
        # thread, blocked in select() for an hour, to run the Python handler now. (The delay
        # only makes it likely that the loop is blocked by then; it passes either way.)
        signaller = threading.Timer(
            0.05, lambda: signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        )
        signaller.start()
        await co.sleep(3600)

    with pytest.raises(KeyboardInterrupt):
        co.run(main())


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to count fds")
def test_no_fd_is_left_open_after_runs_with_io_and_threads():
    async def main():
        a, b = _pair()
        with a, b:
            await co.sendall(a, b"x")
            await co.recv(b, 1)
        await co.run_in_thread(sum, [1, 2])

    co.run(main())  # the first run may create lasting interpreter state
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        co.run(main())
    assert len(os.listdir("/proc/self/fd")) == before
