"""greenlets: a hub greenlet running a readiness loop, a greenlet per task (gevent's design).

Code is written as plain blocking calls; a call that would block switches to the hub, which
switches back when the socket is ready or the timer is due. No ``await`` marks the switches.
"""

from loops.contract import EVERY_CAPABILITY, Variant, requires

with requires("greenlet"):
    import greenlet  # noqa: F401  (the design's library: the hub and tasks are its greenlets)

from loops.greenlets import api

VARIANT = Variant(
    name="greenlets",
    summary="a hub greenlet with a readiness loop; tasks are greenlets switched implicitly",
    lineage=(
        "gevent's and eventlet's hubs (greenlet, from Stackless Python): stackful coroutines "
        "switched where a call would block; the traps kernel's wait records and undo"
    ),
    capabilities=EVERY_CAPABILITY,
    blocking=api,
    io_model="readiness",
    waits_in="select.epoll",
    wake_up="socketpair",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Hub.interrupt` undoes the wait (`unwait`), then the task raises `CancelledError` "
        "where it resumes, in `Hub.suspend`"
    ),
    reporting="epoll-level",
    ghost_fds="rebuilds (`Hub.drop_ghosts`)",
    socket_call_first=(
        "tries (`Hub.wait_io` only on `BlockingIOError`; after a try that found nothing, the "
        "next `recv` waits first, once: `_drained`)"
    ),
)
