"""The callback-only reactor: ready queue, timer heap, selector readiness callbacks.

Read ``reactor.py`` first (``Loop._run_once`` is the whole loop), then ``handles.py``.
``dropin.py`` (and the modules it names) makes the same reactor asyncio's event loop
(``VARIANT.asyncio_loop``; ``uvicorn --loop loops.callbacks.dropin:new_event_loop``).
"""

from loops.callbacks.reactor import Loop
from loops.contract import EVERY_CAPABILITY, TASK_CAPABILITIES, Variant


def new_event_loop():
    """The reactor as asyncio's event loop; dropin.py (and asyncio) imported only when asked,
    so a program on the bare reactor, such as the callbacks echo server, never loads them."""
    from loops.callbacks import dropin

    return dropin.new_event_loop()


VARIANT = Variant(
    name="callbacks",
    summary="callback-only reactor: ready queue, timer heap, selector readiness callbacks",
    lineage=(
        "asyncio's core in miniature (PEP 3156: Handle, TimerHandle, _run_once in three "
        "stages) without futures or tasks; the first fetcher of the 500 Lines crawler"
    ),
    # The callbacks style has no tasks, so the task properties have nothing to play.
    capabilities=EVERY_CAPABILITY - TASK_CAPABILITIES,
    callbacks=Loop,
    asyncio_loop=new_event_loop,  # the same reactor as asyncio's event loop (dropin.py)
    io_model="readiness",
    waits_in="select.epoll",
    wake_up="socketpair",
    thread_entries=("call_soon_threadsafe", "run_in_thread"),
    cancellation="no tasks: `Handle.cancel` drops a callback; `Readiness.unwatch` ends a wait",
    reporting="epoll-level",
    ghost_fds="rebuilds (`Readiness.drop_ghosts`)",
    socket_call_first="none (the drop-in's `sock_recv` and its kin try first: `SocketCalls._io`)",
)
