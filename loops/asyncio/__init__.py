"""Reference: the standard library's asyncio on its default selector loop (epoll here)."""

import asyncio

from loops._aio import callbacks_factory, coroutines_namespace
from loops.contract import Variant

_Loop = callbacks_factory(asyncio.SelectorEventLoop)

VARIANT = Variant(
    name="asyncio",
    summary="CPython's asyncio, default selector event loop (the baseline every ratio is against)",
    lineage="PEP 3156 (Tulip): Handle/TimerHandle, _run_once, Future and Task over selectors",
    capabilities=frozenset(
        {
            "core",
            # Not "timer-fifo": asyncio documents that callbacks scheduled for exactly the same
            # time run in undefined order (its heap compares deadlines only), and they do.
            "timer-compaction",
            "fairness",
            "exceptions",
            "interrupts",
            "tasks-scale",
            "timeouts",
            "queue",
            "io",
            "udp",
            "threads",
            "hygiene",
        }
    ),
    callbacks=_Loop,
    coroutines=coroutines_namespace(_Loop),
    reference=True,
)
