"""Home-made: the round-robin tick scheduler (coroutines style). Read scheduler.py first."""

from loops.contract import EVERY_CAPABILITY, Variant
from loops.roundrobin import api

VARIANT = Variant(
    name="roundrobin",
    summary="round-robin ticks: poll timers and I/O, then resume each runnable task exactly once",
    lineage=(
        "Andre Caron's 'A tale of event loops' (curio's core, distilled): coroutines yield "
        "plain request tuples through @types.coroutine helpers; an outer loop polls timers "
        "and I/O, an inner loop resumes a snapshot of the runnable tasks once each"
    ),
    capabilities=EVERY_CAPABILITY,
    coroutines=api,
    io_model="readiness",
    waits_in="select.epoll",
    wake_up="socketpair",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Loop._deliver_cancel` undoes the wait by its request (`Task.waiting`), then throws "
        "`CancelledError` in where the task yielded"
    ),
    reporting="epoll-level",
    ghost_fds="rebuilds (`Loop._drop_ghost`)",
    socket_call_first="checkpoint (a send in the turn its `recv` began skips it: `_reply_in_turn`)",
)
