"""scopes: structured concurrency on the traps kernel: nurseries, level-triggered cancel scopes."""

from loops.contract import EVERY_CAPABILITY, Variant
from loops.scopes import api

VARIANT = Variant(
    name="scopes",
    summary="traps' kernel with cancel scopes: nurseries, deadlines, level-triggered cancellation",
    lineage=(
        "trio's cancel scopes and nurseries (Nathaniel J. Smith, 'Notes on structured "
        "concurrency', 2018) built on the traps kernel: a cancellation belongs to a block of "
        "code, every checkpoint inside a cancelled scope raises until it is left, shields, and "
        "a nursery's children cannot outlive its block"
    ),
    capabilities=EVERY_CAPABILITY,
    coroutines=api,
    io_model="readiness",
    waits_in="select.epoll",
    wake_up="socketpair",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Loop._cancel` cancels a `CancelScope`: each task waiting inside is interrupted "
        "(`_unwait`), and every checkpoint inside raises `CancelledError` until the scope is left"
    ),
    reporting="epoll-level",
    ghost_fds="rebuilds (`Poller.drop_ghosts`)",
    socket_call_first=(
        "tries (waits first on a socket whose last try found nothing, trying first again one "
        "`recv` in `TRY_FIRST_EVERY`, `_drained`; yields a turn after `FAST_CALLS_PER_TURN` "
        "calls that did not wait)"
    ),
)
