"""The callback reactor's own promises, beyond the shared conformance suite.

White-box where the promise is about the inside (the timer heap stays bounded, one epoll
registration per fd, the poll timeout, the batch boundary); black-box elsewhere. The leak
tests use real sockets and count real fds in /proc/self/fd.
"""

from __future__ import annotations

import contextvars
import gc
import logging
import os
import select
import socket
import threading
import time
import weakref

import pytest

import loops
from loops._poll import PollAsEpoll
from loops.callbacks import readiness
from loops.callbacks.reactor import Loop

pytestmark = pytest.mark.timeout(30)

request_id = contextvars.ContextVar("request_id", default="none")


@pytest.fixture(params=["epoll", "poll"])
def poller(request, monkeypatch):
    """Every loop test runs on epoll and on the select.poll stand-in used where epoll is missing."""
    if request.param == "poll":
        monkeypatch.setattr(readiness, "new_poller", PollAsEpoll)
    return request.param


@pytest.fixture
def loop(poller):
    reactor = Loop()
    yield reactor
    reactor.close()


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def run_one_iteration(loop: Loop) -> None:
    """stop() first: run_forever then runs exactly one iteration, as asyncio's does."""
    loop.stop()
    loop.run_forever()


class RecordingPoller:
    """Stands in front of the loop's real poller and records each call made to it."""

    def __init__(self, loop: Loop, log: list) -> None:
        self.real = loop._readiness.poller
        self.log = log
        loop._readiness.poller = self

    def poll(self, timeout=-1, maxevents=-1):
        self.log.append(("poll", timeout))
        return self.real.poll(timeout, maxevents)

    def register(self, fd, mask):
        self.log.append(("register", mask))
        return self.real.register(fd, mask)

    def modify(self, fd, mask):
        self.log.append(("modify", mask))
        return self.real.modify(fd, mask)

    def unregister(self, fd):
        self.log.append(("unregister",))
        return self.real.unregister(fd)

    def close(self):
        self.real.close()

    def registration_calls(self) -> list:
        return [call for call in self.log if call[0] != "poll"]


def nonblocking_pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def noop(*args) -> None:
    pass


class Payload:
    """An argument whose lifetime a weakref can watch."""


# -- the variant ------------------------------------------------------------------------


def test_the_variant_speaks_callbacks_and_claims_its_styles_capabilities():
    variant = loops.get("callbacks")
    assert variant.styles == ("callbacks",)
    loop = variant.callbacks()
    try:
        assert isinstance(loop, loops.contract.CallbacksLoop)
    finally:
        loop.close()
    not_claimed = loops.CAPABILITIES.keys() - variant.capabilities
    # Only the capabilities about tasks, which the callbacks style has none of.
    assert not_claimed == {"tasks-scale", "timeouts", "queue"}


# -- handles ----------------------------------------------------------------------------


def test_a_callback_runs_in_the_context_captured_when_it_was_scheduled(loop):
    seen = []

    def record():
        seen.append(request_id.get())
        request_id.set("changed inside")  # must not leak into the scheduler's context

    token = request_id.set("first")
    loop.call_soon(record)
    loop.call_later(0, record)
    request_id.reset(token)
    loop.call_soon(record)
    explicit = contextvars.Context()
    explicit.run(request_id.set, "explicit")
    loop.call_soon(record, context=explicit)
    loop.call_later(0.001, loop.stop)
    loop.run_forever()
    assert seen == ["first", "none", "explicit", "first"]
    assert request_id.get() == "none"
    assert explicit[request_id] == "changed inside"


def test_cancelled_handles_and_timers_are_skipped(loop):
    ran = []
    loop.call_soon(ran.append, "kept")
    loop.call_soon(ran.append, "cancelled").cancel()
    timer = loop.call_later(0, ran.append, "cancelled timer")
    timer.cancel()
    timer.cancel()  # twice is harmless
    loop.call_later(0.001, loop.stop)
    loop.run_forever()
    assert ran == ["kept"]
    assert timer.cancelled()
    assert "cancelled" in repr(timer)


def test_cancelling_a_handle_releases_its_arguments_at_once(loop):
    payload = Payload()
    alive = weakref.ref(payload)
    timer = loop.call_later(3600, noop, payload)
    del payload
    timer.cancel()
    gc.collect()
    assert alive() is None  # although the timer is still in the heap until it is dropped


def test_timers_with_equal_deadlines_fire_in_the_order_scheduled(loop):
    fired = []
    when = loop.time() + 0.01
    for i in range(200):
        loop.call_at(when, fired.append, i)
    loop.call_at(when, loop.stop)
    loop.run_forever()
    assert fired == list(range(200))


def test_timers_never_fire_early(loop):
    lateness = []
    for delay in (0.0005, 0.002, 0.011, 0.02):
        due = loop.time() + delay
        loop.call_at(due, lambda due=due: lateness.append(loop.time() - due))
    loop.call_later(0.03, loop.stop)
    loop.run_forever()
    assert len(lateness) == 4
    assert min(lateness) >= 0


# -- timer compaction: 100 000 scheduled and cancelled timers ---------------------------


def test_100k_cancelled_timers_keep_the_heap_bounded_and_leave_nothing_behind(loop):
    fds_before = open_fds()
    rounds, per_round = 100, 1_000
    handles: list = []
    samples: list = []
    heap_sizes = []
    payload = Payload()
    payload_alive = weakref.ref(payload)

    def churn(round_number, payload):
        # Cancel the previous round's timers, schedule this round's: 1 000 live at a time.
        for handle in handles:
            handle.cancel()
        handles.clear()
        heap_sizes.append(len(loop._timers))
        if round_number == rounds:
            loop.stop()
            return
        for i in range(per_round):
            handles.append(loop.call_later(3600 + i, noop, payload))
        heap_sizes.append(len(loop._timers))
        samples.append(weakref.ref(handles[round_number % per_round]))
        loop.call_soon(churn, round_number + 1, payload)

    loop.call_soon(churn, 0, payload)
    del payload
    loop.run_forever()
    # asyncio's rule: never more than half cancelled once over 100, so with 1 000 live timers
    # the heap holds at most twice as many entries, never the 100 000 ever scheduled.
    assert per_round <= max(heap_sizes) <= 2 * per_round + 100
    run_one_iteration(loop)  # drops the cancelled timers still at the head of the heap
    assert loop._timers == []
    assert loop._cancelled_timers == 0
    gc.collect()
    assert payload_alive() is None
    assert all(sample() is None for sample in samples)
    assert len(samples) == rounds
    assert open_fds() == fds_before


def test_one_callback_cancelling_100k_timers_in_a_tight_loop_stays_bounded(loop):
    largest = 0
    for i in range(100_000):
        loop.call_later(60 + i % 7, noop).cancel()
        largest = max(largest, len(loop._timers))
    # Compaction runs at cancel time, so even without an iteration the heap never grows.
    assert largest <= 101
    run_one_iteration(loop)
    assert loop._timers == [] and loop._cancelled_timers == 0


def test_compaction_keeps_live_timers_in_order(loop):
    fired = []
    keep = []
    base = loop.time()
    for i in range(1_000):
        when = base + 0.001 + (i % 10) * 0.001
        handle = loop.call_at(when, fired.append, i)
        if i % 3:
            handle.cancel()
        else:
            keep.append((when, i))
    assert len(loop._timers) < 1_000  # compacted already
    loop.call_later(0.02, loop.stop)
    loop.run_forever()
    assert fired == [i for _, i in sorted(keep)]


# -- one iteration ----------------------------------------------------------------------


def test_poll_timeout_is_zero_with_work_ready_next_timer_otherwise_and_forever_when_idle(loop):
    log: list = []
    RecordingPoller(loop, log)
    loop.call_soon(noop)
    run_one_iteration(loop)  # stop() already called: timeout 0
    log.clear()

    loop.call_soon(noop)
    loop._run_once()
    assert log == [("poll", 0)]

    log.clear()
    loop.call_later(0.05, noop)
    loop._run_once()
    ((_, timeout),) = log
    assert 0 < timeout <= 0.05

    log.clear()
    # Nothing ready and no timer: the loop must block until another thread wakes it.
    waker = threading.Timer(0.05, loop.call_soon_threadsafe, (loop.stop,))
    waker.start()
    loop._timers.clear()
    loop.run_forever()
    waker.join()
    assert log[0] == ("poll", -1)


def test_each_iteration_runs_only_the_batch_ready_when_it_began(loop):
    log: list = []
    RecordingPoller(loop, log)

    def first():
        log.append("first")
        loop.call_soon(lambda: log.append("scheduled by first"))

    loop.call_soon(first)
    loop.call_soon(log.append, "second")
    loop.call_later(0.001, loop.stop)
    loop.run_forever()
    assert log[:5] == [("poll", 0), "first", "second", ("poll", 0), "scheduled by first"]


def test_an_idle_loop_blocks_instead_of_spinning(loop):
    loop.call_later(0.3, loop.stop)
    wall, cpu = time.perf_counter(), time.thread_time()
    loop.run_forever()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert wall >= 0.29
    assert cpu < 0.1 * wall


def test_stop_before_run_forever_still_runs_one_iteration(loop):
    ran = []
    loop.call_soon(ran.append, 1)
    loop.stop()
    loop.run_forever()
    assert ran == [1]
    assert not loop.is_running()


def runtime_errors_inside(loop: Loop, *calls) -> list[str]:
    """Make each call from a callback of the running loop; the RuntimeErrors' messages."""
    errors = []

    def inside():
        for call in calls:
            try:
                call()
            except RuntimeError as error:
                errors.append(str(error))
        loop.stop()

    loop.call_soon(inside)
    loop.run_forever()
    return errors


def test_run_forever_inside_a_running_loop_is_a_clear_error(loop):
    other = Loop()
    try:
        errors = runtime_errors_inside(loop, loop.run_forever, other.run_forever)
    finally:
        other.close()
    assert errors == [
        "This event loop is already running",
        "Cannot run the event loop while another loop is running",
    ]


# -- readiness: one registration per fd -------------------------------------------------


def test_a_reader_and_a_writer_share_one_registration_changed_by_modify(loop):
    a, b = nonblocking_pair()
    poller = RecordingPoller(loop, [])
    fired = []
    with a, b:
        b.send(b"x")  # a is readable, and writable from the start

        def on_readable():
            fired.append("read")
            a.recv(1)
            loop.remove_reader(a)

        def on_writable():
            fired.append("write")
            loop.remove_writer(a)

        loop.add_reader(a, on_readable)
        loop.add_writer(a.fileno(), on_writable)  # an int fd and the socket are one fd
        record = loop._readiness.records[a.fileno()]
        assert record.reader is not None and record.writer is not None
        run_one_iteration(loop)
        assert sorted(fired) == ["read", "write"]
        in_, out = select.POLLIN, select.POLLOUT
        assert poller.registration_calls() in (
            [("register", in_), ("modify", in_ | out), ("modify", out), ("unregister",)],
            [("register", in_), ("modify", in_ | out), ("modify", in_), ("unregister",)],
        )
        assert a.fileno() not in loop._readiness.records


def test_replacing_a_reader_cancels_the_old_handle_without_reregistering(loop):
    a, b = nonblocking_pair()
    poller = RecordingPoller(loop, [])
    fired = []
    with a, b:
        loop.add_reader(a, fired.append, "old")
        loop.add_reader(a, lambda: (fired.append("new"), a.recv(1), loop.stop()))
        b.send(b"x")
        loop.run_forever()
        assert fired == ["new"]
        assert poller.registration_calls() == [("register", select.POLLIN)]
        assert loop.remove_reader(a) is True
        assert loop.remove_reader(a) is False
        assert loop.remove_writer(a) is False


def test_removing_a_reader_cancels_a_readiness_callback_already_queued(loop):
    a, b = nonblocking_pair()
    fired = []
    with a, b:
        # Both become readable in the same poll; whichever runs first removes the other.
        loop.add_reader(a, lambda: (fired.append("a"), loop.remove_reader(b)))
        loop.add_reader(b, lambda: (fired.append("b"), loop.remove_reader(a)))
        a.send(b"y")
        b.send(b"z")
        run_one_iteration(loop)
        assert fired in (["a"], ["b"])
        assert len(loop._readiness.records) == 2  # the wake-up socket and the survivor
        assert loop.remove_reader(a) != loop.remove_reader(b)


def test_remove_reader_finds_a_socket_already_closed(loop):
    a, b = socket.socketpair()
    with b:
        loop.add_reader(a, noop)
        a.close()  # the wrong order, but common: the loop must still let go of it
        assert loop.remove_reader(a) is True
        assert set(loop._readiness.records) == {loop._wake_reader.fileno()}


def test_an_fd_closed_without_remove_and_reused_by_a_new_socket_still_works(loop):
    old, peer = socket.socketpair()
    with peer:
        fd = old.fileno()
        loop.add_reader(old, lambda: pytest.fail("the closed socket's reader ran"))
        old.close()  # without remove_reader: the kernel drops it from epoll, the loop cannot
        new, new_peer = socket.socketpair()
        with new, new_peer:
            if new.fileno() != fd:
                new, new_peer = new_peer, new
            assert new.fileno() == fd  # the kernel hands out the lowest free number
            got = []
            loop.add_writer(new, lambda: (got.append("writable"), loop.stop()))
            loop.run_forever()
            assert got == ["writable"]
            assert loop.remove_writer(new) is True
            assert loop.remove_reader(new) is False  # the old reader was dropped, not kept


def test_1000_sockets_opened_registered_and_closed_leave_no_fd_and_no_registration(poller):
    before = open_fds()
    loop = Loop()
    own_fds = open_fds() - before  # the epoll fd and the wake-up socketpair
    pairs = [nonblocking_pair() for _ in range(500)]
    remaining = [len(pairs)]

    def on_writable(a, b):
        a.send(b"ping")
        loop.remove_writer(a)

    def on_readable(a, b):
        assert b.recv(16) == b"ping"
        loop.remove_reader(b)
        loop.remove_reader(a)
        a.close()
        b.close()
        remaining[0] -= 1
        if not remaining[0]:
            loop.stop()

    try:
        for a, b in pairs:
            loop.add_reader(a, noop)  # registered for both, so the writer is a modify
            loop.add_writer(a, on_writable, a, b)
            loop.add_reader(b, on_readable, a, b)
        assert len(loop._readiness.records) == 1 + 2 * len(pairs)
        loop.run_forever()
        assert remaining == [0]
        assert open_fds() == before + own_fds
        assert set(loop._readiness.records) == {loop._wake_reader.fileno()}
    finally:
        for a, b in pairs:
            a.close()
            b.close()
        loop.close()
    assert open_fds() == before


# -- exceptions -------------------------------------------------------------------------


def failing(message):
    raise ValueError(message)


def log_of_a_failing_callback(loop, caplog) -> logging.LogRecord:
    """Run failing('boom') and a callback after it; the one error record it logged."""
    ran = []
    loop.call_soon(failing, "boom")
    loop.call_soon(ran.append, "after")
    with caplog.at_level(logging.ERROR, logger="loops.callbacks.reactor"):
        run_one_iteration(loop)
    assert ran == ["after"]  # the loop went on
    (record,) = caplog.records
    return record


def test_the_default_handler_logs_the_handle_and_the_loop_goes_on(loop, caplog):
    record = log_of_a_failing_callback(loop, caplog)
    assert "Exception in callback failing('boom') at " in record.getMessage()
    assert "handle: <Handle failing('boom')" in record.getMessage()
    assert record.exc_info[0] is ValueError


def test_a_failing_callback_that_cannot_even_be_described_is_still_reported(loop, caplog):
    class Unprintable:
        def __call__(self):
            raise ValueError("boom")

        def __repr__(self):
            raise RuntimeError("no repr either")

    ran = []
    loop.call_soon(Unprintable())
    loop.call_soon(ran.append, "after")
    with caplog.at_level(logging.ERROR, logger="loops.callbacks.reactor"):
        run_one_iteration(loop)
    assert ran == ["after"]
    (record,) = caplog.records
    assert record.exc_info[0] is ValueError


def test_a_custom_handler_gets_message_exception_and_handle(loop):
    contexts = []
    loop.set_exception_handler(lambda lp, context: contexts.append((lp, context)))
    handle = loop.call_later(0, failing, "timer boom")
    loop.call_later(0.001, loop.stop)
    loop.run_forever()
    ((seen_loop, context),) = contexts
    assert seen_loop is loop
    assert context["handle"] is handle
    assert isinstance(context["exception"], ValueError)
    assert "timer boom" in context["message"]


def test_a_broken_handler_is_logged_and_does_not_kill_the_loop(loop, caplog):
    def broken_handler(lp, context):
        raise RuntimeError("the handler itself fails")

    loop.set_exception_handler(broken_handler)
    record = log_of_a_failing_callback(loop, caplog)
    assert record.getMessage().startswith("Unhandled error in exception handler")
    assert record.exc_info[0] is RuntimeError
    loop.set_exception_handler(None)
    assert loop.get_exception_handler() is None
    with pytest.raises(TypeError):
        loop.set_exception_handler("not callable")


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_interrupts_escape_run_forever_and_leave_the_loop_usable(loop, interrupt):
    ran = []

    def interrupting():
        raise interrupt()

    loop.set_exception_handler(lambda lp, context: ran.append("handler must not see it"))
    loop.call_soon(interrupting)
    loop.call_soon(ran.append, "rest of the batch")
    with pytest.raises(interrupt):
        loop.run_forever()
    assert not loop.is_running()
    loop.call_soon(loop.stop)
    loop.run_forever()
    assert ran == ["rest of the batch"]


def test_an_interrupt_raised_by_the_handler_escapes_too(loop):
    def handler(lp, context):
        raise KeyboardInterrupt

    loop.set_exception_handler(handler)
    loop.call_soon(failing, "boom")
    with pytest.raises(KeyboardInterrupt):
        loop.run_forever()


# -- threads ----------------------------------------------------------------------------


@pytest.mark.timeout(5)
def test_call_soon_threadsafe_wakes_a_loop_blocked_with_nothing_to_do(loop):
    log: list = []
    blocking = threading.Event()

    class SignallingPoller(RecordingPoller):
        def poll(self, timeout=-1, maxevents=-1):
            if timeout == -1:
                blocking.set()  # the byte written below wakes it even if it lands first
            return super().poll(timeout, maxevents)

    SignallingPoller(loop, log)
    got = []

    def from_another_thread():
        blocking.wait()
        loop.call_soon_threadsafe(lambda: got.append(threading.get_ident()))
        loop.call_soon_threadsafe(loop.stop)

    thread = threading.Thread(target=from_another_thread)
    thread.start()
    loop.run_forever()
    thread.join()
    assert got == [threading.get_ident()]  # ran on the loop's thread
    assert ("poll", -1) in log


@pytest.mark.timeout(5)
def test_run_in_thread_calls_back_on_the_loop_with_the_finished_future(loop):
    results = []

    def on_done(future):
        results.append((threading.get_ident(), request_id.get(), future))
        if len(results) == 2:
            loop.stop()

    request_id.set("caller")
    loop.run_in_thread(lambda x: (threading.get_ident(), x * 2), 21, callback=on_done)
    loop.run_in_thread(failing, "in a thread", callback=on_done)
    request_id.set("none")
    loop.run_forever()
    loop_thread = threading.get_ident()
    assert {(thread, var) for thread, var, _ in results} == {(loop_thread, "caller")}
    futures = [future for _, _, future in results]
    (worker_thread, doubled) = next(f.result() for f in futures if f.exception() is None)
    assert doubled == 42 and worker_thread != loop_thread
    (error,) = [f.exception() for f in futures if f.exception() is not None]
    assert isinstance(error, ValueError)


def test_close_joins_worker_threads_and_releases_every_fd(poller):
    before_fds, before_threads = open_fds(), threading.active_count()
    loop = Loop()
    loop.run_in_thread(time.sleep, 0.01, callback=noop)
    assert threading.active_count() == before_threads + 1
    loop.close()
    assert threading.active_count() == before_threads
    assert open_fds() == before_fds


# -- close and bad input ----------------------------------------------------------------


def test_close_is_idempotent_and_every_call_after_it_fails(poller):
    loop = Loop()
    loop.close()
    loop.close()
    assert loop.is_closed()
    a, b = socket.socketpair()
    with a, b:
        calls = [
            lambda: loop.call_soon(noop),
            lambda: loop.call_later(1, noop),
            lambda: loop.call_at(loop.time(), noop),
            lambda: loop.call_soon_threadsafe(noop),
            lambda: loop.add_reader(a, noop),
            lambda: loop.add_writer(a, noop),
            lambda: loop.run_in_thread(noop, callback=noop),
            loop.run_forever,
        ]
        for call in calls:
            with pytest.raises(RuntimeError, match="closed"):
                call()
        assert loop.remove_reader(a) is False
        assert loop.remove_writer(a) is False


def test_close_while_running_is_refused(loop):
    assert runtime_errors_inside(loop, loop.close) == ["Cannot close a running event loop"]
    assert not loop.is_closed()


def test_bad_input_is_a_clear_error_and_schedules_nothing(loop):
    with pytest.raises(TypeError, match="callable"):
        loop.call_soon("not callable")
    with pytest.raises(TypeError, match="delay"):
        loop.call_later("soon", noop)
    with pytest.raises(TypeError, match="loop time"):
        loop.call_at(None, noop)
    with pytest.raises(ValueError, match="NaN"):
        loop.call_later(float("nan"), noop)
    with pytest.raises(TypeError, match="callable"):
        loop.add_reader(0, None)
    with pytest.raises(ValueError):
        loop.add_reader(-1, noop)
    with pytest.raises(ValueError):
        loop.add_writer("not a file", noop)
    assert not loop._ready and not loop._timers
    assert set(loop._readiness.records) == {loop._wake_reader.fileno()}
