"""Reference: uvloop, asyncio's API implemented in Cython over libuv."""

import uvloop

from loops._aio import callbacks_factory, coroutines_namespace
from loops.contract import Variant

_Loop = callbacks_factory(uvloop.Loop)

VARIANT = Variant(
    name="uvloop",
    summary="uvloop: asyncio's API in Cython over libuv (the fast production anchor)",
    lineage="MagicStack's uvloop: libuv's event loop behind asyncio's AbstractEventLoop",
    capabilities=frozenset(
        {
            "core",
            "timer-fifo",
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
