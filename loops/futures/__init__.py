"""futures: generator tasks driven through Futures (the "500 Lines or Less" crawler's loop).

A Task steps a generator with send/throw; the generator yields Futures (via ``yield from``
or ``await``), and a small reactor completes those futures from timers, socket readiness and
worker threads. Both the generators and the coroutines styles are the same module,
:mod:`loops.futures.api`, because the Future is awaitable and every call is a
``types.coroutine`` generator. Read README.md in this folder first.
"""

from loops.contract import EVERY_CAPABILITY, Variant
from loops.futures import api

VARIANT = Variant(
    name="futures",
    summary="generator tasks: Future, Task.step (send/throw), yield from and await, small reactor",
    lineage=(
        "the 500 Lines or Less crawler (Davis & van Rossum): Future whose __iter__ yields "
        "itself, Task.step, yield from; grown up along asyncio's futures.py/tasks.py"
    ),
    capabilities=EVERY_CAPABILITY,
    generators=api,
    coroutines=api,
    io_model="readiness",
    waits_in="selectors.DefaultSelector",
    wake_up="socketpair",
    thread_entries=("call_soon_threadsafe", "run_in_thread"),
    cancellation=(
        "`Task.cancel` cancels the awaited future (`Task._withdraw_wait`), then `Task.step` "
        "throws `CancelledError` in at the task's `yield from`"
    ),
    reporting="epoll-level",
    ghost_fds="rebuilds (`Loop._drop_ghost`)",
    socket_call_first=(
        "tries (waits first on a socket whose last try found nothing, trying first again one "
        "`recv` in `TRY_FIRST_EVERY`: `_drained`)"
    ),
)
