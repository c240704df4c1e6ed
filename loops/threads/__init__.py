"""Reference: a thread per task, the standard library's threading (blocking style).

The design every event loop exists to replace, played on the contract: ``spawn`` starts an OS
thread, a socket call is the plain blocking call (the kernel parks the thread and schedules
another), and waits on other tasks (join, sleep, the Queue) are ``threading.Condition`` waits.
The README says what a thread cannot be asked (cancellation inside a socket call) and what
the adapter does instead.
"""

from loops.contract import EVERY_CAPABILITY, Variant
from loops.threads import api

VARIANT = Variant(
    name="threads",
    summary="a thread per task: blocking calls, the kernel schedules, the GIL (step 0's server)",
    lineage=(
        "thread-per-connection servers (socketserver.ThreadingMixIn); interruptible socket "
        "calls after Java's InterruptibleChannel, which closes the channel of an interrupted "
        "thread"
    ),
    # Equal deadlines: each sleeper's wake-up is the kernel's to schedule, in no promised order.
    capabilities=EVERY_CAPABILITY - {"timer-fifo"},
    blocking=api,
    reference=True,
    io_model="blocking",
    waits_in="each task's own call: the socket call, or `threading.py`: `Condition.wait`",
    wake_up="none: a worker thread notifies a `threading.py`: `Condition`",
    thread_entries=("run_in_thread",),
    cancellation=(
        "a flag the task's next wait raises as `CancelledError` (`loops/threads/api.py`); a task "
        "inside a socket call "
        "has that direction of its socket shut down (`socket.py`: `shutdown`) to return"
    ),
    reporting="blocking (each task's thread in its own call, `loops/threads/api.py`: `_call`)",
    ghost_fds="none (a thread in a socket call holds the file, `loops/threads/api.py`: `_call`)",
    socket_call_first="blocks (`loops/threads/api.py`: `_call`)",
)
