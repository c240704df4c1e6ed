"""handlers: the Python Cookbook's event-driven I/O (recipe 11.12), speaking callbacks.

Handler objects are asked every iteration whether they want to receive or send, and a plain
select() waits for the ones that do. See loop.py; README.md says what it teaches.
"""

from loops.contract import EVERY_CAPABILITY, TASK_CAPABILITIES, Variant

from . import loop

VARIANT = Variant(
    name="handlers",
    summary="Cookbook handler objects asked every iteration, plain select() (1024-fd ceiling)",
    lineage="Beazley & Jones, Python Cookbook 3rd ed., recipe 11.12 (EventHandler, ThreadPool)",
    # The callbacks style has no tasks, so the task properties have nothing to play.
    capabilities=EVERY_CAPABILITY - TASK_CAPABILITIES,
    callbacks=loop.Loop,
    io_model="readiness",
    waits_in="select.select",
    wake_up="socketpair",
    thread_entries=("call_soon_threadsafe", "run_in_thread"),
    cancellation="no tasks: `Handle.cancel` and `Loop.remove_reader` keep a callback from running",
    reporting="select",
    ghost_fds="drops (`Loop._forget_closed`)",
    socket_call_first="none",
)
