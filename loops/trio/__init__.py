"""Reference: trio, structured concurrency (coroutines style).

trio has no task handles on purpose: every task lives in a nursery. The contract's
spawn/join/cancel are built the way a trio user would build them: ``run`` opens one root
nursery; ``spawn`` starts the coroutine there inside its own ``CancelScope``; ``join`` waits
for the task's ``Event``; ``cancel`` cancels the scope and waits. Tasks still running when the
main coroutine returns are cancelled, as asyncio.run and curio do. Socket calls use trio's
readiness waits; the Queue is a memory channel plus unfinished-work accounting.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from loops._sockets import socket_calls
from loops.contract import EVERY_CAPABILITY, Variant, requires

with requires("trio"):
    import trio

_root_nursery: trio.lowlevel.RunVar = trio.lowlevel.RunVar("lab_root_nursery")


class TaskCancelled(Exception):
    """Raised by join() on a task that ended cancelled.

    trio.Cancelled belongs to the cancel scope that raised it and cannot be re-raised in
    another task, so the joiner gets this instead.
    """


class Task:
    """What spawn returns: the task's cancel scope, its outcome, and an event when it ends."""

    __slots__ = ("_done", "_exception", "_result", "_scope", "cancelled")

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._done = trio.Event()
        self._result = None
        self._exception: BaseException | None = None
        self.cancelled = False

    async def _run(self, coro) -> None:
        with self._scope:
            try:
                self._result = await coro
            except Exception as error:  # the joiner's to see; trio.Cancelled is not an Exception
                self._exception = error
        self.cancelled = self._scope.cancelled_caught
        self._done.set()


def run(coro):
    # main opens the root nursery protected from KeyboardInterrupt, as trio's own code is: a
    # Ctrl-C between the nursery's __aenter__ and the with block's setup would leave it never
    # exited ("Nursery stack corrupted"); trio delivers such a signal at the next checkpoint.
    # The program itself runs unprotected (user_code), so Ctrl-C reaches it at once as before.
    @trio.lowlevel.enable_ki_protection
    async def main():
        async with trio.open_nursery() as nursery:
            _root_nursery.set(nursery)
            try:
                return await user_code()
            finally:
                nursery.cancel_scope.cancel()

    @trio.lowlevel.disable_ki_protection
    async def user_code():
        return await coro

    outside = not trio.lowlevel.in_trio_run()
    try:
        return trio.run(main)
    except BaseExceptionGroup as group:
        # The main coroutine's own exception, not trio's group around it.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        if outside and trio.lowlevel.in_trio_run():
            _forget_interrupted_run()
        # trio.run takes a function, so a run it refuses (inside a running one) never starts
        # main and nobody awaits coro: close it, or it warns "never awaited". A no-op once run.
        if hasattr(coro, "close"):
            coro.close()


def _forget_interrupted_run() -> None:
    """Finish trio's teardown of a run a Ctrl-C cut short.

    trio 0.35.0 ends a run (``trio/_core/_run.py``, ``unrolled_run``'s ``finally``) by putting
    back the default SIGINT handler (``runner.close``) and only then forgetting the run
    (``GLOBAL_RUN_CONTEXT.__dict__.clear()``): a Ctrl-C landing between the two leaves the
    thread marked as inside a run, and every later ``trio.run`` refuses with "Attempted to call
    run() from inside a run()" (``reports/findings-ctrl-c.md``). The run is over here, so the
    adapter forgets it as trio would have, through trio's private run context: no public call
    does it.
    """
    trio._core._run.GLOBAL_RUN_CONTEXT.__dict__.clear()


async def spawn(coro) -> Task:
    task = Task()
    _root_nursery.get().start_soon(task._run, coro)
    return task


async def join(task: Task):
    await task._done.wait()
    if task._exception is not None:
        raise task._exception
    if task.cancelled:
        raise TaskCancelled("the joined task was cancelled")
    return task._result


async def cancel(task: Task) -> None:
    task._scope.cancel()
    await task._done.wait()


async def timeout_after(seconds: float, coro):
    with trio.move_on_after(seconds) as scope:
        return await coro
    if scope.cancelled_caught:
        raise TimeoutError(f"timed out after {seconds} s")


class Queue:
    """asyncio.Queue's semantics (put/get/task_done/join) over an unbounded memory channel."""

    def __init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel(math.inf)
        self._unfinished = 0
        self._all_done = trio.Event()
        self._all_done.set()

    async def put(self, item) -> None:
        if self._unfinished == 0:
            self._all_done = trio.Event()  # trio events cannot be cleared; make a new one
        self._unfinished += 1
        await self._send.send(item)

    async def get(self):
        return await self._receive.receive()

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if self._unfinished == 0:
            self._all_done.set()

    async def join(self) -> None:
        await self._all_done.wait()


async def run_in_thread(fn, *args):
    return await trio.to_thread.run_sync(fn, *args)


coroutines = SimpleNamespace(
    run=run,
    now=trio.current_time,
    CancelledError=trio.Cancelled,
    sleep=trio.sleep,
    spawn=spawn,
    join=join,
    cancel=cancel,
    timeout_after=timeout_after,
    run_in_thread=run_in_thread,
    Queue=Queue,
    # trio's own structured concurrency, beside the contract (the suite's nurseries style)
    open_nursery=trio.open_nursery,
    CancelScope=trio.CancelScope,
    move_on_after=trio.move_on_after,
    **vars(socket_calls(trio.lowlevel.wait_readable, trio.lowlevel.wait_writable)),
)

VARIANT = Variant(
    name="trio",
    summary="trio: structured concurrency with nurseries and cancel scopes",
    lineage="Nathaniel J. Smith's trio: nurseries, cancel scopes, checkpoints, epoll readiness",
    capabilities=EVERY_CAPABILITY,
    coroutines=coroutines,
    reference=True,
    io_model="readiness",
    waits_in="select.epoll (`trio/_core/_io_epoll.py`: `EpollIOManager`)",
    wake_up="socketpair (`trio/_core/_wakeup_socketpair.py`: `WakeupSocketpair`)",
    thread_entries=("run_in_thread",),
    cancellation=(
        "a cancelled `CancelScope` makes every checkpoint inside it raise `Cancelled` "
        "(`trio/_core/_run.py`)"
    ),
    reporting="epoll-oneshot (`trio/_core/_io_epoll.py`: `EPOLLONESHOT`)",
    ghost_fds="silenced (`trio/_core/_io_epoll.py`: `EPOLLONESHOT`)",
    socket_call_first="tries (the adapter's calls, `loops/_sockets.py`: `recv`, `wait_readable`)",
)
