"""Reference: the standard library's asyncio on its default selector loop (epoll here)."""

import asyncio

from loops._aio import callbacks_factory, coroutines_namespace
from loops.contract import EVERY_CAPABILITY, Variant

_Loop = callbacks_factory(asyncio.SelectorEventLoop)

VARIANT = Variant(
    name="asyncio",
    summary="CPython's asyncio, default selector loop (the baseline of sleep, crawler, micro)",
    lineage="PEP 3156 (Tulip): Handle/TimerHandle, _run_once, Future and Task over selectors",
    # asyncio's heap orders timers by deadline alone: equal deadlines run in no set order.
    capabilities=EVERY_CAPABILITY - {"timer-fifo"},
    callbacks=_Loop,
    coroutines=coroutines_namespace(_Loop),
    asyncio_loop=asyncio.SelectorEventLoop,
    reference=True,
    io_model="readiness",
    waits_in="selectors.DefaultSelector (`asyncio/selector_events.py`: `BaseSelectorEventLoop`)",
    wake_up="socketpair (`asyncio/selector_events.py`: `_make_self_pipe`, `_write_to_self`)",
    thread_entries=("call_soon_threadsafe", "run_in_thread"),
    cancellation=(
        "`Task.cancel` cancels the future the task awaits, or sets `_must_cancel` and throws "
        "at the next resume (`asyncio/tasks.py`)"
    ),
    reporting="epoll-level (`selectors.py`: `EpollSelector`)",
    ghost_fds="spins",
    socket_call_first="tries (`asyncio/selector_events.py`: `sock_recv`)",
)
