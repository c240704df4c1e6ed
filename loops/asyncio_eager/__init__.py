"""Reference: asyncio with its eager task factory (Python 3.12+), a production setting.

``asyncio.eager_task_factory`` starts a new task's coroutine inside ``create_task`` itself, up
to its first suspension, instead of scheduling its first step on the ready queue: a task that
finishes without suspending never touches the loop at all. That changes who runs next (the
spawned task before its spawner goes on, as the traps kernel's spawn does), which is why it is
a row of its own beside plain asyncio. Only the coroutines style: callbacks know no tasks
(and ``asyncio_loop``, the loop the http workload's uvicorn runs on).
"""

import asyncio

from loops._aio import callbacks_factory, coroutines_namespace
from loops.contract import EVERY_CAPABILITY, Unavailable, Variant

if not hasattr(asyncio, "eager_task_factory"):
    raise Unavailable("asyncio.eager_task_factory is new in Python 3.12")


def _eager_loop() -> asyncio.AbstractEventLoop:
    loop = callbacks_factory(asyncio.SelectorEventLoop)()
    loop.set_task_factory(asyncio.eager_task_factory)
    return loop


VARIANT = Variant(
    name="asyncio_eager",
    summary="CPython's asyncio with its eager task factory (3.12+): a new task runs at once",
    lineage="asyncio's selector loop; eager tasks from CPython 3.12 (gh-97696), after Instagram",
    # asyncio's heap orders timers by deadline alone: equal deadlines run in no set order.
    capabilities=EVERY_CAPABILITY - {"timer-fifo"},
    coroutines=coroutines_namespace(_eager_loop),
    asyncio_loop=_eager_loop,  # asyncio's loop with eager tasks, as uvicorn would run it
    reference=True,
    io_model="readiness",
    waits_in="selectors.DefaultSelector (`asyncio/selector_events.py`: `BaseSelectorEventLoop`)",
    wake_up="socketpair (`asyncio/selector_events.py`: `_make_self_pipe`, `_write_to_self`)",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Task.cancel` cancels the future the task awaits, or sets `_must_cancel` and throws "
        "at the next resume (`asyncio/tasks.py`)"
    ),
    reporting="epoll-level (`selectors.py`: `EpollSelector`)",
    ghost_fds="spins",
    socket_call_first="tries (`asyncio/selector_events.py`: `sock_recv`)",
)
