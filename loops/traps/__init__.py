"""traps: an async/await kernel where every blocking operation is a trap (curio's design)."""

from loops.contract import EVERY_CAPABILITY, Variant
from loops.traps import api

VARIANT = Variant(
    name="traps",
    summary="async/await kernel: coroutines yield trap requests to a kernel that dispatches them",
    lineage=(
        "curio's kernel and traps (David Beazley), the 'tale of event loops' toy kernel "
        "grown up: one @types.coroutine yield point, a trap table, tasks resumed by "
        "send/throw over a ready deque, a lazy timer heap and kept epoll registrations"
    ),
    capabilities=EVERY_CAPABILITY,
    coroutines=api,
    io_model="readiness",
    waits_in="select.epoll",
    wake_up="socketpair",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Loop._interrupt` undoes the wait (`_unwait`), then throws `CancelledError` in at "
        "the task's `_trap`"
    ),
    reporting="epoll-level",
    ghost_fds="rebuilds (`Poller.drop_ghosts`)",
    socket_call_first=(
        "tries (waits first on a socket whose last try found nothing, trying first again one "
        "`recv` in `TRY_FIRST_EVERY`, `_drained`; yields a turn after `FAST_CALLS_PER_TURN` "
        "calls that did not wait)"
    ),
)
