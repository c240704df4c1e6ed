"""Reference: curio, David Beazley's trap-based coroutine kernel (coroutines style).

Thin adapter: curio's own run, spawn, sleep, Queue and run_in_thread; join re-raises the task's
own exception (curio wraps it in TaskError); timeouts become the builtin TimeoutError; socket
calls use curio's read/write-wait traps, as curio's socket wrapper does.
"""

import time
from types import SimpleNamespace

from loops._sockets import socket_calls
from loops.contract import EVERY_CAPABILITY, Variant, requires

# curio 1.6, the newest on the package registry, reads multiprocessing.connection.CHALLENGE,
# which Python 3.12 removed: on 3.12+ this folder is an unavailable variant, with that reason.
with requires("curio"):
    import curio
    from curio.traps import _read_wait, _write_wait


class Queue(curio.Queue):
    """curio's Queue with a plain task_done(), as the contract (and asyncio) has it.

    curio's own task_done is a coroutine because waking joiners is a kernel trap; curio's
    UniversalEvent can be set by a plain call, so joiners wait on it instead.
    """

    def __init__(self, maxsize=0):
        super().__init__(maxsize)
        self._drained = curio.UniversalEvent()

    def task_done(self):
        if self._task_count <= 0:
            raise ValueError("task_done() called too many times")
        self._task_count -= 1
        if self._task_count == 0:
            self._drained.set()

    async def join(self):
        while self._task_count > 0:
            self._drained.clear()
            await self._drained.wait()


async def spawn(coro):
    return await curio.spawn(coro)


async def join(task):
    await task.wait()
    if task.exception is not None:
        raise task.exception
    return task.result


async def cancel(task):
    await task.cancel()


async def timeout_after(seconds, coro):
    try:
        return await curio.timeout_after(seconds, coro)
    except curio.TaskTimeout as timeout:
        raise TimeoutError(f"timed out after {seconds} s") from timeout


coroutines = SimpleNamespace(
    run=curio.run,
    now=time.monotonic,  # curio's kernel clock is time.monotonic
    CancelledError=curio.CancelledError,
    sleep=curio.sleep,
    spawn=spawn,
    join=join,
    cancel=cancel,
    timeout_after=timeout_after,
    run_in_thread=curio.run_in_thread,
    Queue=Queue,
    **vars(socket_calls(_read_wait, _write_wait)),
)

VARIANT = Variant(
    name="curio",
    summary="curio: a coroutine kernel where every blocking call is a trap (traps follows it)",
    lineage="David Beazley's curio: generator traps yielded to a kernel, tasks, cancellation",
    capabilities=EVERY_CAPABILITY,
    coroutines=coroutines,
    reference=True,
    io_model="readiness",
    waits_in="selectors.DefaultSelector (`curio/kernel.py`: `Kernel.__init__`)",
    wake_up="socketpair (`curio/kernel.py`: `init_loopback`)",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`TaskCancelled` delivered at the task's blocking trap, or held in `cancel_pending` "
        "until it makes one (`curio/kernel.py`: `trap_cancel_task`)"
    ),
    reporting="epoll-level (`curio/kernel.py`: `DefaultSelector`)",
    ghost_fds="spins",
    socket_call_first="tries (the adapter's calls, `loops/_sockets.py`: `recv`, `wait_readable`)",
)
