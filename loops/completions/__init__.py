"""completions: a proactor on io_uring, standard library only (ctypes + mmap).

Tasks await *operations* (accept, connect, recvmsg/sendmsg, a recv that a recv(2) tried at the
task's next turn found nothing for, and what a send(2) tried first did not send); the loop
writes one SQE per operation into the submission ring, hands them all to Linux with one
io_uring_enter per turn, and resumes each task from its completion (CQE). The only home-made
loop of the lab that is not readiness-based. Unavailable where io_uring cannot be set up (not
Linux x86-64, ENOSYS, EPERM under a seccomp filter, kernel.io_uring_disabled): the probe below
sets up a tiny ring and closes it at once.
"""

from loops.completions import uring
from loops.contract import EVERY_CAPABILITY, Unavailable, Variant

try:
    uring.probe()
except OSError as error:
    raise Unavailable(f"io_uring cannot be set up here: {uring.why(error)}") from None

from loops.completions import api  # only once io_uring is known to work

VARIANT = Variant(
    name="completions",
    summary="proactor on io_uring (ctypes + mmap): tasks await operations, resumed by completions",
    lineage=(
        "the proactor pattern (Schmidt et al., POSA2; Windows IOCP behind asyncio's "
        "ProactorEventLoop), on Linux io_uring (Jens Axboe, 2019) driven the way liburing "
        "does, with the traps kernel's trap table: one SQE per awaited operation, one "
        "io_uring_enter per turn, tasks resumed from CQEs by user_data"
    ),
    capabilities=EVERY_CAPABILITY,
    coroutines=api,
    io_model="completion",
    waits_in="io_uring_enter",
    wake_up="socketpair",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Loop._interrupt` undoes a wait; an operation in flight is asked back by "
        "`Proactor.interrupt` with `OP_ASYNC_CANCEL` and the error waits in `Task.pending` "
        "until its CQE arrives"
    ),
    reporting="io_uring",
    ghost_fds="none",
    socket_call_first=(
        "tries (`recv`: at once, skipped after tries that found nothing, `Loop.recv_now_skips`, "
        "and yields a turn after `FAST_CALLS_PER_TURN` that did not wait; then a `sleep(0)` and "
        "`sock.recv`, skipped for a RECV after tries that found nothing, `SKIPS_MAX`; `sendall` "
        "tries `sock.send`; the other calls submit at once)"
    ),
)
