"""loops/futures: what its issue asks beyond the shared conformance suite.

The Future and Task mechanics the tutorials leave sloppy (result() re-raising, callbacks only
through the ready queue, exceptions delivered with throw, cancellation at the yield from),
sockets kept registered between reads, and the loop's hygiene: no fd left open, no busy wait,
a compacted timer heap, unretrieved failures reported.
"""

import gc
import logging
import os
import selectors
import socket
import threading
import time

import pytest

import loops
from loops.futures import api as co
from loops.futures.futures import CancelledError, Future, InvalidStateError

pytestmark = pytest.mark.timeout(20)


def _pair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def test_the_variant_speaks_generators_and_coroutines_from_one_module():
    variant = loops.get("futures")
    assert variant.generators is co
    assert variant.coroutines is co
    assert variant.styles == ("generators", "coroutines")


def test_result_is_a_method_that_reraises_and_no_attribute_shadows_it():
    def main():
        yield from co.sleep(0)
        loop = co.get_running_loop()
        failed, cancelled, pending = Future(loop), Future(loop), Future(loop)
        error = ValueError("boom")
        failed.set_exception(error)
        cancelled.cancel()
        outcomes = []
        for fut in (failed, cancelled, pending):
            try:
                fut.result()
            except BaseException as caught:
                outcomes.append(caught)
        return outcomes, failed

    (from_failed, from_cancelled, from_pending), failed = co.run(main())
    assert from_failed is failed.exception()
    assert isinstance(from_cancelled, CancelledError)
    assert isinstance(from_pending, InvalidStateError)
    assert "result" not in Future.__slots__
    assert callable(failed.result)


def test_set_result_queues_callbacks_instead_of_calling_them():
    def main():
        fut = Future(co.get_running_loop())
        seen = []
        fut.add_done_callback(lambda f: seen.append(f.result()))
        fut.set_result("x")
        during = list(seen)
        yield from co.sleep(0)
        return during, seen

    during, after = co.run(main())
    assert during == []
    assert after == ["x"]


def test_a_failed_future_is_thrown_in_at_the_yield_from_and_the_generator_goes_on():
    error = KeyError("from elsewhere")

    def waiter(fut):
        try:
            yield from fut
        except KeyError as caught:
            frame = caught.__traceback__
            while frame.tb_next:
                frame = frame.tb_next
            lines = [frame.tb_frame.f_code.co_name]
            return caught, lines, (yield from co.sleep(0)) or "went on"

    def main():
        fut = Future(co.get_running_loop())
        task = yield from co.spawn(waiter(fut))
        yield from co.sleep(0)
        fut.set_exception(error)
        return (yield from co.join(task))

    caught, where, went_on = co.run(main())
    assert caught is error
    assert where == ["__iter__"]  # raised at Future.__iter__'s yield, inside the waiter
    assert went_on == "went on"


def test_a_task_waiting_on_a_future_that_is_cancelled_sees_the_cancellation():
    def waiter(fut):
        try:
            yield from fut
        except CancelledError:
            return "saw the cancellation"
        return "missed it"

    async def awaiter(fut):
        try:
            await fut
        except co.CancelledError:
            return "saw it too"

    def main():
        fut = Future(co.get_running_loop())
        tasks = [(yield from co.spawn(waiter(fut))), (yield from co.spawn(awaiter(fut)))]
        yield from co.sleep(0)
        fut.cancel()
        results = []
        for task in tasks:
            results.append((yield from co.join(task)))
        return results

    assert co.run(main()) == ["saw the cancellation", "saw it too"]


def test_cancel_throws_at_the_socket_wait_and_withdraws_it():
    client, server = _pair()

    def reader():
        try:
            yield from co.recv(server, 100)
        except CancelledError:
            return "cancelled at recv"

    def main():
        first = yield from co.spawn(reader())
        yield from co.sleep(0.01)
        yield from co.cancel(first)
        assert first.cancelled() is False  # it caught the CancelledError and returned
        # The withdrawn wait neither fires nor blocks a new reader of the same socket.
        second = yield from co.spawn(co.recv(server, 100))
        yield from co.sendall(client, b"data")
        return (yield from co.join(first)), (yield from co.join(second))

    with client, server:
        assert co.run(main()) == ("cancelled at recv", b"data")


def test_cancelling_a_joiner_leaves_the_joined_task_running():
    def slow():
        yield from co.sleep(0.05)
        return "finished anyway"

    def joiner(task):
        yield from co.join(task)

    def main():
        work = yield from co.spawn(slow())
        waiting = yield from co.spawn(joiner(work))
        yield from co.sleep(0.01)
        yield from co.cancel(waiting)
        return waiting.cancelled(), (yield from co.join(work))

    assert co.run(main()) == (True, "finished anyway")


def test_yielding_something_that_is_not_a_future_is_a_type_error_at_the_yield():
    def confused():
        try:
            yield 42
        except TypeError as error:
            return str(error)

    message = co.run(confused())
    assert "must yield a Future" in message and "42" in message


def test_timeout_is_timeout_error_but_an_outside_cancel_stays_a_cancellation():
    def outer_cancelled():
        yield from co.timeout_after(0.01, co.sleep(10))

    def main():
        try:
            yield from co.timeout_after(0.01, co.sleep(10))
        except TimeoutError:
            timed_out = True
        task = yield from co.spawn(co.timeout_after(10, co.sleep(10)))
        yield from co.sleep(0.01)
        yield from co.cancel(task)
        in_time = yield from co.timeout_after(1, co.sleep(0.001))
        return timed_out, task.cancelled(), in_time

    assert co.run(main()) == (True, True, None)


def _count_selector_calls(monkeypatch):
    calls = {"register": 0, "modify": 0, "unregister": 0}
    selector_class = type(selectors.DefaultSelector())
    for name in calls:
        original = getattr(selector_class, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(selector_class, name, counting)
    return calls


@pytest.mark.parametrize("style", ["generators", "coroutines"])
def test_sockets_stay_registered_between_reads(monkeypatch, style):
    calls = _count_selector_calls(monkeypatch)
    client, server = _pair()
    rounds = 200

    def echo():
        while data := (yield from co.recv(server, 100)):
            yield from co.sendall(server, data)

    def ping():
        yield from co.spawn(echo())
        for _ in range(rounds):
            yield from co.sendall(client, b"ping")
            assert (yield from co.recv(client, 100)) == b"ping"
        client.shutdown(socket.SHUT_WR)

    async def aecho():
        while data := await co.recv(server, 100):
            await co.sendall(server, data)

    async def aping():
        await co.spawn(aecho())
        for _ in range(rounds):
            await co.sendall(client, b"ping")
            assert await co.recv(client, 100) == b"ping"
        client.shutdown(socket.SHUT_WR)

    with client, server:
        co.run(ping() if style == "generators" else aping())
    # The wake-up socket, then each socket once: no register/unregister per read.
    assert calls["register"] == 3
    assert calls["modify"] + calls["unregister"] <= 2


def test_a_reused_fd_number_gets_a_fresh_registration():
    def main():
        for _ in range(3):
            client, server = _pair()
            with client, server:
                reader = yield from co.spawn(co.recv(server, 10))
                yield from co.sleep(0.001)  # the reader now waits: server's fd is registered
                yield from co.sendall(client, b"hi")
                assert (yield from co.join(reader)) == b"hi"
            # Closed; the next pair reuses the fd numbers the loop still has on file.
        return "ok"

    assert co.run(main()) == "ok"


def test_a_blocking_socket_is_a_value_error():
    client, server = socket.socketpair()
    with client, server, pytest.raises(ValueError, match="non-blocking"):
        co.run(co.recv(server, 1))


def test_run_inside_a_running_loop_and_calls_outside_run_are_runtime_errors():
    async def nested():
        co.run(co.sleep(0))

    with pytest.raises(RuntimeError, match="running loop"):
        co.run(nested())
    with pytest.raises(RuntimeError, match="inside run"):
        co.now()
    with pytest.raises(RuntimeError, match="inside run"):
        co.run_in_thread(print).send(None)


def test_bad_arguments_are_clear_type_errors():
    def job():
        yield

    with pytest.raises(TypeError, match="forget to call it"):
        co.run(job)

    def main():
        with pytest.raises(TypeError, match="task returned by spawn"):
            yield from co.join("task")
        with pytest.raises(TypeError, match="number of seconds"):
            yield from co.timeout_after("1", job())
        with pytest.raises(TypeError, match="callable"):
            yield from co.run_in_thread(42)

    co.run(main())


def test_an_exception_nobody_retrieves_is_reported(caplog):
    def fails():
        raise RuntimeError("lost failure")
        yield

    def main():
        yield from co.spawn(fails())
        yield from co.sleep(0.01)

    with caplog.at_level(logging.ERROR, logger="loops.futures"):
        co.run(main())
        gc.collect()
    assert "never retrieved" in caplog.text
    assert "lost failure" in caplog.text


def test_a_joined_exception_is_not_reported_again(caplog):
    def fails():
        raise RuntimeError("joined failure")
        yield

    def main():
        task = yield from co.spawn(fails())
        with pytest.raises(RuntimeError):
            yield from co.join(task)

    with caplog.at_level(logging.ERROR, logger="loops.futures"):
        co.run(main())
        gc.collect()
    assert "never retrieved" not in caplog.text


def test_keyboard_interrupt_escapes_run_closes_everything_and_run_works_again():
    before = _open_fds()
    client, server = _pair()

    def bystander():
        try:
            yield from co.recv(server, 10)
        finally:
            events.append("bystander cleaned up")

    def main():
        yield from co.spawn(bystander())
        yield from co.run_in_thread(time.sleep, 0.001)
        yield from co.sleep(0.01)
        raise KeyboardInterrupt

    events = []
    with client, server, pytest.raises(KeyboardInterrupt):
        co.run(main())
    assert events == ["bystander cleaned up"]
    assert _open_fds() == before
    assert co.run(co.timeout_after(1, co.sleep(0))) is None


def test_an_interrupt_between_a_pop_and_its_step_closes_the_tasks_instead_of_deadlocking():
    """A signal's KeyboardInterrupt can land after the loop popped a task's wake-up and before
    the step ran: the wake-up is lost. Shutting down by running the loop again would then wait
    forever for that task; run() must raise the KeyboardInterrupt and close the tasks."""
    events = []

    def waiter(gate):
        try:
            yield from gate
        finally:
            events.append("waiter cleaned up")

    def interrupt(fut):
        raise KeyboardInterrupt  # as a signal would, between two lines of the loop

    def main():
        loop = co.get_running_loop()
        gate = Future(loop)
        task = yield from co.spawn(waiter(gate))
        yield from co.sleep(0)  # the waiter now waits on gate
        gate.set_result(None)  # queues the waiter's wake-up...
        assert loop._ready.pop() == (task, gate)  # ...which the interrupted turn popped
        loop._ready.append((interrupt, None))
        yield from co.sleep(1)

    with pytest.raises(KeyboardInterrupt):
        co.run(main())
    assert events == ["waiter cleaned up"]
    assert co.run(co.timeout_after(1, co.sleep(0))) is None


def test_a_finally_block_that_spawns_while_an_interrupt_closes_the_tasks():
    """Closing the tasks runs their finally blocks, and one may spawn: the spawned coroutine
    is closed too, and the KeyboardInterrupt (not a changed-size error) leaves run()."""
    late = []

    def cleanup():
        yield from co.sleep(0)

    def waiter(gate):
        try:
            yield from gate
        finally:
            late.append(cleanup())
            yield from co.spawn(late[-1])

    def interrupt(fut):
        raise KeyboardInterrupt  # as a signal would, between two lines of the loop

    def main():
        loop = co.get_running_loop()
        gate = Future(loop)
        yield from co.spawn(waiter(gate))
        yield from co.sleep(0)
        loop._ready.append((interrupt, None))
        yield from co.sleep(1)

    with pytest.raises(KeyboardInterrupt):
        co.run(main())
    assert len(late) == 1 and late[0].gi_frame is None  # closed, never left to the collector


def test_run_leaves_no_fd_or_thread_behind():
    threads_before = threading.active_count()
    fds_before = _open_fds()

    def main():
        client, server = _pair()
        with client, server:
            yield from co.spawn(co.recv(server, 10))  # left waiting: run() cancels it
            yield from co.run_in_thread(time.sleep, 0.001)
            yield from co.sleep(0.001)

    co.run(main())
    assert _open_fds() == fds_before
    assert threading.active_count() == threads_before


def test_cancelled_timers_are_compacted():
    def main():
        loop = co.get_running_loop()
        sleepers = []
        for _ in range(1000):
            sleepers.append((yield from co.spawn(co.sleep(100))))
        yield from co.sleep(0)  # they all start and park a timer
        heap_full = len(loop._timers)
        for task in sleepers:
            task.cancel()
        yield from co.sleep(0)  # a turn of the loop compacts the heap
        yield from co.sleep(0)
        return heap_full, len(loop._timers)

    heap_full, heap_after = co.run(main())
    assert heap_full == 1000
    assert heap_after <= 100


def test_an_idle_loop_blocks_instead_of_spinning():
    def main():
        # This thread's CPU, the loop's: a thread another test left in the process is not its.
        cpu, wall = time.thread_time(), time.perf_counter()
        yield from co.sleep(0.3)
        client, server = _pair()
        with client, server:
            reader = yield from co.spawn(co.recv(server, 1))
            yield from co.sleep(0.3)  # a socket waited on, nothing arriving
            reader.cancel()
        return time.thread_time() - cpu, time.perf_counter() - wall

    cpu, wall = co.run(main())
    assert cpu < 0.1 * wall


def test_queue_put_waits_for_room_and_join_for_every_task_done():
    def consumer(queue, seen):
        while True:
            seen.append((yield from queue.get()))
            yield from co.sleep(0)
            queue.task_done()

    def main():
        queue, seen = co.Queue(maxsize=2), []
        worker = yield from co.spawn(consumer(queue, seen))
        for item in range(10):
            yield from queue.put(item)
            assert queue.qsize() <= 2
        yield from queue.join()
        yield from co.cancel(worker)
        with pytest.raises(ValueError, match="task_done"):
            queue.task_done()
        return seen

    assert co.run(main()) == list(range(10))


def test_gather_returns_results_in_order_and_cancels_the_rest_on_failure():
    def value(x, delay):
        yield from co.sleep(delay)
        return x

    def fails():
        yield from co.sleep(0.01)
        raise ValueError("first failure")

    def main():
        results = yield from co.gather(value("a", 0.02), value("b", 0.0), value("c", 0.01))
        slow = yield from co.spawn(value("slow", 10))
        with pytest.raises(ValueError, match="first failure"):
            yield from co.gather(slow, fails())
        yield from co.sleep(0)
        return results, slow.cancelled()

    assert co.run(main()) == (["a", "b", "c"], True)


def test_run_cancels_tasks_left_running_even_ones_spawned_during_clean_up():
    spawned = []

    def respawner():
        try:
            yield from co.sleep(100)
        finally:
            spawned.append((yield from co.spawn(co.sleep(100))))  # while run() shuts down

    def main():
        yield from co.spawn(respawner())
        yield from co.sleep(0.001)

    co.run(main())  # returns at once: the 100 s sleeper is cancelled, not waited for
    assert [task.cancelled() for task in spawned] == [True]


def test_a_nan_delay_is_a_value_error():
    with pytest.raises(ValueError, match="NaN"):
        co.run(co.sleep(float("nan")))


def test_gather_takes_plain_futures_too():
    def main():
        fut = Future(co.get_running_loop())
        waiting = yield from co.spawn(co.gather(fut, co.sleep(0)))
        yield from co.sleep(0)
        fut.set_result("from a future")
        return (yield from co.join(waiting))

    assert co.run(main()) == ["from a future", None]
